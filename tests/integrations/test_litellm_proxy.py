"""``CompactionHook`` named in a LiteLLM proxy's ``config.yaml``, through the real proxy process
on 127.0.0.1 in front of the stub, with the real SDKs as clients: the ``openai`` SDK's
``chat.completions`` (streamed and not) and the ``anthropic`` SDK's ``messages`` (streamed and
not, through the proxy's ``/v1/messages``, to Anthropic and to models LiteLLM reaches by the
Responses API or chat completions). Loops of 40 tool steps (16 for the other routes) with
results of 2-6 KB, at ``Policy.default(context_limit=8000)`` and a stub that refuses a request
over 8000 tokens, all at once: no request refused, every request valid, the last far below
the history, every result recalled from the store the proxy wrote, each usage observed, each
conversation in a session of its own; a refusal recovered by the conversation's next request;
and without the hook the same loop is refused once its history passes the window.

The proxy starts once for the module (with a second one, without the hook, beside it). It is
skipped when it cannot start here; ``CC_REQUIRE_LITELLM_PROXY=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

from proxy_loops import (  # noqa: E402
    LIMIT,
    SHORT,
    STEPS,
    Model,
    anthropic_loop,
    openai_loop,
    result,
    size,
)
from proxy_process import STARTUP_SECONDS, Proxy, ProxyUnavailable, launch, ready  # noqa: E402

from context_compact import Compactor, Policy, SqliteStore, check  # noqa: E402
from context_compact.formats import openai_chat, openai_responses  # noqa: E402
from context_compact.integrations.conversations import Conversations  # noqa: E402
from stub_api import StubAPI  # noqa: E402

# One worker runs the module: each would start its own two proxies.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("litellm-proxy")]

# -- the proxy, once for the module -----------------------------------------------------------


@dataclass
class Proxies:
    stub: StubAPI
    model: Model
    hooked: Proxy
    bare: Proxy
    deadline: float


def _unavailable(error: ProxyUnavailable) -> None:
    if os.environ.get("CC_REQUIRE_LITELLM_PROXY") == "1":
        pytest.fail(f"CC_REQUIRE_LITELLM_PROXY=1 and {error}")
    pytest.skip(str(error))


@pytest.fixture(scope="module")
def proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxies]:
    """Both proxies, started at once; the one without the hook is waited for only by the
    loops it serves (``bare``), which the hooked one's loops run beside."""
    model = Model()
    folder = tmp_path_factory.mktemp("litellm-proxy")
    with StubAPI(*[model] * 20_000) as stub:
        hooked, bare = (
            launch(folder / name, stub.openai_url, stub.url, hooked=name == "hooked", limit=LIMIT)
            for name in ("hooked", "bare")
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        try:
            ready(hooked, deadline)
        except ProxyUnavailable as error:
            bare.stop()
            _unavailable(error)
        try:
            yield Proxies(stub, model, hooked, bare, deadline)
        finally:
            hooked.stop()
            bare.stop()


# Every client the loops make, closed once they are done: an unclosed one's sockets would be
# collected, and warned about, in whichever later test of this worker the collector runs.
_CLIENTS: list[Any] = []


def _openai(proxy: Proxy) -> Any:
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=proxy.key, max_retries=0)
    _CLIENTS.append(client)
    return client


def _anthropic(proxy: Proxy) -> Any:
    client = anthropic.Anthropic(base_url=proxy.url, api_key=proxy.key, max_retries=0)
    _CLIENTS.append(client)
    return client


# -- what the proxy's store and instrumented compactors hold ----------------------------------


def _session(proxy: Proxy, key: str) -> Compactor:
    conversations = Conversations(
        Policy.default(context_limit=LIMIT), SqliteStore(proxy.db, root=proxy.folder / "files")
    )
    return conversations.get(key)


def lost(proxy: Proxy, key: str, name: str) -> list[int]:
    """The results of loop ``name`` that a recall of their word does not give back whole."""
    session = _session(proxy, key)
    return [
        k
        for k in range(SHORT.get(name, STEPS))
        if result(name, k) not in session.recall(f"needle-{name}-{k:03d}", limit=50_000).text
    ]


def observed(proxy: Proxy, session: str) -> set[int]:
    lines = proxy.observed.read_text().splitlines() if proxy.observed.exists() else []
    return {tokens for sid, tokens in map(json.loads, lines) if sid == session}


def invalid(bodies: list[Any]) -> list[str]:
    def canonical(body: Any) -> list[Any]:
        if "input" in body:
            return openai_responses.to_canonical(body["input"])[1]
        if str(body.get("model", "")).startswith("claude"):
            return list(body["messages"])
        return openai_chat.to_canonical(body["messages"])[1]

    return [f"request {i}: {v}" for i, b in enumerate(bodies) for v in check(canonical(b))]


def full(history: list[Any]) -> int:
    return size({"messages": history})


# -- the tests: every loop at once, each a conversation of its own -----------------------------

LOOPS: dict[str, Callable[[Proxy, str], list[Any]]] = {
    # Each keyed another way: the header, the body's metadata, the body field, the first call.
    "chat": lambda p, n: openai_loop(_openai(p), n, extra_headers={"x-litellm-session-id": n}),
    "chat-stream": lambda p, n: openai_loop(
        _openai(p), n, stream=True, extra_body={"metadata": {"session_id": n}}
    ),
    "messages": lambda p, n: anthropic_loop(
        _anthropic(p), n, extra_headers={"x-litellm-session-id": n}
    ),
    "messages-stream": lambda p, n: anthropic_loop(_anthropic(p), n, stream=True),
    # /v1/messages to models that are not Anthropic's: LiteLLM sends the request on in the
    # Responses API (OpenAI) or chat completions (vLLM), a call inside the hook's call.
    "messages-to-openai": lambda p, n: anthropic_loop(
        _anthropic(p), n, model="gpt-test", extra_body={"litellm_session_id": n}
    ),
    "messages-to-vllm": lambda p, n: anthropic_loop(
        _anthropic(p), n, model="local-test", stream=True, extra_headers={"x-litellm-session-id": n}
    ),
    # And the other way: chat completions to an Anthropic model.
    "chat-to-anthropic": lambda p, n: openai_loop(
        _openai(p), n, model="claude-test", extra_headers={"x-litellm-session-id": n}
    ),
}
KEYS = {name: name for name in LOOPS} | {"messages-stream": "tool-call-messages-stream_000"}
# The stub's window is below the hook's limit for these: the first request over that window is
# refused, the client sends it again, and the hook, having learned the window, compacts it.
REFUSED: dict[str, Callable[[Proxy, str], list[Any]]] = {
    "refused-chat": lambda p, n: openai_loop(
        _openai(p), n, retry=True, extra_headers={"x-litellm-session-id": n}
    ),
    "refused-messages": lambda p, n: anthropic_loop(
        _anthropic(p), n, stream=True, retry=True, extra_headers={"x-litellm-session-id": n}
    ),
}


@dataclass
class Run:
    history: list[Any] | None
    error: BaseException | None


@pytest.fixture(scope="module")
def runs(proxies: Proxies) -> dict[str, Run]:
    """Every loop, run at once: the hooked proxy serves them all concurrently, and the proxy
    without the hook two of them."""
    proxies.model.windows.update(dict.fromkeys(REFUSED, LIMIT // 2))
    work: dict[str, Callable[[], list[Any]]] = {
        name: functools.partial(loop, proxies.hooked, name)
        for name, loop in (LOOPS | REFUSED).items()
    } | {f"bare-{name}": functools.partial(bare, proxies, name) for name in ("chat", "messages")}

    def run(name: str) -> Run:
        try:
            return Run(work[name](), None)
        except Exception as error:
            return Run(None, error)

    try:
        with ThreadPoolExecutor(len(work)) as pool:
            return dict(zip(work, pool.map(run, work), strict=True))
    finally:
        while _CLIENTS:
            _CLIENTS.pop().close()


def bare(proxies: Proxies, loop: str) -> list[Any]:
    """Loop ``loop`` through the proxy without the hook, once it is up."""
    ready(proxies.bare, proxies.deadline)
    return LOOPS[loop](proxies.bare, f"bare-{loop}")


def _history(run: Run) -> list[Any]:
    if run.error is not None:
        raise run.error
    assert run.history is not None
    return run.history


@pytest.mark.parametrize("loop", list(LOOPS))
def test_a_tool_loop_through_the_proxy_is_never_refused_and_nothing_is_lost(
    proxies: Proxies, runs: dict[str, Run], loop: str
) -> None:
    history = _history(runs[loop])
    bodies = proxies.model.bodies(loop)
    assert len(bodies) == SHORT.get(loop, STEPS) + 1
    assert proxies.model.refused(loop) == []
    assert proxies.stub.refusals == []  # the API's own rules (Messages)
    assert invalid(bodies) == []
    assert max(size(b) for b in bodies) <= LIMIT
    assert size(bodies[-1]) < full(history) // 4
    assert lost(proxies.hooked, KEYS[loop], loop) == []
    # Each request's usage (the stub reports its size) calibrated the conversation's budget;
    # a conversation keyed by its first tool call has no session before that call.
    session = _session(proxies.hooked, KEYS[loop]).session_id
    assert session is not None
    first = 1 if loop == "messages-stream" else 0
    assert {size(b) for b in bodies[first:]} <= observed(proxies.hooked, session)


def test_conversations_served_at_once_land_in_sessions_of_their_own(
    proxies: Proxies, runs: dict[str, Run]
) -> None:
    sessions = {name: _session(proxies.hooked, KEYS[name]) for name in LOOPS}
    assert len({s.session_id for s in sessions.values()}) == len(LOOPS)
    assert sessions["chat"].session_id == "conv-chat"
    for name, session in sessions.items():
        _history(runs[name])
        others = [n for n in LOOPS if n != name]
        assert session.recall(f"needle-{name}-000").text
        assert [n for n in others if session.recall(f"needle-{n}-000").text] == []


@pytest.mark.parametrize("loop", list(REFUSED))
def test_a_refusal_is_recovered_by_the_conversations_next_request(
    proxies: Proxies, runs: dict[str, Run], loop: str
) -> None:
    _history(runs[loop])
    bodies = proxies.model.bodies(loop)
    refused = proxies.model.refused(loop)
    assert len(refused) == 1
    assert max(size(b) for b in bodies[refused[0] + 1 :]) <= LIMIT // 2
    assert invalid(bodies) == []
    assert lost(proxies.hooked, loop, loop) == []


@pytest.mark.parametrize("loop", ["chat", "messages"])
def test_without_the_hook_the_same_loop_is_refused_once_the_history_passes_the_window(
    proxies: Proxies, runs: dict[str, Run], loop: str
) -> None:
    name = f"bare-{loop}"
    refusal = openai.BadRequestError if loop == "chat" else anthropic.BadRequestError
    if isinstance(runs[name].error, ProxyUnavailable):
        _unavailable(runs[name].error)
    with pytest.raises(refusal, match=r"context length|prompt is too long"):
        _history(runs[name])
    bodies = proxies.model.bodies(name)
    assert proxies.model.refused(name) == [len(bodies) - 1]
    assert 3 < len(bodies) < STEPS
