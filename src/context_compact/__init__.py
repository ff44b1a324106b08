"""context-compact: keep long-running LLM agents inside their context window, losing nothing.

compactor = Compactor(Policy.default(model=MODEL), SqliteStore("sessions.db"), summarizer)
messages = compactor.prepare(messages, active_request)   # before every model call
"""

from .agent.loop import AgentError
from .compactor import Compactor
from .engine import DurableSession, Engine, Env, PolicyLike, RecallPage
from .errors import (
    CompactionFailed,
    ConfigError,
    ContextCompactError,
    ContextOverflow,
    CorruptJournal,
    CorruptStore,
    InvalidHistory,
    LinkRefused,
    ReadOnlyStore,
    SessionExists,
    SessionLocked,
    StoreUnavailable,
    UnknownMigration,
    Violation,
)
from .events import CompactionEvent
from .invariants import check
from .loaders import Undecodable, UnknownFormat
from .markers import summary_message
from .policy import Policy, SeedPolicy, SessionPolicy
from .providers.errors import is_context_overflow
from .providers.fake import ScriptExhausted
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
from .version import package_version

__version__ = package_version()

__all__ = [
    "POLICIES",
    "AgentError",
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
    "InvalidHistory",
    "LLMSummarizer",
    "LinkRefused",
    "MemoryStore",
    "Policy",
    "PolicyLike",
    "PostgresStore",
    "ReadOnlyStore",
    "RecallPage",
    "ScriptExhausted",
    "SeedPolicy",
    "SessionExists",
    "SessionLocked",
    "SessionPolicy",
    "SqliteStore",
    "Store",
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
