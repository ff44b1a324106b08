"""The adapter snippets of docs/frameworks.md run as written, pointed at the stub API through
the SDKs' own environment variables: each calls its tool, prints the answer, sends valid ones."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_compact import check
from context_compact.providers.openai_chat import from_openai
from stub_api import Reply, StubAPI, ToolCall

PAGE = Path(__file__).resolve().parents[2] / "docs/frameworks.md"


def snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)


def _script() -> list[Reply]:
    call = ToolCall("read_file", {"path": "README.md"}, id="call_readme")
    return [Reply(tool_calls=(call,)), Reply(text="It is a README about pelicans.")]


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[StubAPI]:
    (tmp_path / "README.md").write_text("# Pelicans\nThey fish.\n")
    monkeypatch.chdir(tmp_path)
    with StubAPI(*_script()) as api:
        for name, value in {
            "ANTHROPIC_API_KEY": "sk-stub",
            "ANTHROPIC_BASE_URL": api.url,
            "OPENAI_API_KEY": "sk-stub",
            "OPENAI_BASE_URL": api.openai_url,
            "LANGSMITH_TRACING": "false",
        }.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("ANTHROPIC_API_URL", raising=False)
        yield api


def _run(code: str, capsys: pytest.CaptureFixture[str]) -> str:
    exec(compile(code, str(PAGE), "exec"), {"__name__": "readme_snippet"})
    return capsys.readouterr().out


def _tool_result_sent(body: Any) -> bool:
    return "They fish." in str(body["messages"][-1])


def test_the_nine_snippets_are_on_the_frameworks_page() -> None:
    found = snippets()
    assert len(found) == 9
    assert ["CompactionMiddleware" in found[0], "CompactionCapability" in found[1]] == [True, True]
    assert "CompactingSession" in found[2]
    assert "CompactionHook" in found[3]
    assert "compaction_hooks.py" in found[4]
    assert "compaction_callback" in found[5]
    assert "CompactingFunctionAgent" in found[6]
    assert "CompactionPlugin" in found[7]
    assert "CompactionHooks" in found[8]


def test_the_langchain_snippet_runs_as_written(
    stub: StubAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langchain_anthropic")
    assert _run(snippets()[0], capsys).strip() == "It is a README about pelicans."
    assert [check(b["messages"]) for b in stub.bodies] == [[], []]
    assert _tool_result_sent(stub.bodies[1])


def test_the_pydantic_ai_snippet_runs_as_written(
    stub: StubAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pydantic_ai")
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        assert _run(snippets()[1], capsys).strip() == "It is a README about pelicans."
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert [check(b["messages"]) for b in stub.bodies] == [[], []]
    assert _tool_result_sent(stub.bodies[1])


def test_the_openai_agents_snippet_runs_as_written(
    stub: StubAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = pytest.importorskip("agents")
    # The stub serves Chat Completions, and tests never reach the tracing endpoint.
    agents.set_default_openai_api("chat_completions")
    agents.set_tracing_disabled(True)
    try:
        assert _run(snippets()[2], capsys).strip() == "It is a README about pelicans."
    finally:
        agents.set_default_openai_api("responses")
        agents.set_tracing_disabled(False)
    assert [check(from_openai(b["messages"])[1]) for b in stub.bodies] == [[], []]
    assert _tool_result_sent(stub.bodies[1])


@pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier")
@pytest.mark.usefixtures("tiktoken_dir_kept")
def test_the_litellm_snippet_runs_as_written(
    stub: StubAPI, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("ANTHROPIC_API_BASE", stub.url)
    litellm = pytest.importorskip("litellm")
    monkeypatch.setattr(litellm, "callbacks", [])
    assert _run(snippets()[3], capsys).strip() == "It is a README about pelicans."
    assert [check(b["messages"]) for b in stub.bodies] == [[], []]
    assert _tool_result_sent(stub.bodies[1])


@pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier")
def test_the_proxy_module_builds_the_hook_its_config_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("litellm")
    from context_compact.integrations.litellm import CompactionHook

    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "compaction_hooks"}
    exec(compile(snippets()[4], str(PAGE), "exec"), namespace)
    assert isinstance(namespace["hook"], CompactionHook)
    config = re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert [c for c in config if "callbacks: compaction_hooks.hook" in c] != []


def test_the_smolagents_snippet_runs_as_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("smolagents")
    import runpy

    (tmp_path / "README.md").write_text("# Pelicans\nThey fish.\n")
    monkeypatch.chdir(tmp_path)
    call = ToolCall("read_file", {"path": "README.md"}, id="call_readme")
    done = ToolCall("final_answer", {"answer": "It is a README about pelicans."}, id="call_end")
    with StubAPI(Reply(tool_calls=(call,)), Reply(tool_calls=(done,))) as stub:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
        monkeypatch.setenv("OPENAI_BASE_URL", stub.openai_url)
        # smolagents reads a tool's source back from its file: the snippet runs from one.
        (tmp_path / "snippet.py").write_text(snippets()[5])
        runpy.run_path(str(tmp_path / "snippet.py"), run_name="readme_snippet")
    assert capsys.readouterr().out.strip().splitlines()[-1] == "It is a README about pelicans."
    assert "They fish." in str(stub.bodies[1]["messages"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_llamaindex_snippet_runs_as_written(
    stub: StubAPI, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_BASE", stub.openai_url)  # LlamaIndex's own variable
    pytest.importorskip("llama_index.core")
    pytest.importorskip("llama_index.llms.openai", reason="pip install llama-index-llms-openai")
    namespace: dict[str, Any] = {"__name__": "readme_snippet"}
    exec(compile(snippets()[6], str(PAGE), "exec"), namespace)
    asyncio.run(namespace["main"]())
    assert capsys.readouterr().out.strip() == "It is a README about pelicans."
    assert _tool_result_sent({"messages": stub.bodies[1]["messages"]})


@pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier")
def test_the_adk_snippet_runs_as_written(
    stub: StubAPI, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    pytest.importorskip("google.adk", reason="the adk extra is not installed")
    assert _run(snippets()[7], capsys).strip() == "It is a README about pelicans."
    assert [check(from_openai(b["messages"])[1]) for b in stub.bodies] == [[], []]
    assert _tool_result_sent(stub.bodies[1])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_crewai_snippet_runs_as_written(
    stub: StubAPI, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # crewai's import sets TOKENIZERS_PARALLELISM for the process: given back after the test.
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", os.environ.get("TOKENIZERS_PARALLELISM", "false"))
    pytest.importorskip("crewai", reason="crewai is not installed (not in [dev])")
    for name in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED"):
        monkeypatch.setenv(name, "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")
    namespace: dict[str, Any] = {"__name__": "readme_snippet"}
    try:
        exec(compile(snippets()[8], str(PAGE), "exec"), namespace)
    finally:
        if "hooks" in namespace:
            namespace["hooks"].unregister()
    assert capsys.readouterr().out.strip().splitlines()[-1] == "It is a README about pelicans."
    assert [check(from_openai(b["messages"])[1]) for b in stub.bodies] == [[], []]
    assert _tool_result_sent(stub.bodies[1])
