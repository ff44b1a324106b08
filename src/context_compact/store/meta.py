"""A session's meta: what ``create_session`` was given, and ``session_meta`` returns with ``id``
and ``created``. Its keys by who wrote the session:

    the agent, a Compactor    engine, policy (no ``source``)
    import                    source "import", engine, policy, format, file (the path
                              imported), name, system, notes, encoding, content (the
                              trajectory's digest: an import already done is found by it)
    compact (the command)     source "compact", policy_name, of (the session or file
                              replayed), engine, policy, system

``SessionMeta`` is that meta as the readers above the stores use it: ``meta_of(store,
session)`` and ``sessions_of(store)`` read it, and each field is what was stored when it has
the type the field says, else None (a meta file edited by hand, or written by another
version, is shown as far as it can be, never a crash later). ``raw`` is the whole dict as
stored, for the keys no field names (a caller's own, ``notes``). The stores keep meta as
plain JSON: they treat it as data, and this is the one place that reads its keys.

A frozen dataclass and not a ``TypedDict``: stored meta comes back from JSON on disk, and a
``TypedDict`` would only claim its types (``meta.get("system")`` could still be a number);
here they are checked once, where it is read.

``source_text`` says where the session came from in a few words, the same for ``sessions``
and the inspector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .base import Store


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class SessionMeta:
    id: str
    created: str | None = None
    source: str | None = None  # None: the agent or a Compactor; "import"; "compact"
    engine: str | None = None
    policy: Mapping[str, object] | None = None  # the SessionPolicy's fields, as JSON
    format: str | None = None  # an import's
    file: str | None = None
    name: str | None = None
    system: str | None = None
    content: str | None = None
    policy_name: str | None = None  # a compaction's
    compacted_from: str | None = None  # its ``of``
    raw: Mapping[str, object] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def read(cls, raw: Mapping[str, object]) -> SessionMeta:
        """The meta a store returned (``session_meta``, an item of ``list_sessions``)."""
        policy = raw.get("policy")
        return cls(
            id=str(raw.get("id", "")),
            created=_text(raw.get("created")),
            source=_text(raw.get("source")),
            engine=_text(raw.get("engine")),
            policy=policy if isinstance(policy, Mapping) else None,
            format=_text(raw.get("format")),
            file=_text(raw.get("file")),
            name=_text(raw.get("name")),
            system=_text(raw.get("system")),
            content=_text(raw.get("content")),
            policy_name=_text(raw.get("policy_name")),
            compacted_from=_text(raw.get("of")),
            raw=dict(raw),
        )

    @property
    def source_text(self) -> str:
        """Where the session came from, in a few words: the agent, an import (its format and
        the session's name: the file's, with ``/sidechain-N`` for a sub-agent's thread), a
        compaction."""
        if self.source == "import":
            name = self.name or Path(str(self.file)).name
            return f"import {self.format}: {name}"
        if self.source == "compact":
            return f"compact {self.policy_name} of {self.compacted_from}"
        return self.source or "agent"

    @property
    def context_limit(self) -> int | None:
        """The context limit of the policy the session was written with, when it says."""
        limit = self.policy.get("context_limit") if self.policy is not None else None
        return limit if isinstance(limit, int) and not isinstance(limit, bool) else None


def meta_of(store: Store, session: str) -> SessionMeta | None:
    """The meta of ``session`` in ``store``, or None when it has no such session."""
    raw = store.session_meta(session)
    return None if raw is None else SessionMeta.read(raw)


def sessions_of(store: Store) -> list[SessionMeta]:
    """Every session's meta, newest first."""
    return [SessionMeta.read(raw) for raw in store.list_sessions()]


def source_of(meta: Mapping[str, object] | SessionMeta) -> str:
    """``SessionMeta.source_text`` of a meta, as read or as stored."""
    return (meta if isinstance(meta, SessionMeta) else SessionMeta.read(meta)).source_text


__all__ = ["SessionMeta", "meta_of", "sessions_of", "source_of"]
