"""What a compaction tells the outside: one OpenTelemetry span per compacting call, with the
GenAI semantic conventions' attributes (the SDK's in-memory exporter), and log records on
one logger per layer that print nothing unless the application configures logging."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from context_compact import Compactor, MemoryStore, Policy

trace = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

EXPORTER = InMemorySpanExporter()
_provider = sdk_trace.TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(_provider)

REQUEST = "read every log part"


def turn(k: int) -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": f"t{k}", "name": "read_log", "input": {"part": k}}
    text = f"needle-{k}\n" + "log line status=ok\n" * 150
    return [
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": text}],
        },
    ]


def loop(cc: Compactor, turns: int) -> int:
    """The docs' loop; how many calls compacted."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": REQUEST}]
    compacting = 0
    for k in range(turns):
        before = len(cc.events)
        messages = cc.prepare(messages + turn(k), REQUEST)
        compacting += len(cc.events) > before
    return compacting


def test_each_compacting_call_is_one_span_with_the_genai_attributes() -> None:
    EXPORTER.clear()
    cc = Compactor(Policy.default(context_limit=5_000, model="claude-test"), MemoryStore())
    compacting = loop(cc, 25)
    spans = EXPORTER.get_finished_spans()
    assert compacting > 1
    assert len(spans) == compacting
    first = spans[0]
    assert first.name == "compact_context claude-test"
    attributes = dict(first.attributes or {})
    assert attributes["gen_ai.operation.name"] == "compact_context"
    assert attributes["gen_ai.request.model"] == "claude-test"
    assert attributes["gen_ai.conversation.id"] == cc.session_id
    assert attributes["context_compact.trigger"] == "prepare"
    assert attributes["context_compact.engine"] == "default"
    assert attributes["context_compact.tokens_before"] > attributes["context_compact.tokens_after"]
    assert set(attributes["context_compact.stages"]) <= {e.stage for e in cc.events}
    stages = [s for span in spans for s in (span.attributes or {})["context_compact.stages"]]
    assert stages == [e.stage for e in cc.events]


def test_a_call_that_compacts_nothing_makes_no_span() -> None:
    EXPORTER.clear()
    cc = Compactor(Policy.default(context_limit=200_000), MemoryStore())
    loop(cc, 3)
    assert cc.events == [] and EXPORTER.get_finished_spans() == ()


def test_compaction_events_are_debug_records_of_the_compactor_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="context_compact"):
        cc = Compactor(Policy.default(context_limit=5_000), MemoryStore())
        loop(cc, 25)
    records = [r for r in caplog.records if r.name == "context_compact.compactor"]
    assert [r.getMessage() for r in records] == [str(e) for e in cc.events]
    assert {r.levelno for r in records} == {logging.DEBUG}


def test_a_failing_summarizer_is_a_warning_that_prints_nothing_by_default(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Down for the call made ahead and for the trigger's call again: a summary made ahead that
    # failed is asked for again at the trigger, and only a failure there falls back.
    failures = [RuntimeError("summarizer down"), RuntimeError("summarizer down")]

    def broken(messages: list[Any]) -> str:
        if failures:
            raise failures.pop()
        return "a summary"

    with caplog.at_level(logging.WARNING, logger="context_compact"):
        cc = Compactor(Policy.default(context_limit=5_000), MemoryStore(), broken)
        loop(cc, 25)
    assert "summary_fallback" in {e.stage for e in cc.events}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and all(r.name == "context_compact.compactor" for r in warnings)
    assert capsys.readouterr().err == ""
    assert any(
        isinstance(h, logging.NullHandler) for h in logging.getLogger("context_compact").handlers
    )
