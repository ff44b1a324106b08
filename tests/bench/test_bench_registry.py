"""One registry: every engine it names is a library policy, a CLI --policy and a bench strategy."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from context_compact import POLICIES, Compactor, MemoryStore, Policy, check, registry
from context_compact.cli import main
from context_compact.testing.fakes import BenchSummarizer
from context_compact.testing.workload import synthetic_session
from context_compact_bench.strategies import NAMES as BENCH_NAMES
from context_compact_bench.strategies import register_peers
from histories import user

ROOT = Path(__file__).resolve().parents[2]

register_peers()  # every engine of the registry, the bench's peers included


def test_the_bench_prices_exactly_the_engines_of_the_registry() -> None:
    assert set(BENCH_NAMES) == set(POLICIES)


@pytest.mark.parametrize("name", POLICIES)
def test_every_engine_runs_the_sdk_loop_and_keeps_the_request_valid(name: str) -> None:
    limit = 24_000 if name == "seed" else 6_000
    c = Compactor(Policy.named(name, context_limit=limit), MemoryStore(), BenchSummarizer())
    assert c.name == name
    c.set_request("system prompt", [{"name": "bash"}])
    w = synthetic_session(40, seed=1)
    messages: list[Any] = [user(w.request)]
    for turn in w.turns:
        messages = c.prepare(messages, w.request)
        assert check(messages) == []
        c.observe({"input_tokens": 1_000})
        messages.append(turn.assistant)
        messages.append(turn.results)
    assert check(c.compact_history(messages, w.request)) == []
    assert check(c.reactive_compact(messages, w.request)) == []


def test_an_unknown_policy_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="codex"):
        Policy.named("codx")


def test_a_misspelt_field_of_a_peer_policy_is_refused() -> None:
    with pytest.raises(TypeError, match="context_limt"):
        Policy.named("masking", context_limt=3)


def test_the_cli_offers_every_engine_as_a_policy() -> None:
    run = main.get_command(None, "run")  # type: ignore[arg-type]
    assert run is not None
    option = next(p for p in run.params if p.name == "policy")
    assert list(option.type.choices) == list(POLICIES)  # type: ignore[attr-defined]


# ``default-native`` is the session engine (with the bench's modelled native tier): it keeps one.
@pytest.mark.parametrize("name", [n for n in POLICIES if n not in ("default", "default-native")])
def test_a_session_id_given_to_an_engine_without_a_log_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="keeps no session log"):
        Compactor(Policy.named(name), MemoryStore(), session="s1")


def test_the_cli_and_the_library_load_no_bench_module_when_imported() -> None:
    code = (
        "import sys, context_compact, context_compact.cli\n"
        "print(sorted(m for m in sys.modules if m.startswith('context_compact_bench')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_name_the_registry_does_not_know_loads_the_installed_plugins_into_it_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed package with an entry point in the group, as pip would leave it.
    (tmp_path / "probe_plugin.py").write_text(
        "from context_compact_bench.strategies import none\n"
        "def register_probe(registry):\n"
        "    registry.register('probe-engine', none.engine, 'a probe')\n",
        encoding="utf-8",
    )
    info = tmp_path / "probe_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: probe-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{registry.PLUGINS}]\nprobe = probe_plugin:register_probe\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    own = registry.Registry()
    assert own.names == ["default", "seed"] and not own.plugins_loaded
    assert own.policy_for("probe-engine").engine == "probe-engine"
    assert own.plugins_loaded and {"probe-engine", "codex"} <= set(own.names)
    with pytest.raises(ValueError, match="unknown policy 'no-such-engine'"):
        own.policy_for("no-such-engine")
    # The library's registry is another object: nothing registered into this one reaches it.
    assert "probe-engine" not in registry.ENGINES and "probe-engine" not in POLICIES


def test_the_bench_declares_its_peers_in_the_registrys_entry_point_group() -> None:
    bench = ROOT / "src" / "context_compact_bench" / "pyproject.toml"
    pyproject = tomllib.loads(bench.read_text(encoding="utf-8"))
    points = pyproject["project"]["entry-points"][registry.PLUGINS]
    module, _, function = points["bench"].partition(":")
    assert getattr(importlib.import_module(module), function) is register_peers
