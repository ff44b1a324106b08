"""context-compact: keep long-running LLM agents inside their context window, losing nothing.

compactor = Compactor(Policy.default(model=MODEL), SqliteStore("sessions.db"), summarizer)
messages = compactor.prepare(messages, active_request)   # before every model call

``__all__`` is the surface an application needs (28 names); every other public name below is
importable from here as it always was, and lives in the module that says what it is for
(extension types in ``context_compact.engine``, exceptions in ``context_compact.errors``). The
exceptions are loaded with the package; every other name the first time it is asked for
(PEP 562), so ``import context_compact`` loads three modules, ``from context_compact import
Policy`` loads no engine, and a program that uses a ``MemoryStore`` does not load PostgreSQL's
store, the loaders or the agent.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    AgentError,
    CompactionError,
    CompactionFailed,
    ConfigError,
    ContextCompactError,
    ContextOverflow,
    HistoryError,
    InvalidHistory,
    MissingExtra,
    ProviderError,
    StoreError,
    StoreUnavailable,
)
from .errors import (
    CorruptJournal as CorruptJournal,
)
from .errors import (
    CorruptStore as CorruptStore,
)
from .errors import (
    LinkRefused as LinkRefused,
)
from .errors import (
    ReadOnlyStore as ReadOnlyStore,
)
from .errors import (
    ScriptExhausted as ScriptExhausted,
)
from .errors import (
    SessionExists as SessionExists,
)
from .errors import (
    SessionLocked as SessionLocked,
)
from .errors import (
    StoreRefused as StoreRefused,
)
from .errors import (
    Undecodable as Undecodable,
)
from .errors import (
    UnknownFormat as UnknownFormat,
)
from .errors import (
    UnknownMigration as UnknownMigration,
)
from .errors import (
    UnknownModelWarning as UnknownModelWarning,
)
from .errors import (
    Violation as Violation,
)

if TYPE_CHECKING:
    from .compactor import Compactor
    from .engine import DurableSession as DurableSession
    from .engine import Engine as Engine
    from .engine import Env as Env
    from .engine import PolicyLike as PolicyLike
    from .engine import RecallPage as RecallPage
    from .events import CompactionEvent
    from .invariants import check
    from .markers import summary_message as summary_message
    from .policy import Policy
    from .policy import SeedPolicy as SeedPolicy
    from .policy import SessionPolicy as SessionPolicy
    from .providers.errors import is_context_overflow
    from .session.recall import recall
    from .sizing import estimate_chars as estimate_chars
    from .store import FileStore, MemoryStore, PostgresStore, SqliteStore, Store, store_from_url
    from .summary import (
        LLMSummarizer,
        Summarizes,
        SummaryRequest,
        extractive_summary,
    )
    from .summary import (
        summary_input as summary_input,
    )
    from .summary import (
        summary_score as summary_score,
    )

    POLICIES: list[str]  # registry.NAMES: the registered engines' names

# The name, the module it lives in (relative to this package) and its name there.
_LAZY: dict[str, tuple[str, str]] = {
    "POLICIES": (".registry", "NAMES"),
    "CompactionEvent": (".events", "CompactionEvent"),
    "Compactor": (".compactor", "Compactor"),
    "DurableSession": (".engine", "DurableSession"),
    "Engine": (".engine", "Engine"),
    "Env": (".engine", "Env"),
    "FileStore": (".store", "FileStore"),
    "LLMSummarizer": (".summary", "LLMSummarizer"),
    "MemoryStore": (".store", "MemoryStore"),
    "Policy": (".policy", "Policy"),
    "PolicyLike": (".engine", "PolicyLike"),
    "PostgresStore": (".store", "PostgresStore"),
    "RecallPage": (".engine", "RecallPage"),
    "SeedPolicy": (".policy", "SeedPolicy"),
    "SessionPolicy": (".policy", "SessionPolicy"),
    "SqliteStore": (".store", "SqliteStore"),
    "Store": (".store", "Store"),
    "Summarizes": (".summary", "Summarizes"),
    "SummaryRequest": (".summary", "SummaryRequest"),
    "check": (".invariants", "check"),
    "estimate_chars": (".sizing", "estimate_chars"),
    "extractive_summary": (".summary", "extractive_summary"),
    "is_context_overflow": (".providers.errors", "is_context_overflow"),
    "recall": (".session.recall", "recall"),
    "store_from_url": (".store", "store_from_url"),
    "summary_input": (".summary", "summary_input"),
    "summary_message": (".markers", "summary_message"),
    "summary_score": (".summary", "summary_score"),
}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # pyproject.toml's, read once asked for (``version.py``)
        from .version import package_version

        globals()[name] = package_version()
        return globals()[name]
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module, __name__), attribute)
    globals()[name] = value  # the next lookup finds it without coming here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "__version__"})


# The surface: what an application needs. Every other name above stays importable from here
# as it always was, from the module it lives in: the engine's extension types
# (``context_compact.engine``: Engine, Env, PolicyLike, DurableSession, RecallPage), each
# engine's policy class (``context_compact.policy``: SeedPolicy, SessionPolicy), the summary's
# parts (``context_compact.summary``, ``.markers``, ``.sizing``), the registry's names
# (``context_compact.registry.NAMES``, here ``POLICIES``), the scripted model's error
# (``context_compact.testing``) and every exception (``context_compact.errors``).
__all__ = [
    "AgentError",
    "CompactionError",
    "CompactionEvent",
    "CompactionFailed",
    "Compactor",
    "ConfigError",
    "ContextCompactError",
    "ContextOverflow",
    "FileStore",
    "HistoryError",
    "InvalidHistory",
    "LLMSummarizer",
    "MemoryStore",
    "MissingExtra",
    "Policy",
    "PostgresStore",
    "ProviderError",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Summarizes",
    "SummaryRequest",
    "check",
    "extractive_summary",
    "is_context_overflow",
    "recall",
    "store_from_url",
]
