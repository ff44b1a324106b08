"""context-compact: keep long-running LLM agents inside their context window, losing nothing.

compactor = Compactor(Policy.seed(), FileStore(workdir), summarizer)
messages = compactor.prepare(messages, active_request)   # before every model call
"""

from .compactor import Compactor
from .errors import CompactionFailed
from .events import CompactionEvent
from .invariants import InvalidHistory, Violation, check
from .markers import summary_message
from .policy import Policy
from .providers.errors import is_context_overflow
from .sizing import estimate_chars
from .store import FileStore, MemoryStore, Store
from .summarize import LLMSummarizer, extractive_summary, summary_input

__all__ = [
    "CompactionEvent",
    "CompactionFailed",
    "Compactor",
    "FileStore",
    "InvalidHistory",
    "LLMSummarizer",
    "MemoryStore",
    "Policy",
    "Store",
    "Violation",
    "check",
    "estimate_chars",
    "extractive_summary",
    "is_context_overflow",
    "summary_input",
    "summary_message",
]
