"""The offline token estimate of a text, by character class, and the text's kind.

``text_tokens`` counts a quarter token a letter (or tab or newline), nothing for a space (a
word's token carries its space), 13/20 an ASCII punctuation mark, 7/10 a digit and one a
non-ASCII character (CJK packs one or more tokens a character; the arrows and box lines of
tool output are one each); never fewer than the words that follow a space, each of which
starts a token. Its error against o200k is in the package docstring.

``profile`` is the same estimate plus the text's **kind**, read off the same character
counts at no extra cost, for calibration per kind (``calibrate.py``):

* ``tabular``: 5% or more digits, or 2% or more of the text double spaces (``ls -l``, test
  tables, logs with timestamps, parse trees, aligned output);
* ``plain``: under 2% digits and under 0.5% double spaces (prose, and code or JSON with few
  numbers);
* ``mixed``: in between.

Why these kinds: on the 19 recorded sessions (per message, sized as ``TokenCounter`` sizes
them) the estimate's error follows the share of digits and of aligned columns, not who
sent the text: -1.5% median overall, but +2% on messages under 2% digits and -8% .. -14% on
those over 5%; +2% under 0.5% double spaces, -3% .. -8% above 2%. A tool result can be a
file, a listing or prose, so kinds by sender (tool result / arguments / text) leave the
spread as it is; the numbers are in ``bench --tokens``.
"""

from __future__ import annotations

PLAIN = "plain"
MIXED = "mixed"
TABULAR = "tabular"
KINDS = (PLAIN, MIXED, TABULAR)

_DIGITS = b"0123456789"
_LETTERS = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1))
_WORD_CHARACTERS = _LETTERS + b"\t\n\r"  # counted as letters, with the rest of the word
_NOT_DIGIT = bytes(b for b in range(128) if b not in _DIGITS)


def profile(text: str) -> tuple[int, str]:
    """``(estimated tokens, kind)`` of a text, in one pass of counting."""
    ascii_bytes = text.encode("ascii", "ignore")
    other = len(text) - len(ascii_bytes)
    # One pass over the whole text leaves what is not a letter (a third of it, in tool
    # output); digits and spaces are counted in that remainder.
    rest = ascii_bytes.translate(None, _WORD_CHARACTERS)
    digits = len(rest.translate(None, _NOT_DIGIT))
    spaces = rest.count(b" ")
    punctuation = len(rest) - digits - spaces
    doubles = ascii_bytes.count(b"  ")
    letters = len(ascii_bytes) - punctuation - digits - spaces
    # In twentieths, rounded up: 1/4 a letter, 13/20 a punctuation mark, 7/10 a digit, 1 other.
    estimate = (5 * letters + 13 * punctuation + 14 * digits + 20 * other + 19) // 20
    # Each run of spaces before a word starts a token of its own: "w w w ..." is a token a word.
    tokens = max(estimate, spaces - 2 * doubles)
    # In integers: 100 * part < share * length.
    size = max(1, len(text))
    if 100 * digits >= 5 * size or 100 * doubles >= 2 * size:
        kind = TABULAR
    elif 100 * digits < 2 * size and 200 * doubles < size:
        kind = PLAIN
    else:
        kind = MIXED
    return tokens, kind


def text_tokens(text: str) -> int:
    """Offline token estimate of a text, by character class (see the module docstring)."""
    return profile(text)[0]
