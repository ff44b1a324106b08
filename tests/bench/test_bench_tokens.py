"""``bench --tokens``: the counters' error on the recorded sessions before and after
calibration, and one line (exit 0) when no exact tokenizer is installed."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from context_compact.sizing import exact_counter
from context_compact.testing.trajectories import default_trajectories
from context_compact_bench.command import bench

HAS_BPE = (exact_counter() or ("estimate",))[0] == "bpe-openai"
needs_bpe = pytest.mark.skipif(not HAS_BPE, reason="bpe-openai is not installed")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def hide_tokenizers(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes import and find_spec both say "not installed".
    for name in ("bpe_openai", "bpe_openai._bindings", "tiktoken", "tiktoken.load"):
        monkeypatch.setitem(sys.modules, name, None)


@needs_bpe
@pytest.mark.skipif(not default_trajectories().is_dir(), reason="no recorded sessions here")
def test_bench_tokens_reports_the_error_before_and_after_calibration(tmp_path: Path) -> None:
    out = tmp_path / "tokens.json"
    result = CliRunner().invoke(bench, ["--tokens", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "request, kinds" in result.output
    data = json.loads(out.read_text())
    assert data["messages"] > 1_000 and data["exact"].startswith("o200k_base")
    # Calibration takes out the bias: the total error shrinks and fewer messages are
    # undercounted by more than 10%.
    assert abs(data["after"]["total"]) < abs(data["before"]["total"])
    assert data["after"]["under_10"] < data["before"]["under_10"]


def test_bench_tokens_without_an_exact_tokenizer_says_so_and_exits_0(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_network: list[Any]
) -> None:
    hide_tokenizers(monkeypatch)
    result = CliRunner().invoke(bench, ["--tokens", "--trajectories", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines() == [
        "bench --tokens: no exact tokenizer installed (pip install 'context-compact[tokens]')"
    ]
    assert not no_network
