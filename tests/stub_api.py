"""A scripted HTTP stand-in for the Anthropic Messages and OpenAI Chat Completions and
Responses APIs.

``StubAPI`` listens on 127.0.0.1 (ephemeral port) and answers ``POST /v1/messages`` in the
Anthropic shape, ``POST /v1/chat/completions`` and ``POST /v1/responses`` in the OpenAI
shapes, so the real ``anthropic`` and ``openai`` SDK clients can be pointed at it. Each
request consumes the next item of a script:

- ``Reply``: a neutral description (text, tool calls, stop reason, token counts) rendered
  in whichever API shape the request path asks for;
- ``ErrorReply``: a status, a JSON body (sent verbatim) and headers; the helper
  constructors below build the error bodies the real services send;
- ``Drop``: the socket is closed without a byte of answer (a dropped connection);
- ``Truncated``: a ``Reply`` whose body stops half-way, the socket closed with the headers
  promising more (a connection lost mid-response);
- ``MidStreamError``: a streamed ``Reply`` cut after ``share`` of its events by the error
  event the service sends once the HTTP 200 is out;
- a callable ``fn(request_json) -> item``, to answer from what was sent.

A Messages request the real API would refuse (an unanswered ``tool_use``, an orphan
``tool_result``, with ``thinking`` enabled a final assistant turn that does not open with a
thinking block, a thinking block altered under the signature the stub gave it: ``api_rules``)
is answered with the API's own 400 before the script is consulted, and listed in
``refusals``; ``StubAPI(enforce=False)`` turns that off. The server's own compaction
(``stub_compaction``: a ``compact_20260112`` edit, an on-demand ``compaction`` request) is
answered and its rules enforced the same way. On the models that run it (``api_binding``),
each thinking block the stub sends is bound to its prefix and a request that sends one back
after its prefix changed is refused in the API's words, or, with ``prefix_mismatch_behavior:
"drop_block"`` (or ``StubAPI(binding="drop")``, a model that drops), has the failing blocks
dropped and listed in the response's ``input_transformations``.

A request whose body has ``"stream": true`` gets its ``Reply`` as server-sent events in the
API's real event shapes (``stub_sse``), flushed one event at a time; errors before the
stream are the same HTTP errors as without streaming.

``fast_retry(item)`` adds ``retry-after-ms: 1`` to an error, so an SDK that honors it
retries at once instead of after its own backoff (0.5 s and up).

Every request to one of the three API paths is recorded in ``requests`` (path, lower-cased
headers, parsed JSON body) before it is answered. Any other path (``GET`` too) is a local
server's own endpoint: answered from ``routes`` (``{"GET /props": json or fn(body) -> json}``;
the helpers ``llamacpp_props``, ``vllm_models``, ``ollama_show``, ``ollama_ps``,
``lmstudio_models``, ``llamacpp_tokenize`` build them), else 404, and recorded in ``probes``.
An exhausted script answers HTTP 500 with a body that says so.
Responses are HTTP/1.0 (the connection closes after each), so ``stop()`` leaves no open
socket or thread behind.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import api_binding
import api_rules
import stub_sse
from stub_compaction import Compactions

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"


@dataclass(frozen=True)
class ToolCall:
    """A tool call in a scripted reply; ``raw_arguments`` overrides the OpenAI JSON text."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    raw_arguments: str | None = None


@dataclass(frozen=True)
class Reply:
    """A successful model turn, independent of the API shape it is rendered in.

    ``stop_reason`` is canonical (``end_turn``, ``tool_use``, ``max_tokens``); by default it
    is ``tool_use`` when there are tool calls. ``input_tokens`` excludes cached tokens.
    """

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str | None = None
    thinking: str | None = None
    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error answer; ``body`` is JSON-encoded unless it is a ``str``."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drop:
    """Close the connection without answering."""


@dataclass(frozen=True)
class Truncated:
    """Send the headers and the first ``share`` of the body of ``reply``, then close."""

    reply: Reply
    share: float = 0.5


@dataclass(frozen=True)
class MidStreamError:
    """Stream the first ``share`` of the events of ``reply``, then an error event (only
    for ``"stream": true`` requests)."""

    reply: Reply
    share: float = 0.5
    kind: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass(frozen=True)
class EventStream:
    """A streamed answer: the encoded server-sent events, in order."""

    events: list[bytes]


ScriptItem = Reply | ErrorReply | Drop | Truncated | MidStreamError | Callable[[Any], "ScriptItem"]


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any


# -- error bodies ------------------------------------------------------------------------

_request_ids = itertools.count(1)


def _anthropic_error(status: int, kind: str, message: str, **headers: str) -> ErrorReply:
    request_id = f"req_stub{next(_request_ids):06d}"
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    return ErrorReply(status, body, {"request-id": request_id, **headers})


def fast_retry(item: ErrorReply, milliseconds: int = 1) -> ErrorReply:
    """``item`` asking to be retried after ``milliseconds`` (both SDKs read retry-after-ms)."""
    return ErrorReply(item.status, item.body, {**item.headers, "retry-after-ms": str(milliseconds)})


def anthropic_prompt_too_long(tokens: int = 210_000, maximum: int = 200_000) -> ErrorReply:
    return _anthropic_error(
        400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {maximum} maximum"
    )


def anthropic_input_and_max_tokens_exceed(
    input_tokens: int = 199_759, max_tokens: int = 8192, limit: int = 200_000
) -> ErrorReply:
    return _anthropic_error(
        400,
        "invalid_request_error",
        f"input length and `max_tokens` exceed context limit: {input_tokens} + {max_tokens}"
        f" > {limit}, decrease input length or `max_tokens` and try again",
    )


def anthropic_request_too_large() -> ErrorReply:
    return _anthropic_error(
        413, "request_too_large", "Request exceeds the maximum allowed number of bytes."
    )


def anthropic_invalid_request(message: str) -> ErrorReply:
    return _anthropic_error(400, "invalid_request_error", message)


def anthropic_rate_limit() -> ErrorReply:
    return _anthropic_error(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 30,000 input"
        " tokens per minute. Please reduce the prompt length or the maximum tokens requested,"
        " or try again later.",
        **{"retry-after": "1"},
    )


def anthropic_overloaded() -> ErrorReply:
    return _anthropic_error(529, "overloaded_error", "Overloaded")


def anthropic_api_error() -> ErrorReply:
    return _anthropic_error(500, "api_error", "Internal server error")


def anthropic_authentication_error() -> ErrorReply:
    return _anthropic_error(401, "authentication_error", "invalid x-api-key")


def anthropic_permission_error() -> ErrorReply:
    return _anthropic_error(
        403, "permission_error", "Your API key does not have permission to use this resource."
    )


def _openai_error(
    status: int, message: str, kind: str, param: str | None, code: str | None
) -> ErrorReply:
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return ErrorReply(status, body, {"x-request-id": f"req_stub{next(_request_ids):06d}"})


def openai_context_length_exceeded(maximum: int = 128_000, tokens: int = 130_000) -> ErrorReply:
    return _openai_error(
        400,
        f"This model's maximum context length is {maximum} tokens. However, your messages"
        f" resulted in {tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "messages",
        "context_length_exceeded",
    )


def openai_input_exceeds_context_window() -> ErrorReply:
    """The Responses API wording, seen through OpenAI-compatible gateways too."""
    return _openai_error(
        400,
        "Your input exceeds the context window of this model. Please adjust your input and"
        " try again.",
        "invalid_request_error",
        "input",
        "context_length_exceeded",
    )


def openai_input_tokens_exceed_configured_limit(
    limit: int = 272_000, tokens: int = 289_650
) -> ErrorReply:
    """GPT-5 wording; the code is left out because reports quote only the message."""
    return _openai_error(
        400,
        f"Input tokens exceed the configured limit of {limit} tokens. Your messages resulted"
        f" in {tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "messages",
        None,
    )


def openai_invalid_request(
    message: str, param: str | None = None, code: str | None = None
) -> ErrorReply:
    return _openai_error(400, message, "invalid_request_error", param, code)


def openai_rate_limit() -> ErrorReply:
    return _openai_error(
        429,
        "Rate limit reached for gpt-4o in organization org-stub on tokens per min (TPM):"
        " Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
        "tokens",
        None,
        "rate_limit_exceeded",
    )


def openai_request_too_large_for_tpm() -> ErrorReply:
    """A 429 that mentions a too large request: a per-minute budget, not the window."""
    return _openai_error(
        429,
        "Request too large for gpt-4o in organization org-stub on tokens per min (TPM):"
        " Limit 30000, Requested 45000. The input or output tokens must be reduced in order"
        " to run successfully.",
        "tokens",
        None,
        "rate_limit_exceeded",
    )


def openai_server_error() -> ErrorReply:
    return _openai_error(
        500,
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
        None,
    )


def openai_authentication_error() -> ErrorReply:
    return _openai_error(
        401,
        "Incorrect API key provided: sk-stub. You can find your API key at"
        " https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        None,
        "invalid_api_key",
    )


def llamacpp_exceed_context(
    n_prompt_tokens: int = 14_429, n_ctx: int = 8192, status: int = 400
) -> ErrorReply:
    """llama.cpp server; early builds answered the same body with HTTP 500."""
    body = {
        "error": {
            "code": status,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": n_prompt_tokens,
            "n_ctx": n_ctx,
        }
    }
    return ErrorReply(status, body)


def vllm_context_length_exceeded(
    maximum: int = 16_384, messages: int = 112_946, completion: int = 10_000, wrapped: bool = False
) -> ErrorReply:
    """vLLM's 400; older servers send the flat ``"object": "error"`` body."""
    error = {
        "message": f"This model's maximum context length is {maximum} tokens. However, you"
        f" requested {messages + completion} tokens ({messages} in the messages, {completion}"
        " in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    return ErrorReply(400, {"error": error} if wrapped else {"object": "error", **error})


# -- local servers' own endpoints (``StubAPI(routes=...)``) ------------------------------


def llamacpp_props(n_ctx: int) -> dict[str, Any]:
    """llama.cpp server: ``GET /props``."""
    return {"GET /props": {"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}}


def vllm_models(model: str, max_model_len: int) -> dict[str, Any]:
    """vLLM: ``GET /v1/models``."""
    entry = {"id": model, "object": "model", "owned_by": "vllm", "max_model_len": max_model_len}
    return {"GET /v1/models": {"object": "list", "data": [entry]}}


def ollama_show(model_info_length: int, num_ctx: int | None = None) -> dict[str, Any]:
    """Ollama: ``POST /api/show`` (``num_ctx`` among the parameters when the model sets it)."""
    answer: dict[str, Any] = {"model_info": {"llama.context_length": model_info_length}}
    if num_ctx is not None:
        answer["parameters"] = f'num_ctx                        {num_ctx}\nstop    "<|eot|>"'
    return {"POST /api/show": answer}


def ollama_ps(model: str, context_length: int) -> dict[str, Any]:
    """Ollama: ``GET /api/ps`` with ``model`` loaded."""
    return {"GET /api/ps": {"models": [{"name": model, "context_length": context_length}]}}


def lmstudio_models(model: str, loaded: int, maximum: int) -> dict[str, Any]:
    """LM Studio: ``GET /api/v0/models``."""
    entry = {"id": model, "loaded_context_length": loaded, "max_context_length": maximum}
    return {"GET /api/v0/models": {"object": "list", "data": [entry]}}


def llamacpp_tokenize(count: Callable[[str], int]) -> dict[str, Any]:
    """llama.cpp server: ``POST /tokenize`` ``{"content"}`` -> ``{"tokens"}``, ``count`` long."""
    return {"POST /tokenize": lambda body: {"tokens": list(range(count(body["content"])))}}


def llama_cpp_python_tokenize(count: Callable[[str], int]) -> dict[str, Any]:
    """llama-cpp-python: ``POST /extras/tokenize/count`` ``{"input"}`` -> ``{"count"}``."""
    return {"POST /extras/tokenize/count": lambda body: {"count": count(body["input"])}}


def llama_cpp_python_refusal(window: int, messages: int, completion: int | None) -> ErrorReply:
    """llama-cpp-python's server, its exception reworded OpenAI's way (``None`` in the
    completion when the request named no ``max_tokens``)."""
    error = {
        "message": f"This model's maximum context length is {window} tokens. However, you "
        f"requested {messages + (completion or 0)} tokens ({messages} in the messages, "
        f"{completion} in the completion). Please reduce the length of the messages or "
        "completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    return ErrorReply(400, {"error": error})


# -- rendering ---------------------------------------------------------------------------


def _anthropic_message(reply: Reply, request: Any, number: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        content.append(
            {
                "type": "thinking",
                "thinking": reply.thinking,
                "signature": api_rules.sign(reply.thinking),
            }
        )
    if reply.text is not None:
        content.append({"type": "text", "text": reply.text})
    for index, call in enumerate(reply.tool_calls):
        content.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_stub_{number:04d}_{index}",
                "name": call.name,
                "input": call.input,
            }
        )
    return {
        "id": f"msg_stub_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "stub") if isinstance(request, dict) else "stub",
        "content": content,
        "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_read_input_tokens": reply.cache_read_tokens,
            "cache_creation_input_tokens": reply.cache_creation_tokens,
        },
    }


_FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _openai_completion(reply: Reply, request: Any, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_stub_{number:04d}_{index}",
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.raw_arguments
                    if call.raw_arguments is not None
                    else json.dumps(call.input),
                },
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
    prompt = reply.input_tokens + reply.cache_read_tokens + reply.cache_creation_tokens
    return {
        "id": f"chatcmpl-stub-{number:04d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "stub") if isinstance(request, dict) else "stub",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _FINISH_REASONS.get(stop, stop),
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": reply.output_tokens,
            "total_tokens": prompt + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens},
        },
    }


def _responses_output(reply: Reply, number: int) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    if reply.thinking is not None:
        output.append(
            {
                "id": f"rs_stub_{number:04d}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": reply.thinking}],
                "encrypted_content": f"gAAAA-stub-{number:04d}",
            }
        )
    if reply.text is not None:
        output.append(
            {
                "id": f"msg_stub_{number:04d}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for index, call in enumerate(reply.tool_calls):
        arguments = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.input)
        output.append(
            {
                "id": f"fc_stub_{number:04d}_{index}",
                "type": "function_call",
                "call_id": call.id or f"call_stub_{number:04d}_{index}",
                "name": call.name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    return output


def _openai_response(reply: Reply, request: Any, number: int) -> dict[str, Any]:
    """A Responses API ``response`` object (https://platform.openai.com/docs/api-reference/
    responses/object); ``input_tokens`` counts cached tokens too, as the real API does."""
    prompt = reply.input_tokens + reply.cache_read_tokens + reply.cache_creation_tokens
    stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
    incomplete = stop == "max_tokens"
    body = request if isinstance(request, dict) else {}
    return {
        "id": f"resp_stub_{number:04d}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model", "stub"),
        "output": _responses_output(reply, number),
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": body.get("tools", []),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": reply.cache_read_tokens},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + reply.output_tokens,
        },
        "user": None,
        "metadata": {},
    }


# -- server ------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        status, payload = self.server.stub.route("GET", path, None)
        self._json(status, payload)

    def _json(self, status: int, payload: Any) -> None:
        self.close_connection = True
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode("utf-8")
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        path = self.path.split("?", 1)[0]
        if path not in (ANTHROPIC_PATH, OPENAI_PATH, RESPONSES_PATH):
            self._json(*self.server.stub.route("POST", path, body))
            return
        status, payload, headers, cut = self.server.stub.respond(
            RecordedRequest(path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        self.close_connection = True
        if cut is not None and cut <= 0:
            return  # Drop: the server closes the socket with nothing sent
        if isinstance(payload, EventStream):
            self._stream(status, payload, headers, cut)
            return
        data = payload.encode("utf-8") if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data if cut is None else data[: max(1, int(len(data) * cut))])

    def _stream(
        self, status: int, payload: EventStream, headers: dict[str, str], cut: float | None
    ) -> None:
        # HTTP/1.0 with no content-length: the closed socket ends the body, as in a real
        # stream, and each event is flushed on its own so the client reads them as they come.
        self.send_response(status)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        events = payload.events
        if cut is not None:
            events = events[: max(1, int(len(events) * cut))]
        for event in events:
            self.wfile.write(event)
            self.wfile.flush()


class _Server(ThreadingHTTPServer):
    # Non-daemon handler threads so that server_close() joins them.
    daemon_threads = False

    def __init__(self, stub: StubAPI) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stub = stub


class StubAPI:
    """The scripted server; use as a context manager or call ``start()``/``stop()``."""

    def __init__(
        self,
        *script: ScriptItem,
        enforce: bool = True,
        compactions: Compactions | None = None,
        routes: dict[str, Any] | None = None,
        binding: str | None = None,
        checks: bool | None = None,
    ) -> None:
        # ``enforce``: Messages requests that break the API's rules (``api_rules``, and the
        # compaction rules of ``stub_compaction``) are refused with the API's own 400, as the
        # service refuses them. ``compactions``: how the server's own compaction counts.
        # ``routes``: answers to other paths (a local server's window or tokenizer).
        # ``binding``: what the prefix check does on the models that run it, "error" (the
        # default: a 400) or "drop"; ``dropped`` lists every path dropped, request by request.
        self.binding = binding or "error"
        # ``checks``: whether the model runs the prefix check; None: by the model's name.
        self.checks = checks
        self.dropped: list[list[str]] = []
        self.enforce = enforce
        self.compactions = compactions or Compactions()
        self.routes: dict[str, Any] = dict(routes or {})
        self.probes: list[tuple[str, str, Any]] = []
        self.refusals: list[str] = []
        self._script: deque[ScriptItem] = deque(script)
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self.requests: list[RecordedRequest] = []
        self.failures: list[BaseException] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> StubAPI:
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> StubAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # addresses

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the Anthropic SDK ``base_url``."""
        if self._server is None:
            raise RuntimeError("StubAPI is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_url(self) -> str:
        """``<url>/v1``: the OpenAI SDK ``base_url``."""
        return f"{self.url}/v1"

    # script

    def enqueue(self, *items: ScriptItem) -> StubAPI:
        with self._lock:
            self._script.extend(items)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies received so far, oldest first."""
        with self._lock:
            return [r.body for r in self.requests]

    @property
    def last_body(self) -> Any:
        with self._lock:
            return self.requests[-1].body

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """A local server's own endpoint: the ``routes`` answer (a callable gets the body;
        an ``ErrorReply`` is sent as it is), else 404."""
        with self._lock:
            self.probes.append((method, path, body))
            answer = self.routes.get(f"{method} {path}")
        if answer is None:
            return 404, {"detail": "Not Found"}
        if callable(answer):
            answer = answer(body)
        if isinstance(answer, ErrorReply):
            return answer.status, answer.body
        return 200, answer

    def model_checks(self, body: dict[str, Any]) -> bool:
        """Whether the model of a Messages request runs the prefix check (``api_binding``)."""
        return api_binding.checks(body.get("model")) if self.checks is None else self.checks

    def answer(self, request: RecordedRequest) -> tuple[int, Any, dict[str, str]]:
        """Record ``request`` and render the next script item for its path."""
        status, payload, headers, _ = self.respond(request)
        return status, payload, headers

    def respond(self, request: RecordedRequest) -> tuple[int, Any, dict[str, str], float | None]:
        """``answer`` plus how much of the body to send: None all, 0 nothing (``Drop``)."""
        with self._lock:
            self.requests.append(request)
            if request.path == ANTHROPIC_PATH:
                self.compactions.requests += 1
            if request.path not in (ANTHROPIC_PATH, OPENAI_PATH, RESPONSES_PATH):
                return 404, {"error": {"message": f"stub_api: no route {request.path}"}}, {}, None
            refused = api_rules.violation_text(request.body) or self.compactions.violation(
                request.body
            )
            if request.path == ANTHROPIC_PATH and self.enforce and refused is not None:
                self.refusals.append(refused)
                error = anthropic_invalid_request(refused)
                return error.status, error.body, dict(error.headers), None
            dropped: list[str] = []
            if request.path == ANTHROPIC_PATH and isinstance(request.body, dict):
                asked, unasked = api_binding.behavior(request.body, request.headers)
                checking = self.model_checks(request.body)
                bad = api_binding.failing(request.body) if checking else []
                refused = unasked or (
                    api_binding.REFUSAL.format(path=bad[0])
                    if bad and asked != "drop_block" and self.binding != "drop"
                    else None
                )
                if refused is not None:
                    self.refusals.append(refused)
                    error = anthropic_invalid_request(refused)
                    return error.status, error.body, dict(error.headers), None
                dropped = bad
                self.dropped.append(dropped)
            if request.path == ANTHROPIC_PATH and self.compactions.on_demand(request.body):
                # A compaction request: the server answers it; the script is not consulted.
                answer = self.compactions.summarize(request.body, next(self._numbers))
                return 200, answer, {"request-id": f"req_stub{next(_request_ids):06d}"}, None
            if not self._script:
                return 500, {"error": {"message": "stub_api: script exhausted"}}, {}, None
            item = self._script.popleft()
            number = next(self._numbers)
        try:
            while callable(item):
                item = item(request.body)
        except Exception as exc:
            with self._lock:
                self.failures.append(exc)
            return 500, {"error": {"message": f"stub_api: script item raised {exc!r}"}}, {}, None
        cut: float | None = None
        failure: MidStreamError | None = None
        if isinstance(item, Drop):
            return 0, None, {}, 0.0
        if isinstance(item, Truncated):
            item, cut = item.reply, item.share
        if isinstance(item, MidStreamError):
            failure, item = item, item.reply
        if isinstance(item, ErrorReply):
            return item.status, item.body, dict(item.headers), None
        if not isinstance(item, Reply):
            return 500, {"error": {"message": f"stub_api: bad script item {item!r}"}}, {}, None
        headers: dict[str, str] = {}
        if request.path == ANTHROPIC_PATH:
            headers = {"request-id": f"req_stub{next(_request_ids):06d}"}
            body = self.compactions.threshold(
                request.body, _anthropic_message(item, request.body, number)
            )
            if isinstance(request.body, dict) and self.model_checks(request.body):
                # The reply's thinking is bound to what the model was shown: the request
                # without the blocks dropped from it.
                shown = api_binding.without(request.body, dropped)
                api_binding.sign_reply(shown, body["content"])
                if dropped:
                    body["input_transformations"] = api_binding.transformations(dropped)
        elif request.path == RESPONSES_PATH:
            body = _openai_response(item, request.body, number)
        else:
            body = _openai_completion(item, request.body, number)
        streamed = isinstance(request.body, dict) and request.body.get("stream") is True
        if not streamed:
            return 200, body, headers, cut
        return 200, _event_stream(request, body, failure), headers, cut


def _event_stream(
    request: RecordedRequest, body: dict[str, Any], failure: MidStreamError | None
) -> EventStream:
    if request.path == ANTHROPIC_PATH:
        events = stub_sse.anthropic_events(body)
    elif request.path == RESPONSES_PATH:
        events = stub_sse.responses_events(body)
    else:
        events = stub_sse.chat_chunks(body, request.body)
    if failure is None:
        return EventStream(events)
    kept = events[: max(1, int(len(events) * failure.share))]
    if request.path == ANTHROPIC_PATH:
        error = stub_sse.anthropic_error_event(failure.kind, failure.message)
    elif request.path == RESPONSES_PATH:
        error = stub_sse.responses_error_event(failure.kind, failure.message, len(kept))
    else:
        error = stub_sse.chat_error_chunk(failure.kind, failure.message)
    return EventStream([*kept, error])


def closed_port_url() -> str:
    """A 127.0.0.1 URL on which nothing listens (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
