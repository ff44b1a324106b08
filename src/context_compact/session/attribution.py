"""Summaries checked against the log: what a summary attributes to the user must be in a
user message.

A summary line *attributes to the user* when it says so in words (``the user asked``,
``user:``, ``requested by the user``, ``the user's constraint``: ``ATTRIBUTED``). Such a line
is checked against the user messages the log holds in memory (every one a summary can
cover: the folded, the pinned and those it replaces; earlier ones left memory with the
summary that covered them, whose own lines were checked then and are trusted when carried
over):

- **A quote** (``"..."`` or ``“...”``) must be in one user message, after whitespace runs
  become one space and case is folded; an ellipsis inside it (``…``, ``...``) marks an
  elision: each piece must be in that message, in any order. Quotes are the user's words
  by claim, so only the user's own text supports them.
- **A paraphrase** (no quote on the line): at least half the content words of what the line
  says the user asked (the clause after the attribution; before it, for ``by the user``)
  must be in one user message or in the assistant's words that message answered (a "yes" to
  a proposal is the proposal's words). Words are compared by a crude stem (plural and
  ``-ing``/``-ed`` endings off, first five letters), so a rewording that keeps the nouns and
  verbs passes; a request the user never made brings words no user message holds. A clause
  with no content word (``the user agreed``) is not judged.

A line that fails is *marked* (``markers.UNVERIFIED_USER`` after its bullet), never dropped
and never left as if the user said it. Lines already marked are left as they are (a rolled
summary keeps its marks; ``check`` is idempotent). The marked text is what the summary
message carries and the journal records, so a resume shows the same bytes.

Pure functions of their arguments: no model call, no clock.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..markers import UNVERIFIED_USER
from ..messages import Message, block_type, blocks, is_request
from ..summary.prompts import ours

ATTRIBUTED = re.compile(
    r"(?<![\w-])user(?:'s)?(?![\w-])\s*(?:[:(),-]\s*)?"
    r"(?:(?:has|had|also|then|later|first|originally|explicitly|specifically|clearly|"
    r"repeatedly|just|did|would|now)\s+)*"
    r"(?:said|says|asked|asks|asking|requested|requests|request|wanted|wants|want|"
    r"stated|states|wrote|writes|specified|specifies|insisted|insists|instructed|"
    r"instructs|instruction|instructions|told|tells|prefers|preferred|preference|"
    r"required|requires|requirement|requirements|demanded|demands|like|prefer|needs|"
    r"needed|expects|expected|mentioned|noted|confirmed|approved|agreed|reported|"
    r"constraint|constraints|correction|corrections|words|quote|quoted|goal)\b"
    r"|(?<![\w-])user\s*:"
    r"|\((?:the\s+)?user\)"
    r"|\b(?:by|from|per|as)\s+the\s+user(?![\w-])",
    re.IGNORECASE,
)
_QUOTE = re.compile(r'"([^"\n]+)"|“([^”\n]+)”')
_ELISION = re.compile(r"\s*(?:…|\.\.\.|\[\.\.\.\]|\[…\])\s*")
_PUNCT = " \t.,;:!?'\"()[]{}"
_WORD = re.compile(r"[a-z0-9][a-z0-9_./-]*")
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s|\s[-–—]\s")
_BULLET = re.compile(r"\s*(?:[-*•+]|\d+[.)])?\s*")
_COMMON = """the and for that this with from into onto not but all any are was were been being
has have had his her its our their they them then than there these those who whom which what
when where why how can could should would will shall may might must also just only very more
most some such other each every both either neither about above after again against before
below between during over under until while you your yours use using used make made makes
sure please want wants wanted asked asks ask said says say told tell user users agent
assistant instead rather like need needs needed does did doing done get got keep kept let
lets one two it's don't won't can't i'd i'm we're they're"""
_STOP = frozenset(_COMMON.split())


_TYPOGRAPHIC = str.maketrans("’‘“”–", "''\"\"-")


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def normal(text: str) -> str:
    """``text`` compared as words: terminal colour codes gone (a summary quotes what a terminal
    showed), compatibility forms and case folded, typographic quotes and dashes as plain
    ones, whitespace runs as one space."""
    text = unicodedata.normalize("NFKC", _ANSI.sub("", text)).casefold()
    text = text.translate(_TYPOGRAPHIC)
    return " ".join(text.split())


def _stem(word: str) -> str:
    for suffix, put in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: len(word) - len(suffix)] + put
            break
    return word[:5]


def stems(text: str) -> set[str]:
    """The content words of ``text`` (three letters or more, not a common word), stemmed."""
    return {_stem(w.strip("./-")) for w in _WORD.findall(normal(text)) if len(w) >= 3} - {
        _stem(w) for w in _STOP
    }


@dataclass(frozen=True)
class UserSources:
    """What a summary's attributions are checked against: each user message's own text
    (for quotes) and that text with the assistant's words it answered (for paraphrases),
    normalized; and the summary lines trusted as checked before."""

    words: tuple[str, ...]
    context: tuple[frozenset[str], ...]
    trusted: frozenset[str] = frozenset()

    @staticmethod
    def of(user: Iterable[tuple[str, str | None]], previous: str | None = None) -> UserSources:
        """From ``(user text, text it answered or None)`` pairs and the previous summary
        (its unmarked lines are trusted: they were checked when it was made)."""
        pairs = [(text, answered) for text, answered in user if text.strip()]
        trusted = frozenset(
            normal(line)
            for line in (previous or "").splitlines()
            if UNVERIFIED_USER not in line and ATTRIBUTED.search(line)
        )
        return UserSources(
            words=tuple(normal(text) for text, _ in pairs),
            context=tuple(frozenset(stems(f"{text}\n{said or ''}")) for text, said in pairs),
            trusted=trusted,
        )


def message_text(message: Message) -> str:
    """The text a user typed in ``message`` (its text blocks joined)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in blocks(message) if block_type(b) == "text")


def user_texts(
    messages: Mapping[int, Message], answered: Mapping[int, str] | None = None
) -> list[tuple[str, str | None]]:
    """The user-authored messages of a log held by position (no tool results, none of our
    notes), oldest first, each with the text it answered: the assistant message right before
    it when that one made no tool call, else ``answered``'s (kept by a summary for a pinned
    message whose predecessor left memory)."""
    out: list[tuple[str, str | None]] = []
    for seq in sorted(messages):
        message = messages[seq]
        if is_request(message):
            text = message_text(message)
            if not ours(text):
                said = _said(messages.get(seq - 1)) or (answered or {}).get(seq)
                out.append((text, said))
    return out


def _said(message: Message | None) -> str | None:
    if message is None or message.get("role") != "assistant":
        return None
    if any(block_type(b) == "tool_use" for b in blocks(message)):
        return None
    return message_text(message)


def _quote_found(quoted: str, sources: UserSources) -> bool:
    pieces = [normal(p).strip(_PUNCT) for p in _ELISION.split(quoted)]
    pieces = [p for p in pieces if p]
    if not pieces:
        return True
    return any(all(p in said for p in pieces) for said in sources.words)


def _claim(line: str, match: re.Match[str]) -> str:
    """What ``line`` says the user asked: the clause after the attribution, up to the end of
    its sentence; the clause before it when the attribution ends it (``... by the user``)."""
    after = _SENTENCE_END.split(line[match.end() :], maxsplit=1)[0]
    if stems(after):
        return after
    return _SENTENCE_END.split(line[: match.start()])[-1]


def supported(line: str, sources: UserSources) -> bool:
    """Whether what ``line`` attributes to the user is in the user's messages (True for a
    line attributing nothing)."""
    match = ATTRIBUTED.search(line)
    if match is None or normal(line) in sources.trusted:
        return True
    quotes = [a or b for a, b in _QUOTE.findall(line)]
    if quotes:
        return all(_quote_found(q, sources) for q in quotes)
    said = stems(_claim(line, match))
    if not said:
        return True
    need = (len(said) + 1) // 2
    return any(len(said & heard) >= need for heard in sources.context)


def check(summary: str, sources: UserSources) -> tuple[str, list[str]]:
    """``summary`` with every line whose attribution to the user no user message supports
    marked (``UNVERIFIED_USER`` after its bullet), and those lines as they were."""
    out: list[str] = []
    marked: list[str] = []
    for line in summary.split("\n"):
        if UNVERIFIED_USER in line or supported(line, sources):
            out.append(line)
            continue
        marked.append(line)
        bullet = _BULLET.match(line)
        at = bullet.end() if bullet else 0
        out.append(f"{line[:at]}{UNVERIFIED_USER}{line[at:]}")
    return "\n".join(out), marked


def marked(summary: str | None) -> list[str]:
    """The lines of ``summary`` carrying the mark."""
    return [line for line in (summary or "").split("\n") if UNVERIFIED_USER in line]


__all__ = [
    "ATTRIBUTED",
    "UserSources",
    "check",
    "marked",
    "message_text",
    "normal",
    "stems",
    "supported",
    "user_texts",
]
