"""The seed's system, exact: four stages, one file each, and the engine that runs them in the
seed's order (``engine.py``).

The seed is the compaction algorithm this project started from, kept bit for bit as the
``seed`` preset so it can be measured. Tags such as ``(S-4.1)`` in this package name the rule
of that algorithm a piece of code implements (each rule is a heading of
``docs/reference-pipeline.md``); ``tests/test_spec_seed.py`` holds one test per
rule, named after its tag (``test_s4_1_...``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import SeedEngine


def __getattr__(attribute: str) -> Any:
    # The engine is loaded when asked for, so a policy (``policy.py`` here) loads without it.
    if attribute == "SeedEngine":
        from .engine import SeedEngine

        return SeedEngine
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


__all__ = ["SeedEngine"]
