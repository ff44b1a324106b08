"""How big a history is: characters for the seed, tokens for the default.

* ``estimate_chars`` is the seed's measure (S-0.2): the length of the JSON text.
* ``text_tokens`` is an offline estimate of tokens: about four characters per token for
  English text (OpenAI's help article "What are tokens and how to count them": one token is
  ~4 characters of common English), while CJK text packs far fewer characters per token, so
  each CJK character counts as one. tiktoken, when installed and its encoding files are
  cached locally, replaces the estimate with a real count (``TokenCounter``).
* Calibration against the API's real ``usage`` lives with the default policy's view
  (``view.SessionView.measure``): the last real count plus an estimate of what came after.

``context_window(model)`` knows the windows of the common model families.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from typing import Any

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

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


def to_json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def estimate_chars(messages: list[Any]) -> int:
    """The seed's size of a history (S-0.2)."""
    return len(to_json(messages))


def text_tokens(text: str) -> int:
    """Offline token estimate of a text: ~4 chars/token, one token per CJK character."""
    cjk = len(_CJK.findall(text)) if not text.isascii() else 0
    return cjk + (len(text) - cjk + 3) // 4


O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def tiktoken_cache_file(url: str = O200K_URL) -> str:
    """Where tiktoken keeps its copy of an encoding file (its own rule: TIKTOKEN_CACHE_DIR,
    else DATA_GYM_CACHE_DIR, else <tmp>/data-gym-cache; the name is the SHA-1 of the URL)."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    folder = folder or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.path.join(folder, hashlib.sha1(url.encode()).hexdigest())


@functools.cache
def _tiktoken_counter() -> Callable[[str], int] | None:
    """An exact o200k counter that never touches the network, or None.

    bpe-openai (the ``tokens`` extra) ships its tables in the wheel; tiktoken is used only when
    its o200k file is already in its cache, since its first use otherwise downloads it.
    """
    try:
        from bpe_openai._bindings import tokenizer_for_encoding

        tokenizer = tokenizer_for_encoding("o200k_base")

        def bpe_count(text: str) -> int:
            try:
                return int(tokenizer.count(text))
            except UnicodeError:  # a lone surrogate: count what the API would receive
                return int(tokenizer.count(text.encode("utf-8", "replace").decode("utf-8")))

        return bpe_count
    except Exception:
        pass
    try:
        import tiktoken
    except ImportError:
        return None
    if not os.path.exists(tiktoken_cache_file()):
        return None
    try:
        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


class TokenCounter:
    """Counts tokens of texts and messages; tiktoken when usable, else the estimate.

    Each message's count is cached by identity of its JSON text, so sizing a growing
    history costs only the new messages (the hot path of ``prepare``).
    """

    def __init__(self, use_tiktoken: bool = False) -> None:
        counter = _tiktoken_counter() if use_tiktoken else None
        self.exact = counter is not None
        self._count = counter or text_tokens
        self._cache: dict[int, tuple[Any, int]] = {}

    def text(self, text: str) -> int:
        return self._count(text)

    def count(self, message: Any) -> int:
        """Tokens of one message, uncached (for callers that keep the count themselves)."""
        content = message.get("content", "") if isinstance(message, dict) else message
        # Per-message framing (role, separators) costs a few tokens on every API.
        return self._count(to_json(content)) + 4

    def message(self, message: Any) -> int:
        key = id(message)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        count = self.count(message)
        if len(self._cache) > 100_000:
            self._cache.clear()
        self._cache[key] = (message, count)
        return count

    def messages(self, messages: list[Any]) -> int:
        return sum(self.message(m) for m in messages)
