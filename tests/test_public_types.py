"""What a user of the library can see: its types, one exception tree, the durable capability."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import context_compact
from context_compact import (
    Compactor,
    ContextCompactError,
    DurableSession,
    MemoryStore,
    Policy,
    PolicyLike,
)
from context_compact.registry import policy_at

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_ships_its_type_marker() -> None:
    assert (ROOT / "src" / "context_compact" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["context_compact"]
    assert config["tool"]["mypy"]["strict"] is True


def test_every_exported_exception_is_one_of_ours() -> None:
    exported = [getattr(context_compact, name) for name in context_compact.__all__]
    errors = [e for e in exported if isinstance(e, type) and issubclass(e, BaseException)]
    assert len(errors) >= 12
    assert all(issubclass(e, ContextCompactError) for e in errors)
    assert context_compact.StoreUnavailable.__mro__[1] is context_compact.CompactionFailed


def test_only_the_session_engine_has_a_durable_session() -> None:
    default = Compactor(Policy.default(), MemoryStore())
    seed = Compactor(Policy.seed(echo=False), MemoryStore())
    assert isinstance(default.engine.session, DurableSession)
    assert default.durable is default.engine.session
    assert seed.engine.session is None
    with pytest.raises(ValueError, match="keeps no session log"):
        seed.durable  # noqa: B018
    assert seed.view() == [] and seed.session_id is None


@pytest.mark.parametrize("name", ["seed", "default", "codex"])
def test_one_registry_function_builds_any_policy_at_a_limit(name: str) -> None:
    policy: PolicyLike = policy_at(name, 12_345)
    assert policy.engine == name and policy.context_limit == 12_345
    assert policy_at(name).context_limit == Policy.default().context_limit or name == "seed"
