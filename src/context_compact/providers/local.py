"""What a local OpenAI-compatible server says about itself: its context window and its counts.

Local servers (llama.cpp, llama-cpp-python, vLLM, Ollama, LM Studio) often run a model at a
window nobody chose (Ollama's default), which no table of model names can know. Each says it
somewhere of its own:

- llama.cpp server: ``GET /props`` -> ``default_generation_settings.n_ctx`` (older builds:
  ``n_ctx`` at the top);
- vLLM: ``GET /v1/models`` -> ``data[i].max_model_len``;
- LM Studio: ``GET /api/v0/models`` -> ``data[i].loaded_context_length``, else
  ``max_context_length``;
- Ollama: ``GET /api/ps`` -> ``models[i].context_length`` (the window of the loaded model),
  else ``POST /api/show`` -> ``num_ctx`` in its ``parameters``, else
  ``model_info["<arch>.context_length"]`` (the model's own maximum: the server may run it
  smaller, and says so in the source);
- llama-cpp-python says it nowhere but in its refusal of a prompt too long ("This model's
  maximum context length is N tokens"), which it sends after tokenizing and before running
  the model: ``discover_window(..., ask_refusal=True)`` sends one such prompt when the
  server is llama-cpp-python (it answers ``/extras/tokenize/count``).

Invariants: discovery never raises and never waits long (``timeout`` per request, a refused
connection fails at once); a server that says nothing gives None, never a guess. A server may
lie: every value read from one is parsed defensively and bounded (a window is a whole number
of tokens from ``MIN_WINDOW`` to ``MAX_WINDOW``, written in ASCII digits where it is text; a
count of a non-empty text is at least 1 and at most its UTF-8 bytes plus ``COUNT_SLACK``), and
a value outside is not used: it is noted in one line (``discover_window(odd=...)``,
``ServerTokenizer.odd``), and discovery goes on to the next source. The
tokenize endpoints (llama.cpp and vLLM ``/tokenize``, llama-cpp-python
``/extras/tokenize/count``) count a text exactly as the server will; ``ServerTokenizer``
caches its counts by content and falls back to the estimate it is given while the server
does not answer.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "ServerTokenizer",
    "ServerWindow",
    "TokenizeEndpoint",
    "asks_server",
    "discover_window",
    "find_tokenizer",
    "server_root",
]

TIMEOUT = 2.0
MIN_WINDOW = 256
MAX_WINDOW = 100_000_000
COUNT_SLACK = 16
"""Tokens a server may add to a text's own (a BOS token, a chat template's few)."""
_DIGITS = re.compile(r"[0-9]{1,12}")
# A prompt no local window holds: "0 " is one or two tokens (1.1M with SmolLM2's tokenizer);
# llama-cpp-python refuses it after tokenizing, before any model work (0.8 s on one core).
REFUSAL_PROBE_REPEATS = 550_000


@dataclass(frozen=True)
class ServerWindow:
    """A context window in tokens and where it was read (``"llama.cpp /props n_ctx"``...)."""

    tokens: int
    source: str


def server_root(base_url: str) -> str:
    """The server's root for an OpenAI ``base_url``: ``http://h:8080/v1`` -> ``http://h:8080``."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _v1(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url if url.endswith("/v1") else f"{url}/v1"


def _http(url: str, body: Any = None, *, timeout: float = TIMEOUT, key: str | None = None) -> Any:
    """The JSON a GET (or a POST of ``body``) answers, or None for any failure."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"content-type": "application/json"} if data is not None else {}
    if key:
        headers["authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _error_json(url: str, body: Any, timeout: float, key: str | None) -> Any:
    """The JSON body of an error answer to a POST (None when it is not an error)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), headers={"content-type": "application/json"}
    )
    if key:
        request.add_header("authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return None
    except urllib.error.HTTPError as error:
        try:
            return json.loads(error.read().decode("utf-8"))
        except (OSError, ValueError):
            return None
    except (OSError, ValueError):
        return None


Odd = list[str]
"""Where discovery notes each value a server gave that it did not use, one line each."""


def _window(value: Any, where: str, odd: Odd) -> int | None:
    """``value`` when it is a window (a whole number from ``MIN_WINDOW`` to ``MAX_WINDOW``);
    None when absent, or odd (noted)."""
    if value is None:
        return None
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and MIN_WINDOW <= value <= MAX_WINDOW:
        return value
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
    odd.append(
        f"{where} says {shown}: not a context window (a whole number of tokens from "
        f"{MIN_WINDOW:,} to {MAX_WINDOW:,}); not used"
    )
    return None


def _entries(answer: Any, key: str) -> list[dict[str, Any]]:
    items = answer.get(key) if isinstance(answer, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _pick(entries: list[dict[str, Any]], model: str, *names: str) -> dict[str, Any] | None:
    """The entry naming ``model``, else the only one."""
    for entry in entries:
        if model and any(entry.get(n) == model for n in names):
            return entry
    return entries[0] if len(entries) == 1 else None


def _found(value: Any, source: str, odd: Odd) -> ServerWindow | None:
    size = _window(value, source, odd)
    return None if size is None else ServerWindow(size, source)


def _llamacpp(
    root: str, model: str, timeout: float, key: str | None, odd: Odd
) -> ServerWindow | None:
    props = _http(f"{root}/props", timeout=timeout, key=key)
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict):
        where = "llama.cpp /props default_generation_settings.n_ctx"
        found = _found(settings.get("n_ctx"), where, odd)
        if found is not None:
            return found
    return _found(props.get("n_ctx"), "llama.cpp /props n_ctx", odd)


def _vllm(v1: str, model: str, timeout: float, key: str | None, odd: Odd) -> ServerWindow | None:
    entry = _pick(_entries(_http(f"{v1}/models", timeout=timeout, key=key), "data"), model, "id")
    if entry is None:
        return None
    return _found(entry.get("max_model_len"), "vLLM /v1/models max_model_len", odd)


def _lmstudio(
    root: str, model: str, timeout: float, key: str | None, odd: Odd
) -> ServerWindow | None:
    answer = _http(f"{root}/api/v0/models", timeout=timeout, key=key)
    entry = _pick(_entries(answer, "data"), model, "id")
    if entry is None:
        return None
    for field in ("loaded_context_length", "max_context_length"):
        found = _found(entry.get(field), f"LM Studio /api/v0/models {field}", odd)
        if found is not None:
            return found
    return None


def _ollama(
    root: str, model: str, timeout: float, key: str | None, odd: Odd
) -> ServerWindow | None:
    running = _entries(_http(f"{root}/api/ps", timeout=timeout, key=key), "models")
    loaded = _pick(running, model, "name", "model")
    if loaded is not None:
        found = _found(loaded.get("context_length"), "Ollama /api/ps context_length", odd)
        if found is not None:
            return found
    shown = _http(f"{root}/api/show", {"model": model}, timeout=timeout, key=key) if model else None
    if not isinstance(shown, dict):
        return None
    for line in str(shown.get("parameters") or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "num_ctx":
            found = _found(parts[1], "Ollama /api/show parameters num_ctx", odd)
            if found is not None:
                return found
    info = shown.get("model_info")
    if isinstance(info, dict):
        for name, value in info.items():
            if str(name).endswith(".context_length"):
                where = "Ollama /api/show model_info context_length (the model's maximum)"
                found = _found(value, where, odd)
                if found is not None:
                    return found
    return None


def refusal_window(
    base_url: str,
    model: str,
    *,
    timeout: float = 30.0,
    key: str | None = None,
    odd: Odd | None = None,
) -> tuple[ServerWindow | None, Any]:
    """Send a prompt no local window holds (``max_tokens`` 1) and read the window its refusal
    states: ``(window or None, the error body or None)``. Only for servers that refuse before
    running the model (llama.cpp and its Python binding); a server that accepted it would run
    a huge prompt."""
    from .errors import overflow_figures

    body = {
        "model": model or "model",
        "messages": [{"role": "user", "content": "0 " * REFUSAL_PROBE_REPEATS}],
        "max_tokens": 1,
    }
    error = _error_json(f"{_v1(base_url)}/chat/completions", body, timeout, key)
    if error is None:
        return None, None
    window = overflow_figures(_Refusal(error)).window
    found = _found(window, "the server's refusal of a longer prompt", [] if odd is None else odd)
    return found, error


class _Refusal(Exception):
    """An error body as the duck-typed readers of ``errors.py`` take it."""

    def __init__(self, body: Any) -> None:
        super().__init__(json.dumps(body)[:2_000])
        self.body = body.get("error", body) if isinstance(body, dict) else body
        self.status_code = 400


def discover_window(
    base_url: str,
    model: str = "",
    *,
    timeout: float = TIMEOUT,
    key: str | None = None,
    ask_refusal: bool = False,
    odd: Odd | None = None,
) -> ServerWindow | None:
    """The window the server at ``base_url`` runs ``model`` at, or None when it does not say
    (see the module docstring for what is asked, in order). Never raises; each value the
    server gave that is not a window is added to ``odd``, one line each."""
    noted: Odd = [] if odd is None else odd
    try:
        return _discover(base_url, model, timeout, key, ask_refusal, noted)
    except Exception as error:  # a server's answer we did not foresee: discovery says nothing
        noted.append(f"the server's answers could not be read ({type(error).__name__}: {error})")
        return None


def _discover(
    base_url: str, model: str, timeout: float, key: str | None, ask_refusal: bool, odd: Odd
) -> ServerWindow | None:
    root, v1 = server_root(base_url), _v1(base_url)
    for probe, where in ((_llamacpp, root), (_vllm, v1), (_lmstudio, root), (_ollama, root)):
        found = probe(where, model, timeout, key, odd)
        if found is not None:
            return found
    if ask_refusal:
        endpoint = find_tokenizer(base_url, model, timeout=timeout, key=key)
        if endpoint is not None and endpoint.style == "llama-cpp-python":
            found, _ = refusal_window(base_url, model, key=key, odd=odd)
            return found
    return None


# -- counting ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenizeEndpoint:
    """Where a server counts tokens: ``url``, the request ``style`` (``"llama.cpp"``,
    ``"vllm"``, ``"llama-cpp-python"``) and the model named in vLLM's and llama-cpp-python's."""

    url: str
    style: str
    model: str = ""

    def body(self, text: str) -> dict[str, Any]:
        if self.style == "llama.cpp":
            return {"content": text}
        if self.style == "vllm":
            return {"model": self.model, "prompt": text, "add_special_tokens": False}
        return {"input": text, "model": self.model or None}

    def read(self, answer: Any, text: str | None = None) -> int | None:
        """The count in ``answer``; None when there is none, or it cannot be ``text``'s (none
        of a non-empty text, more than its bytes and ``COUNT_SLACK``)."""
        if not isinstance(answer, dict):
            return None
        count = answer.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            tokens = answer.get("tokens")
            count = len(tokens) if isinstance(tokens, list) else None
        if count is None or text is None:
            return count
        if (count == 0) != (text == "") or count > len(text.encode("utf-8")) + COUNT_SLACK:
            return None
        return count

    def odd(self, answer: Any, text: str) -> str:
        """One line saying why ``answer`` is no count of ``text``."""
        count = self.read(answer)
        if count is None:
            return f"{self.url} answered no count ({str(answer)[:60]!r})"
        return (
            f"{self.url} counted {count:,} tokens in a text of {len(text):,} characters: "
            "not a count of it; the estimate is used"
        )


def find_tokenizer(
    base_url: str, model: str = "", *, timeout: float = TIMEOUT, key: str | None = None
) -> TokenizeEndpoint | None:
    """The server's tokenize endpoint, tried on one short text; None when it has none."""
    root = server_root(base_url)
    candidates = (
        TokenizeEndpoint(f"{root}/extras/tokenize/count", "llama-cpp-python", model),
        TokenizeEndpoint(f"{root}/tokenize", "vllm" if model else "llama.cpp", model),
        TokenizeEndpoint(f"{root}/tokenize", "llama.cpp", model),
    )
    for endpoint in candidates:
        answer = _http(endpoint.url, endpoint.body("hello"), timeout=timeout, key=key)
        if endpoint.read(answer, "hello"):
            return endpoint
    return None


class ServerTokenizer:
    """``text -> tokens`` counted by the server (``Compactor(token_counter=...)``).

    Counts are cached by the text's digest (``cache_size`` most recent). A failed request
    answers with ``fallback`` and the server is left alone for ``retry_after`` seconds,
    so a server that went away costs one timeout, not one per message; ``fallbacks`` counts
    the texts estimated.
    """

    def __init__(
        self,
        endpoint: TokenizeEndpoint,
        fallback: Callable[[str], int],
        *,
        timeout: float = TIMEOUT,
        key: str | None = None,
        cache_size: int = 8_192,
        retry_after: float = 30.0,
    ) -> None:
        self.endpoint = endpoint
        self.fallback = fallback
        self.timeout = timeout
        self.key = key
        self.cache: dict[bytes, int] = {}
        self.cache_size = cache_size
        self.retry_after = retry_after
        self.down_until = 0.0
        self.requests = 0
        self.fallbacks = 0
        self.odd: list[str] = []
        """The counts the server gave that cannot be a text's (the first few), one line each."""

    def __call__(self, text: str) -> int:
        return self.count_many([text])[0]

    def count_many(self, texts: Iterable[str]) -> list[int]:
        """Counts of ``texts`` in order: cached ones at once, the rest asked of the server
        together (a few requests at a time)."""
        texts = list(texts)
        keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() for t in texts]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}
        if missing:
            for key, count in zip(missing, self._ask(list(missing.values())), strict=True):
                if count is not None:
                    self._remember(key, count)
        out = []
        for key, text in zip(keys, texts, strict=True):
            count = self.cache.get(key)
            if count is None:
                self.fallbacks += 1
                count = self.fallback(text)
            out.append(count)
        return out

    def _ask(self, texts: list[str]) -> list[int | None]:
        if not texts or time.monotonic() < self.down_until:
            return [None] * len(texts)

        def one(text: str) -> int | None:
            answer = _http(
                self.endpoint.url, self.endpoint.body(text), timeout=self.timeout, key=self.key
            )
            count = self.endpoint.read(answer, text)
            if count is None and answer is not None and len(self.odd) < 8:
                self.odd.append(self.endpoint.odd(answer, text))
            return count

        self.requests += len(texts)
        if len(texts) == 1:
            counts = [one(texts[0])]
        else:
            with ThreadPoolExecutor(max_workers=min(4, len(texts))) as pool:
                counts = list(pool.map(one, texts))
        if any(c is None for c in counts):
            self.down_until = time.monotonic() + self.retry_after
        return counts

    def _remember(self, key: bytes, count: int) -> None:
        if len(self.cache) >= self.cache_size:
            del self.cache[next(iter(self.cache))]
        self.cache[key] = count


def asks_server(base_url: str | None) -> bool:
    """Whether a server at ``base_url`` is worth asking: not OpenAI's own API (whose models
    the table knows, and which has none of these endpoints)."""
    if not base_url:
        return False
    host = urlsplit(base_url).hostname or ""
    return not (host == "api.openai.com" or host.endswith(".openai.azure.com"))
