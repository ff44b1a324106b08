"""Policies are frozen dataclasses: ``with_overrides`` replaces fields by name (an unknown name
is a ``TypeError``, never a silently ignored typo) and ``positive`` checks the fields that must
be above zero (a ``ValueError`` naming the field)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, TypeVar

P = TypeVar("P")


def positive(policy: Any, *names: str) -> None:
    for name in names:
        value = getattr(policy, name)
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")


def with_overrides(base: P, overrides: dict[str, Any]) -> P:
    """``base`` with fields replaced by name; an unknown name is a TypeError."""
    known = {f.name for f in fields(base)}  # type: ignore[arg-type]
    unknown = sorted(set(overrides) - known)
    if unknown:
        kind = type(base).__name__
        raise TypeError(
            f"unknown {kind} field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return replace(base, **overrides)  # type: ignore[type-var]


__all__ = ["positive", "with_overrides"]
