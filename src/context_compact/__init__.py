"""context-compact: keep long-running LLM agents inside their context window, losing nothing.

compactor = Compactor(Policy.default(model=MODEL), SqliteStore("sessions.db"), summarizer)
messages = compactor.prepare(messages, active_request)   # before every model call

Every public name below is importable from here as it always was. The exceptions (``errors.py``)
are loaded with the package; every other name the first time it is asked for (PEP 562), so
``import context_compact`` loads two modules, and a program that uses a ``MemoryStore`` does not
load PostgreSQL's store, the loaders or the agent.
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
    CorruptJournal,
    CorruptStore,
    HistoryError,
    InvalidHistory,
    LinkRefused,
    MissingExtra,
    ProviderError,
    ReadOnlyStore,
    ScriptExhausted,
    SessionExists,
    SessionLocked,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    Undecodable,
    UnknownFormat,
    UnknownMigration,
    Violation,
)

if TYPE_CHECKING:
    from .compactor import Compactor
    from .engine import DurableSession, Engine, Env, PolicyLike, RecallPage
    from .events import CompactionEvent
    from .invariants import check
    from .markers import summary_message
    from .policy import Policy, SeedPolicy, SessionPolicy
    from .providers.errors import is_context_overflow
    from .registry import NAMES as POLICIES
    from .session.recall import recall
    from .sizing import estimate_chars
    from .store import FileStore, MemoryStore, PostgresStore, SqliteStore, Store, store_from_url
    from .summarize import (
        LLMSummarizer,
        Summarizes,
        SummaryRequest,
        extractive_summary,
        summary_input,
        summary_score,
    )

# The name, the module it lives in (relative to this package) and its name there.
_LAZY: dict[str, tuple[str, str]] = {
    "POLICIES": (".registry", "NAMES"),
    "CompactionEvent": (".events", "CompactionEvent"),
    "Compactor": (".compactor", "Compactor"),
    "DurableSession": (".engine", "DurableSession"),
    "Engine": (".engine", "Engine"),
    "Env": (".engine", "Env"),
    "FileStore": (".store", "FileStore"),
    "LLMSummarizer": (".summarize", "LLMSummarizer"),
    "MemoryStore": (".store", "MemoryStore"),
    "Policy": (".policy", "Policy"),
    "PolicyLike": (".engine", "PolicyLike"),
    "PostgresStore": (".store", "PostgresStore"),
    "RecallPage": (".engine", "RecallPage"),
    "SeedPolicy": (".policy", "SeedPolicy"),
    "SessionPolicy": (".policy", "SessionPolicy"),
    "SqliteStore": (".store", "SqliteStore"),
    "Store": (".store", "Store"),
    "Summarizes": (".summarize", "Summarizes"),
    "SummaryRequest": (".summarize", "SummaryRequest"),
    "check": (".invariants", "check"),
    "estimate_chars": (".sizing", "estimate_chars"),
    "extractive_summary": (".summarize", "extractive_summary"),
    "is_context_overflow": (".providers.errors", "is_context_overflow"),
    "recall": (".session.recall", "recall"),
    "store_from_url": (".store", "store_from_url"),
    "summary_input": (".summarize", "summary_input"),
    "summary_message": (".markers", "summary_message"),
    "summary_score": (".summarize", "summary_score"),
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


__all__ = [
    "POLICIES",
    "AgentError",
    "CompactionError",
    "CompactionEvent",
    "CompactionFailed",
    "Compactor",
    "ConfigError",
    "ContextCompactError",
    "ContextOverflow",
    "CorruptJournal",
    "CorruptStore",
    "DurableSession",
    "Engine",
    "Env",
    "FileStore",
    "HistoryError",
    "InvalidHistory",
    "LLMSummarizer",
    "LinkRefused",
    "MemoryStore",
    "MissingExtra",
    "Policy",
    "PolicyLike",
    "PostgresStore",
    "ProviderError",
    "ReadOnlyStore",
    "RecallPage",
    "ScriptExhausted",
    "SeedPolicy",
    "SessionExists",
    "SessionLocked",
    "SessionPolicy",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "Summarizes",
    "SummaryRequest",
    "Undecodable",
    "UnknownFormat",
    "UnknownMigration",
    "Violation",
    "check",
    "estimate_chars",
    "extractive_summary",
    "is_context_overflow",
    "recall",
    "store_from_url",
    "summary_input",
    "summary_message",
    "summary_score",
]
