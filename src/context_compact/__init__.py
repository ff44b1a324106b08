"""context-compact: keep long-running LLM agents inside their context window, losing nothing.

compactor = Compactor(Policy.default(model=MODEL), SqliteStore("sessions.db"), summarizer)
messages = compactor.prepare(messages, active_request)   # before every model call
"""

from .compactor import Compactor
from .engine import Engine, Env
from .errors import CompactionFailed
from .events import CompactionEvent
from .invariants import InvalidHistory, Violation, check
from .markers import summary_message
from .policy import Policy, SeedPolicy, SessionPolicy
from .providers.errors import is_context_overflow
from .registry import NAMES as POLICIES
from .session.recall import RecallPage, recall
from .sizing import estimate_chars
from .store import FileStore, MemoryStore, PostgresStore, SqliteStore, Store, store_from_url
from .summarize import LLMSummarizer, extractive_summary, summary_input, summary_score

__all__ = [
    "POLICIES",
    "CompactionEvent",
    "CompactionFailed",
    "Compactor",
    "Engine",
    "Env",
    "FileStore",
    "InvalidHistory",
    "LLMSummarizer",
    "MemoryStore",
    "Policy",
    "PostgresStore",
    "RecallPage",
    "SeedPolicy",
    "SessionPolicy",
    "SqliteStore",
    "Store",
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
