"""The real peers behind the bench (``peers/``), and their models (``strategies/``).

Each adapter converts a short session to its peer's native types and back unchanged, and runs
the peer through the replay; each model agrees with its real peer within the bench's stated
tolerance on a fixed synthetic session. The peers are the ``peers`` extra: a test whose peer
is not installed is skipped with the reason (OpenHands needs Python 3.12+; it runs through the
bench's worker when ``CONTEXT_COMPACT_PEERS_PYTHON`` names an interpreter that has it).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from context_compact.invariants import check
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.replay import replay
from context_compact.testing.script import from_workload
from context_compact.testing.workload import synthetic_session
from context_compact_bench.peers.run import (
    ENV_PYTHON,
    MODELS,
    QUIET,
    TOLERANCE,
    Worker,
    _probe,
    aggregate,
    checks,
    replay_ours,
    replay_peer,
)

SHORT: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix the failing test in parser.py"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Look first.", "signature": "sig-1"},
            {"type": "text", "text": "Reading the file and running the tests."},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "parser.py"}},
            {"type": "tool_use", "id": "t2", "name": "bash", "input": {"cmd": "pytest -q"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "def parse(s):\n    return s"},
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "content": "FAILED test_parse - AssertionError",
                "is_error": True,
            },
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "parse() drops the strip."}]},
    {"role": "user", "content": "Go ahead, but keep the signature."},
]


def langchain_round_trip(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from context_compact_bench.peers.langchain import Converter

    convert = Converter()
    natives = [n for m in messages for n in convert.to_native(m)]
    return convert.to_ours(natives)


def llamaindex_round_trip(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from context_compact_bench.peers.llamaindex import Converter, to_native

    return Converter().to_ours([n for m in messages for n in to_native(m)])


def test_the_langchain_adapter_gives_back_the_session_it_was_given() -> None:
    pytest.importorskip("langchain.agents.middleware", reason="the peers extra is not installed")
    assert langchain_round_trip(SHORT) == SHORT


def test_the_llamaindex_adapter_gives_back_the_session_it_was_given() -> None:
    pytest.importorskip("llama_index.core", reason="llama-index-core (peers extra) not installed")
    assert llamaindex_round_trip(SHORT) == SHORT


def test_the_openhands_adapter_gives_back_the_session_it_was_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if sys.version_info < (3, 12):
        pytest.skip("openhands-sdk needs Python 3.12+")
    for key, value in QUIET.items():  # no banner, and litellm never reaches the network
        monkeypatch.setenv(key, value)
    pytest.importorskip("openhands.sdk", reason="openhands-sdk (peers extra) not installed")
    from openhands.sdk.event import LLMConvertibleEvent

    from context_compact_bench.peers.openhands import OpenHandsCondenser, to_ours

    peer = OpenHandsCondenser(BenchSummarizer(), 12_500)
    events = [e for m in SHORT for e in peer.events.of(m)]
    assert to_ours(LLMConvertibleEvent.events_to_messages(events)) == SHORT


SESSION = from_workload(synthetic_session(120, 0))
IN_PROCESS = ("langchain-summarization", "langchain-context-editing", "llamaindex-summary-buffer")
NEEDS = {
    "langchain-summarization": "langchain.agents.middleware",
    "langchain-context-editing": "langchain.agents.middleware",
    "llamaindex-summary-buffer": "llama_index.core",
}


@pytest.mark.parametrize("name", IN_PROCESS)
def test_each_real_peer_replays_a_session_into_valid_requests(name: str) -> None:
    pytest.importorskip(NEEDS[name], reason="the peers extra is not installed")
    from context_compact_bench.peers.run import peer

    summarizer = BenchSummarizer()
    impl = peer(name, summarizer, 6_000, "")
    views: list[list[dict[str, Any]]] = []
    script = from_workload(synthetic_session(30, 1))
    result = replay(
        impl,
        script,
        overhead_tokens=0,
        window=6_000,
        summarizer=summarizer,
        on_turn=lambda i: views.append(impl._returned),
    )
    assert result.error is None
    assert all(check(v) == [] for v in views)
    assert len(impl.peer_ms) == script.turns + 1


@pytest.mark.parametrize("name", IN_PROCESS)
def test_each_model_stays_within_tolerance_of_its_real_peer(name: str) -> None:
    pytest.importorskip(NEEDS[name], reason="the peers extra is not installed")
    rows = [replay_peer(name, SESSION, 12_500), replay_ours(MODELS[name], SESSION, 12_500)]
    (verdict,) = checks(aggregate(rows))
    assert verdict["within_tolerance"], (TOLERANCE, verdict["fields"])


def test_the_openhands_model_stays_within_tolerance_of_the_real_condenser() -> None:
    python = os.environ.get(ENV_PYTHON)
    if python is None or _probe(python) is not None:
        pytest.skip(f"set {ENV_PYTHON} to a Python 3.12+ with openhands-sdk to run OpenHands")
    worker = Worker(python)
    try:
        real = worker.run_synthetic("openhands-condenser", 120, 0, 12_500)
    finally:
        worker.close()
    rows = [real, replay_ours(MODELS["openhands-condenser"], SESSION, 12_500)]
    (verdict,) = checks(aggregate(rows))
    assert verdict["within_tolerance"], (TOLERANCE, verdict["fields"])


def test_a_peer_that_cannot_run_here_is_one_line_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if sys.version_info >= (3, 12):
        pytest.skip("OpenHands may import here; the line is for interpreters below 3.12")
    from context_compact_bench.peers.run import runners

    monkeypatch.delenv(ENV_PYTHON, raising=False)
    # The bench quiets OpenHands' import through the environment; the test puts it back.
    monkeypatch.setenv("OPENHANDS_SUPPRESS_BANNER", "1")
    skipped: list[str] = []
    found, workers = runners(None, skipped)
    assert "openhands-condenser" not in found and workers == []
    (line,) = [s for s in skipped if s.startswith("openhands-condenser")]
    assert "needs Python 3.12+" in line and "--peers-python" in line and "\n" not in line
