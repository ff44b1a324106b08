"""How big a history is: characters for the seed, tokens for the default.

* ``estimate_chars`` is the seed's measure (S-0.2): the length of the JSON text.
* ``text_tokens`` is the offline estimate of tokens, by character class (``estimate.py``).

  Measured against exact o200k counts (bpe-openai) on the 19 recorded sessions in
  ``tests/data/trajectories``, sized as ``TokenCounter`` sizes them (the JSON text of each
  message's content; the 1,534 messages of 50 chars or more for the per-message rows)::

                                   ~4 chars a token     by character class
      all tokens of all sessions   -17.2%               -2.9%
      per session, min .. max      -30.7% .. +2.5%      -14.5% .. +13.0%
      messages >= 1,000 chars,
        p5 .. p95                  -33.2% .. +15.4%     -17.3% .. +18.3%
      median message               -22.4%               -1.9%
      bench workload: logs, grep,  -32%, -22%, +4%      +9%, +5%, +11%
        code (testing/workload.py)

  Tool output is code, logs and JSON, full of punctuation and numbers that tokenize finely:
  four characters a token undercounted it by a fifth. On the raw texts (1,197 tool results
  and text blocks, not JSON-escaped) the spread per session goes from -28.5% .. +23.5% to
  -19.7% .. +23.3%, the total from -11.2% to -3.0%. Known over-counts: English prose
  (o200k packs ~6 chars a token) and runs of one mark (``=====`` rules, ``.....`` progress
  dots: 8-16 a token), so the error there is on the safe side. Known under-counts: aligned
  columns (``ls -l``: every run of spaces is a token) and short numbers. A simpler 3.3
  chars a token moved the sessions to -16.7% .. +23.9%. The estimate costs ~5 ns a
  character (``bytes`` translate and count passes), about twice a ``json.dumps``.
* ``exact_counter`` is a real tokenizer, never fetched from the network, chosen by model
  family (``exact.py``: o200k or cl100k for OpenAI models; none exists offline for Claude).
* ``TokenCounter`` sizes texts and messages with one of them and says which (``counter.py``),
  its estimate calibrated per kind of text from the API's ``usage`` (``calibrate.py``);
  the default engine adds the last real count plus an estimate of what came after.
* ``context_window(model)`` knows the windows of the common model families.

``bench --tokens`` measures the estimate's error per message, before and after calibration.
"""

from __future__ import annotations

from typing import Any

from .calibrate import Calibration
from .counter import ESTIMATE, TokenCounter, to_json
from .estimate import KINDS, profile, text_tokens
from .exact import (
    DEFAULT_ENCODING,
    TIKTOKEN_FILES,
    Count,
    encoding_for_model,
    exact_counter,
    tiktoken_cache_file,
)

# Context windows in tokens, by model-name prefix (longest prefix wins). Sources: the
# providers' model pages (Anthropic "Models overview", OpenAI model docs), as of 2025.
MODEL_WINDOWS: dict[str, int] = {
    "claude-": 200_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "llama": 128_000,
    "qwen": 32_768,
    "deepseek": 128_000,
    "mistral": 32_768,
    "gemini": 1_048_576,
}
DEFAULT_WINDOW = 200_000


def context_window(model: str | None, table: dict[str, int] | None = None) -> int:
    """The context window of ``model`` in tokens (longest matching prefix), or the default."""
    if not model:
        return DEFAULT_WINDOW
    table = MODEL_WINDOWS if table is None else table
    name = model.lower().rsplit("/", 1)[-1]
    best = max((p for p in table if name.startswith(p)), key=len, default=None)
    return table[best] if best else DEFAULT_WINDOW


def known_window(model: str | None, table: dict[str, int] | None = None) -> int | None:
    """The window of ``model`` when the table knows it (a prefix matches), else None: the
    caller then says which window it assumes."""
    if not model:
        return None
    table = MODEL_WINDOWS if table is None else table
    name = model.lower().rsplit("/", 1)[-1]
    return table[max(p, key=len)] if (p := [k for k in table if name.startswith(k)]) else None


def estimate_chars(messages: list[Any]) -> int:
    """The seed's size of a history (S-0.2)."""
    return len(to_json(messages))


__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_WINDOW",
    "ESTIMATE",
    "KINDS",
    "MODEL_WINDOWS",
    "TIKTOKEN_FILES",
    "Calibration",
    "Count",
    "TokenCounter",
    "context_window",
    "encoding_for_model",
    "estimate_chars",
    "exact_counter",
    "known_window",
    "profile",
    "text_tokens",
    "tiktoken_cache_file",
    "to_json",
]
