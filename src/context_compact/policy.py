"""``Policy``, the way to make a policy, and the policy class of each engine.

* ``SeedPolicy`` (``seed/policy.py``) drives the seed engine: the seed's constants, limits in
  characters, the four stages exactly as the seed runs them.
* ``SessionPolicy`` (``session/policy.py``) drives the session engine, our default: limits in
  tokens of the request as sent, an append-only durable log with a view derived from it,
  high/low-water clearing.

``Policy.seed(**overrides)``, ``Policy.default(**overrides)`` and ``Policy.named(name,
**overrides)`` (any engine of the registry; the bench's peers register on first use) build
them. Overrides replace fields by name; an unknown name is a ``TypeError``, never a silently
ignored typo, and values are checked (``ValueError`` naming the field). Every policy is a
``PolicyLike`` (``engine.py``): its engine's name, its unit, its limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

from .engine import PolicyLike
from .overrides import with_overrides
from .seed.policy import SeedPolicy, seed_policy
from .session.policy import SessionPolicy, session_policy

if TYPE_CHECKING:
    from .store.meta import SessionMeta


class Policy:
    """Makes policies: ``Policy.seed()``, ``Policy.default()``, ``Policy.named(name)``."""

    @staticmethod
    def seed(**overrides: Any) -> SeedPolicy:
        """The seed's preset, every constant a field; it prints as the seed does."""
        return seed_policy(**overrides)

    @staticmethod
    def default(**overrides: Any) -> SessionPolicy:
        """Our default. ``context_limit`` defaults to the window of ``model`` minus
        ``reserve_tokens``; without a model, 200,000 - 8,000 tokens."""
        return session_policy(**overrides)

    @overload
    @staticmethod
    def named(name: Literal["seed"], **overrides: Any) -> SeedPolicy: ...

    @overload
    @staticmethod
    def named(name: Literal["default"], **overrides: Any) -> SessionPolicy: ...

    @overload
    @staticmethod
    def named(name: str, **overrides: Any) -> PolicyLike: ...

    @staticmethod
    def named(name: str, **overrides: Any) -> PolicyLike:
        """The policy of any engine in the registry (``registry.NAMES``), with overrides. A
        name not registered yet loads the registry's plugins first (the bench's peers)."""
        from .registry import policy_for  # the registry knows the engines: loaded when asked

        return policy_for(name, **overrides)


def stored_policy(meta: SessionMeta) -> SessionPolicy:
    """The default policy a session was written with, as its meta recorded it: fields this
    version does not know are left out, JSON's lists are tuples again. ``ValueError`` when
    it is not usable here."""
    known = set(SessionPolicy.__dataclass_fields__)
    knobs = {k: v for k, v in (meta.policy or {}).items() if k in known}
    knobs = {k: tuple(v) if isinstance(v, list) else v for k, v in knobs.items()}
    try:
        return Policy.default(**knobs)
    except TypeError as error:
        raise ValueError(str(error)) from None


__all__ = ["Policy", "PolicyLike", "SeedPolicy", "SessionPolicy", "stored_policy", "with_overrides"]
