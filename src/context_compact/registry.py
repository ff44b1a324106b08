"""One registry of engines, shared by the library, ``--policy`` in the CLI and the bench.

    policy = policy_for("codex", context_limit=12_500)
    policy = policy_at("codex", 12_500, model=MODEL)   # what the CLI and the bench build
    engine = build_engine(policy, env)                  # what Compactor does

``seed`` and ``default`` are this library's engines (``seed/``, ``session/``), registered
here. Anything else registers itself with ``register``: the bench's peers (the
``context_compact_bench`` distribution, ``strategies/``), written from their published
behaviour, are registered by the bench when it runs, and otherwise through the entry points of
the group ``context_compact.policies`` (``PLUGINS``; the bench's pyproject.toml declares its
own), each a function given the registry to ``register`` into: loaded by the CLI and the
inspector when they list the engines, and the first time a name is asked for that is not
registered. They implement the same Engine protocol, so any of them can drive a real loop
(they keep no durable log and some of them lose content: that is what the bench measures).
The registry itself imports no engine but its own two, and nothing above it.

The state is one explicit object, a ``Registry``; ``REGISTRY`` is the library's, and the
module's ``NAMES``, ``ENGINES``, ``register``, ``policy_for``... are its list, its table and
its methods. ``NAMES`` is the list of registered names, in order of registration; it grows as
engines register (the same list object, so ``from registry import NAMES`` stays current).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .engine import Engine, Env, PolicyLike
from .overrides import with_overrides
from .seed.policy import seed_policy
from .session.engine import SessionEngine
from .session.policy import assumed_limit, session_policy


@dataclass(frozen=True)
class PeerPolicy:
    """The policy of a registered engine without settings of its own: its name and its
    budget in tokens."""

    engine: str
    """The registry name of the engine."""
    context_limit: int = 192_000
    """The token budget the engine keeps requests under (its trigger or limit)."""
    unit = "tokens"
    max_reactive_retries: int = 1
    """Reactive compactions the agent loop tries per refused call."""


@dataclass(frozen=True)
class Entry:
    policy: Callable[..., PolicyLike]
    engine: Callable[[Any, Env], Engine]
    about: str
    unit: str = "tokens"
    """The unit of the policy's limits: ``tokens``, or ``chars`` for the seed."""


def _seed_engine(policy: Any, env: Env) -> Engine:
    from .seed.engine import SeedEngine  # loaded when a seed engine is built

    return SeedEngine(policy, env)


PLUGINS = "context_compact.policies"
"""The entry-point group of packages that register engines (``name = "module:function"``);
each function is called with the registry to register into."""


class Registry:
    """Engines by name: our two, and those registered into it. ``REGISTRY`` is the library's
    (``Policy.named``, ``--policy``, ``Compactor``); a program or a test can build its own,
    which starts with our two engines and loads the plugins of its own accord.

    ``names`` is the list of registered names, in order of registration; it grows as engines
    register (the same list object, so a reference to it stays current)."""

    def __init__(self) -> None:
        self.engines: dict[str, Entry] = {
            "default": Entry(
                session_policy, SessionEngine, "ours: durable log, view, nothing lost"
            ),
            "seed": Entry(seed_policy, _seed_engine, "the seed's four stages, exact", "chars"),
        }
        self.names: list[str] = list(self.engines)
        self.plugins_loaded = False
        """Whether ``load_plugins`` has run (it runs once per registry)."""

    def register(self, name: str, engine: Callable[[Any, Env], Engine], about: str) -> None:
        """Register an engine without settings of its own (its policy is a ``PeerPolicy``);
        registering a name again replaces its entry."""

        def policy(**overrides: Any) -> PeerPolicy:
            return with_overrides(PeerPolicy(engine=name), overrides)

        self.engines[name] = Entry(policy, engine, about)
        if name not in self.names:
            self.names.append(name)

    def load_plugins(self) -> None:
        """Call, once, every function of the entry-point group ``PLUGINS`` with this registry:
        the installed packages' engines register themselves."""
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        from importlib.metadata import entry_points

        for point in entry_points(group=PLUGINS):
            point.load()(self)

    def entry(self, name: str) -> Entry:
        if name not in self.engines:
            self.load_plugins()
        try:
            return self.engines[name]
        except KeyError:
            raise ValueError(
                f"unknown policy {name!r}; known: {', '.join(self.names)} (the bench's peers "
                "come with pip install 'context-compact[bench]')"
            ) from None

    def policy_for(self, name: str, **overrides: Any) -> PolicyLike:
        """The policy object of engine ``name`` with fields overridden by name."""
        return self.entry(name).policy(**overrides)

    def policy_at(
        self, name: str, limit: int | None = None, *, model: str | None = None
    ) -> PolicyLike:
        """The policy of engine ``name`` for a host that shows events itself (the CLI, the
        bench): at ``limit`` in the engine's own unit (characters for the seed) if given, else
        at the engine's default (for token engines: ``model``'s window less the default
        reserve, as ``Policy.default``, said by no warning); the seed's prints off."""
        unit = self.entry(name).unit
        overrides: dict[str, Any] = {} if limit is None else {"context_limit": limit}
        if name == "seed":
            overrides["echo"] = False
        elif name == "default":
            overrides["model"] = model
        if limit is None and unit == "tokens":
            # The window assumed for a model we do not know is the host's to say (the CLI
            # does, on stderr), not a Python warning's.
            overrides["context_limit"] = assumed_limit(model)
        return self.policy_for(name, **overrides)

    def build_engine(self, policy: PolicyLike, env: Env) -> Engine:
        return self.entry(policy.engine).engine(policy, env)


REGISTRY = Registry()
"""The library's registry. The module's names below are its parts and methods, so
``from context_compact.registry import NAMES, register`` keeps working."""
ENGINES = REGISTRY.engines
NAMES = REGISTRY.names
register = REGISTRY.register
load_plugins = REGISTRY.load_plugins
entry = REGISTRY.entry
policy_for = REGISTRY.policy_for
policy_at = REGISTRY.policy_at
build_engine = REGISTRY.build_engine


__all__ = [
    "ENGINES",
    "NAMES",
    "PLUGINS",
    "REGISTRY",
    "Entry",
    "PeerPolicy",
    "Registry",
    "build_engine",
    "entry",
    "load_plugins",
    "policy_at",
    "policy_for",
    "register",
]
