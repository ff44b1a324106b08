"""Quotes no text can close.

Every region of text the library did not write (a tool's output, a summary a model wrote, the
user's request, a transcript) is quoted between an opening and a closing line that carry a
boundary token (``<summary-3f9a2c17d0e4>`` ... ``</summary-3f9a2c17d0e4>``), and the token
is chosen so that it occurs in nothing the message quotes (``boundary``): the quoted text
cannot hold the closer, nor a header of ours (those carry the token too), whatever its case,
spacing, invisible characters or look-alike brackets; there is no list of look-alikes to
keep. Nothing inside a quote is rewritten, so ``unquote`` gives back exactly what went in.

The token is a hash of what the message quotes: the same content gives the same bytes (a
resumed session and the provider's prompt cache rely on it), and a text cannot be written to
hold a disguised copy of its own token without knowing the hash of itself first.

Values a tool supplies that sit among our words outside any quote (a URL, an id, a tool's
name) are made unable to leave their line or bracket instead: ``inert``, ``name_of``,
``one_line``.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any

BOUNDARY_CHARS = 12
"""Hex digits of a boundary token (48 bits): longer only when a shorter one occurs."""
_NOT_TOKEN = re.compile("[^0-9a-z]")


def _skeleton(text: str) -> str:
    # What a reader could take for token characters: compatibility forms folded (fullwidth,
    # mathematical letters), case folded, everything else dropped (spaces, invisible
    # characters, punctuation), so a token spread out or disguised that way still counts.
    return _NOT_TOKEN.sub("", unicodedata.normalize("NFKC", text).casefold())


def boundary(*quoted: str, length: int = BOUNDARY_CHARS) -> str:
    """The boundary token of a message quoting ``quoted``: hex digits of a hash of them that
    occur in none of them (not even spread out, in another case or in fullwidth forms: see
    ``_skeleton``); if the first candidate does, the hash is taken again with a counter, one
    digit longer each time, so there always is one. Deterministic: the same texts, the same
    token."""
    data = "\0".join(quoted).encode("utf-8", "surrogatepass")
    skeleton = "\0".join(_skeleton(text) for text in quoted)
    attempt = 0
    while True:
        size = length + attempt
        token = hashlib.shake_256(b"%d\0%s" % (attempt, data)).hexdigest((size + 1) // 2)[:size]
        if token not in skeleton:
            return token
        attempt += 1


def quote(tag: str, token: str, content: str) -> str:
    """``content`` as it is, between the lines ``<tag-token>`` and ``</tag-token>``."""
    return f"<{tag}-{token}>\n{content}\n</{tag}-{token}>"


def unquote(text: str, tag: str, token: str) -> list[str]:
    """Every region of ``text`` quoted by ``quote(tag, token, ...)``, as it went in: the
    parse back, by the real delimiters (a region ends at the first closer with its token,
    which its content cannot hold)."""
    opener, closer = f"<{tag}-{token}>\n", f"\n</{tag}-{token}>"
    found: list[str] = []
    at = text.find(opener)
    while at >= 0:
        end = text.index(closer, at + len(opener))
        found.append(text[at + len(opener) : end])
        at = text.find(opener, end + len(closer))
    return found


_OPENER = "<{tag}-([0-9a-f]+)>\n"


def opening(text: str, tag: str) -> str | None:
    """The token of the first ``tag`` quote in ``text``: the real one when all that comes
    before it is ours (a message of this module, read from its start)."""
    found = re.search(_OPENER.format(tag=re.escape(tag)), text)
    return found[1] if found else None


def inert(value: Any, limit: int = 200) -> str:
    """A value a tool supplied, as text that cannot leave the line it is put on: a JSON
    string (no newline, no control or non-ASCII character: fullwidth look-alikes escaped),
    with ``<`` and ``>`` escaped too, clipped to ``limit`` characters before quoting."""
    text = str(value)
    if len(text) > limit:
        text = text[:limit] + "..."
    return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e")


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,80}")


def name_of(value: Any) -> str:
    """A tool's name or a call's id as written among our words: as it is when it is a plain
    identifier, else ``inert`` (so it cannot end the line or the bracket it is in)."""
    text = str(value)
    return text if _PLAIN_NAME.fullmatch(text) else inert(text, 80)


def one_line(text: str) -> str:
    """``text`` on one line: every line break (as ``str.splitlines`` knows them) a space."""
    return " ".join(text.splitlines())


__all__ = [
    "BOUNDARY_CHARS",
    "boundary",
    "inert",
    "name_of",
    "one_line",
    "opening",
    "quote",
    "unquote",
]
