"""The model's window from a local server: asked of it, or read from its refusal, then kept.

Through the real openai SDK and ``stub_api``, answering the servers' own endpoints in their
shapes (llama.cpp ``/props``, vLLM ``/v1/models``, Ollama ``/api/ps`` and ``/api/show``, LM
Studio ``/api/v0/models``) and llama-cpp-python's refusal wording.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import stub_api as s
from context_compact import Compactor, Policy
from context_compact.agent.loop import Agent, Compaction, LoopEvent, Refusal
from context_compact.agent.tools import Workspace
from context_compact.providers.errors import is_context_overflow, overflow_figures
from context_compact.providers.local import ServerWindow, discover_window, find_tokenizer
from context_compact.providers.openai_chat import OpenAIChatProvider
from context_compact.sizing import text_tokens
from context_compact.store.files import FileStore
from stub_api import Reply, StubAPI

MODEL = "my-local-model"  # no table knows it: the policy's limit is 192,000
# The premise of these tests: a model no table knows, its window learned from the server.
pytestmark = pytest.mark.filterwarnings("ignore::context_compact.errors.UnknownModelWarning")


@pytest.mark.parametrize(
    ("routes", "tokens", "source"),
    [
        (s.llamacpp_props(2048), 2048, "llama.cpp /props"),
        (s.vllm_models(MODEL, 16_384), 16_384, "vLLM /v1/models max_model_len"),
        (s.ollama_ps(MODEL, 4096), 4096, "Ollama /api/ps context_length"),
        (s.ollama_show(131_072, num_ctx=8192), 8192, "Ollama /api/show parameters num_ctx"),
        (s.ollama_show(131_072), 131_072, "Ollama /api/show model_info"),
        (s.lmstudio_models(MODEL, 4096, 32_768), 4096, "LM Studio /api/v0/models loaded"),
    ],
)
def test_each_local_servers_own_report_of_its_window_is_read(
    routes: dict[str, Any], tokens: int, source: str
) -> None:
    with StubAPI(routes=routes) as api:
        found = discover_window(api.openai_url, MODEL)
    assert found is not None
    assert found.tokens == tokens
    assert found.source.startswith(source)


def test_a_server_that_says_nothing_gives_no_window_and_a_dead_one_gives_none_at_once() -> None:
    with StubAPI() as api:
        assert discover_window(api.openai_url, MODEL) is None
    started = time.monotonic()
    assert discover_window(s.closed_port_url() + "/v1", MODEL) is None
    assert time.monotonic() - started < 2


def test_llama_cpp_pythons_refusal_states_the_window_even_without_max_tokens() -> None:
    refusal = s.llama_cpp_python_refusal(2048, 3051, None)

    class Refused(Exception):
        status_code = 400
        body = refusal.body["error"]

    assert is_context_overflow(Refused("x"))
    figures = overflow_figures(Refused("x"))
    assert figures.window == 2048


@pytest.mark.parametrize(
    ("message", "window"),
    [
        ("request (3000 tokens) exceeds the available context size (2048 tokens), try", 2048),
        ("Requested tokens (3051) exceed context window of 2048", 2048),
        ("prompt has 9000 tokens > 8192 allowed", 8192),
    ],
)
def test_other_refusal_wordings_state_their_window(message: str, window: int) -> None:
    assert overflow_figures(RuntimeError(message)).window == window


def test_llama_cpp_python_is_asked_with_one_refused_prompt_when_nothing_else_says() -> None:
    routes = s.llama_cpp_python_tokenize(lambda text: len(text) // 3)
    refusal = s.llama_cpp_python_refusal(2048, 1_100_000, 1)
    with StubAPI(refusal, routes=routes) as api:
        found = discover_window(api.openai_url, MODEL, ask_refusal=True)
        assert len(api.requests) == 1
        assert api.requests[0].body["max_tokens"] == 1
    assert found == ServerWindow(2048, "the server's refusal of a longer prompt")


# -- the loop -----------------------------------------------------------------------------


def server(window: int, refusal: Callable[[int, int], s.ErrorReply]) -> Callable[[Any], Any]:
    """A model server at ``window`` tokens (4 characters a token): it refuses a longer prompt
    in its own words, and otherwise reads the next file."""
    turn = iter(range(10_000))

    def answer(body: Any) -> Any:
        size = len(json.dumps(body["messages"])) // 4
        if size >= window:
            return refusal(window, size)
        path = f"src/m{next(turn) % 12}.py"
        calls = (s.ToolCall("read_file", {"path": path}),)
        return Reply(text="Reading.", tool_calls=calls, input_tokens=size)

    return answer


def run_loop(
    root: Path, api: StubAPI, policy: Policy, turns: int = 40, session: str | None = None
) -> tuple[Compactor, list[LoopEvent]]:
    provider = OpenAIChatProvider(MODEL, api_key="sk-test", base_url=api.openai_url, timeout=5)
    compactor = Compactor(policy, FileStore(root), session=session)
    events: list[LoopEvent] = []
    workspace = Workspace(root, bash_timeout=10, read_roots=(compactor.store.root,))
    agent = Agent(provider, compactor, workspace, max_turns=turns, on_event=events.append)
    agent.run([], "Read the modules one by one.")
    provider.close()
    return compactor, events


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    for i in range(12):
        (work / "src" / f"m{i}.py").write_text(f"def f{i}(x):\n    return x\n" * 40)
    return work


def llama_cpp_python(window: int, size: int) -> s.ErrorReply:
    return s.llama_cpp_python_refusal(window, size, 8000)


def test_the_window_a_refusal_states_holds_every_later_turn_at_most_one_refusal(
    root: Path,
) -> None:
    with StubAPI(*[server(4096, llama_cpp_python)] * 60) as api:
        compactor, events = run_loop(root, api, Policy.default(model=MODEL))
    refusals = [e for e in events if isinstance(e, Refusal)]
    assert len(refusals) == 1
    assert compactor.window == (4096, "the server's refusal")
    window = [e.event for e in events if isinstance(e, Compaction) and e.event.stage == "window"]
    assert len(window) == 1
    assert "4,096 tokens (the server's refusal)" in window[0].note
    assert "warning" not in window[0].note
    # Until the refusal the output budget is the loop's 8,000; from the retry on, what the
    # window leaves above the limit.
    budgets = [b["max_tokens"] for b in api.bodies]
    refused = next(
        i for i, b in enumerate(api.bodies) if len(json.dumps(b["messages"])) >= 4 * 4096
    )
    assert budgets == [8000] * (refused + 1) + [4096 - 3072] * (len(budgets) - refused - 1)


def test_a_window_the_server_reports_is_used_from_the_first_request_no_refusal(
    root: Path,
) -> None:
    with StubAPI(*[server(4096, llama_cpp_python)] * 60, routes=s.llamacpp_props(4096)) as api:
        compactor, events = run_loop(root, api, Policy.default(model=MODEL))
    assert [e for e in events if isinstance(e, Refusal)] == []
    assert compactor.window == (4096, "llama.cpp /props default_generation_settings.n_ctx")
    assert compactor.limit == 3072


def test_an_explicit_limit_above_the_servers_window_is_a_warning_and_is_lowered(
    root: Path,
) -> None:
    policy = Policy.default(model=MODEL, context_limit=6000)
    with StubAPI(*[server(2048, llama_cpp_python)] * 60, routes=s.llamacpp_props(2048)) as api:
        compactor, events = run_loop(root, api, policy, turns=10)
    window = [e.event for e in events if isinstance(e, Compaction) and e.event.stage == "window"]
    assert "warning: context_limit 6,000 is above what the server takes" in window[0].note
    assert compactor.limit == 1536
    assert [e for e in events if isinstance(e, Refusal)] == []


def test_a_resumed_session_keeps_the_window_and_sends_the_same_view(root: Path) -> None:
    policy = Policy.default(model=MODEL)
    with StubAPI(*[server(4096, llama_cpp_python)] * 60) as api:
        compactor, events = run_loop(root, api, policy)
    assert len([e for e in events if isinstance(e, Refusal)]) == 1
    session = compactor.session_id
    assert session is not None
    resumed = Compactor(policy, FileStore(root), session=session)
    assert resumed.window == compactor.window == (4096, "the server's refusal")
    assert resumed.limit == compactor.limit == 3072
    assert json.dumps(resumed.view()) == json.dumps(compactor.view())


# -- exact counts where the server can count ------------------------------------------------


def server_count(text: str) -> int:
    """The stub server's tokenizer: a token per 3 characters, unlike our estimate."""
    return len(text) // 3 + 1


@pytest.mark.parametrize(
    "routes", [s.llamacpp_tokenize(server_count), s.llama_cpp_python_tokenize(server_count)]
)
def test_a_server_that_tokenizes_sizes_the_history_with_its_own_counts_each_text_asked_once(
    routes: dict[str, Any], tmp_path: Path
) -> None:
    with StubAPI(routes=routes) as api:
        provider = OpenAIChatProvider(MODEL, api_key="sk-test", base_url=api.openai_url)
        counter = provider.token_counter(text_tokens)
        assert counter is not None
        compactor = Compactor(
            Policy.default(model=MODEL), FileStore(tmp_path), token_counter=counter
        )
        assert compactor.tokens.backend == "custom"
        texts = ["a line of prose, then some more words", '{"json": [1, 2, 3]}', "x = 1\n" * 50]
        assert counter.count_many(texts) == [server_count(t) for t in texts]
        asked = len(api.probes)
        assert counter.count_many([*texts, texts[0]]) == [
            server_count(t) for t in [*texts, texts[0]]
        ]
        assert len(api.probes) == asked  # every count came from the cache
        provider.close()


def test_a_tokenizer_whose_server_went_away_answers_with_the_estimate_and_waits_to_retry() -> None:
    with StubAPI(routes=s.llamacpp_tokenize(server_count)) as api:
        provider = OpenAIChatProvider(MODEL, api_key="sk-test", base_url=api.openai_url)
        counter = provider.token_counter(text_tokens)
        provider.close()
    assert counter is not None
    started = time.monotonic()
    texts = [f"text number {i} " * 10 for i in range(20)]
    assert counter.count_many(texts) == [text_tokens(t) for t in texts]
    assert counter(texts[0]) == text_tokens(texts[0])
    assert counter.fallbacks == 21
    assert counter.requests == 20  # the second call did not ask the server again
    assert time.monotonic() - started < 3


def test_a_server_without_a_tokenize_endpoint_gives_no_counter() -> None:
    with StubAPI() as api:
        provider = OpenAIChatProvider(MODEL, api_key="sk-test", base_url=api.openai_url)
        assert provider.token_counter(text_tokens) is None
        provider.close()


def test_vllms_tokenize_takes_the_model_and_its_prompt() -> None:
    routes = {"POST /tokenize": lambda body: {"count": server_count(body["prompt"]), "tokens": []}}
    with StubAPI(routes=routes) as api:
        endpoint = find_tokenizer(api.openai_url, MODEL)
        assert endpoint is not None and endpoint.style == "vllm"
        assert api.probes[-1][2]["model"] == MODEL


def test_a_server_that_refuses_assistant_text_parts_gets_strings_from_then_on() -> None:
    schema_refusal = s.ErrorReply(
        500,
        {
            "error": {
                "message": "1 validation error: {'loc': ('body', 'messages', 1, "
                "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should "
                "be a valid string'}"
            }
        },
    )
    with StubAPI(schema_refusal, Reply(text="ok"), Reply(text="ok again")) as api:
        provider = OpenAIChatProvider(MODEL, api_key="sk-test", base_url=api.openai_url)
        history = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            {"role": "user", "content": "again"},
        ]
        for _ in range(2):
            reply = provider.complete(system="", messages=history, tools=[], max_tokens=8)
        provider.close()
    assert reply.text == "ok again"
    sent = [b["messages"][1]["content"] for b in api.bodies]
    assert sent == [[{"type": "text", "text": "hello"}], "hello", "hello"]


def test_a_chat_template_that_joins_strings_gets_every_text_message_as_one_string() -> None:
    # llama-cpp-python's answer when the model's chat template (SmolLM2's) meets a list.
    template_refusal = s.ErrorReply(
        500, {"error": {"message": 'can only concatenate str (not "list") to str'}}
    )
    with StubAPI(template_refusal, Reply(text="ok")) as api:
        provider = OpenAIChatProvider(MODEL, api_key="sk-test", base_url=api.openai_url)
        question = [{"type": "text", "text": "the summary"}, {"type": "text", "text": " and?"}]
        history = [{"role": "user", "content": question}]
        reply = provider.complete(system="", messages=history, tools=[], max_tokens=8)
        provider.close()
    assert reply.text == "ok"
    sent = [b["messages"][0]["content"] for b in api.bodies]
    assert sent == [question, "the summary and?"]


def test_check_model_names_an_unreachable_server_in_one_line() -> None:
    from click.testing import CliRunner

    from context_compact.cli import main

    url = s.closed_port_url() + "/v1"
    result = CliRunner().invoke(main, ["check-model", "--base-url", url, "--model", MODEL])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot reach the server at {url}")
    assert len(result.output.strip().splitlines()) == 1


def test_check_model_reports_the_window_the_refusal_and_the_estimates_error() -> None:
    from click.testing import CliRunner

    from context_compact.cli import main

    routes = {**s.llamacpp_props(2048), **s.llamacpp_tokenize(server_count)}
    with StubAPI(s.llama_cpp_python_refusal(2048, 4096, 1), routes=routes) as api:
        args = ["check-model", "--base-url", api.openai_url, "--model", MODEL, "--turns", "0"]
        result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["window"] == {
        "tokens": 2048,
        "source": "llama.cpp /props default_generation_settings.n_ctx",
    }
    assert report["refusal"]["recognized"] is True
    assert report["refusal"]["window_stated"] == 2048
    assert report["estimate"]["server_counts"] is True
    assert set(report["estimate"]["samples"]) == {"prose", "code", "json", "log"}


# -- servers that lie ----------------------------------------------------------------------

LIES: list[tuple[str, dict[str, Any]]] = [
    ("Ollama /api/show parameters num_ctx", s.ollama_show(0, num_ctx="²")),  # type: ignore[arg-type]
    ("Ollama /api/show parameters num_ctx", s.ollama_show(0, num_ctx=0)),
    ("llama.cpp /props", s.llamacpp_props(10**19)),
    ("llama.cpp /props", s.llamacpp_props(0)),
    ("llama.cpp /props", s.llamacpp_props(100)),
    ("llama.cpp /props", s.llamacpp_props("4096 tokens")),  # type: ignore[arg-type]
    ("vLLM /v1/models max_model_len", s.vllm_models(MODEL, -5)),
    ("vLLM /v1/models max_model_len", s.vllm_models(MODEL, 2.5e9)),  # type: ignore[arg-type]
    ("Ollama /api/ps context_length", s.ollama_ps(MODEL, True)),  # type: ignore[arg-type]
    ("LM Studio /api/v0/models", s.lmstudio_models(MODEL, 10**8 + 1, 0)),
]


@pytest.mark.parametrize(("where", "routes"), LIES)
def test_a_window_a_server_states_out_of_bounds_is_not_used_and_named_in_one_line(
    where: str, routes: dict[str, Any]
) -> None:
    odd: list[str] = []
    with StubAPI(routes=routes) as api:
        assert discover_window(api.openai_url, MODEL, odd=odd) is None
    assert odd and odd[0].startswith(where) and "not a context window" in odd[0]
    assert all("\n" not in line and len(line) < 200 for line in odd)


def test_an_odd_value_is_skipped_and_the_next_source_of_the_same_server_is_read() -> None:
    odd: list[str] = []
    with StubAPI(routes=s.ollama_show(8192, num_ctx=0)) as api:
        found = discover_window(api.openai_url, MODEL, odd=odd)
    assert found is not None and found.tokens == 8192 and "model_info" in found.source
    assert len(odd) == 1 and "num_ctx says 0:" in odd[0]


@pytest.mark.parametrize(
    ("routes", "said"),
    [
        ({**s.ollama_show(0, num_ctx="²"), **s.llamacpp_tokenize(server_count)}, "num_ctx"),  # type: ignore[arg-type]
        ({**s.llamacpp_props(10**19), **s.llamacpp_tokenize(server_count)}, "n_ctx"),
        ({**s.llamacpp_props(0), **s.llamacpp_tokenize(server_count)}, "n_ctx"),
        (
            {**s.llamacpp_props(2048), **s.llamacpp_tokenize(lambda t: 0 if len(t) > 5 else 2)},
            "counted 0 tokens",
        ),
    ],
)
def test_check_model_against_a_lying_server_reports_the_odd_value_in_one_line(
    routes: dict[str, Any], said: str
) -> None:
    from click.testing import CliRunner

    from context_compact.cli import main

    with StubAPI(s.llama_cpp_python_refusal(2048, 4096, 1), routes=routes) as api:
        args = ["check-model", "--base-url", api.openai_url, "--model", MODEL, "--turns", "0"]
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and result.exception is None, result.output
    odd = [line for line in result.stdout.splitlines() if line.startswith("odd value: ")]
    assert len(odd) >= 1 and said in odd[0], result.stdout
    assert "cuts prompts silently" not in result.stdout
