"""The public surface is small and cheap: ``__all__`` names what an application needs (at most
30 names), every name the package ever exported is still importable from it, and making a
policy loads no engine."""

from __future__ import annotations

import subprocess
import sys

import context_compact

# Every name ``context_compact`` exported before its surface was cut to ``__all__``: each
# stays importable from the top level (from the module it lives in, when first asked for).
EXPORTED_BEFORE = [
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


def loaded_after(code: str) -> list[str]:
    """Our modules a fresh interpreter has loaded after running ``code``."""
    ours = "m == 'context_compact' or m.startswith('context_compact.')"
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in sys.modules if {ours}))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_all_names_at_most_thirty_names_and_each_is_there() -> None:
    assert len(context_compact.__all__) <= 30
    assert len(set(context_compact.__all__)) == len(context_compact.__all__)
    for name in context_compact.__all__:
        assert getattr(context_compact, name) is not None


def test_every_name_exported_before_is_still_importable_from_the_top_level() -> None:
    assert len(EXPORTED_BEFORE) == 52
    for name in EXPORTED_BEFORE:
        assert getattr(context_compact, name) is not None, name
    assert context_compact.Engine is __import__("context_compact.engine").engine.Engine
    assert context_compact.POLICIES is __import__("context_compact.registry").registry.NAMES


def test_importing_policy_loads_at_most_thirty_of_our_modules_and_no_engine() -> None:
    loaded = loaded_after("from context_compact import Policy")
    assert len(loaded) <= 30, loaded
    engines = {"context_compact.session.engine", "context_compact.seed.engine"}
    assert not engines & set(loaded)
    assert "context_compact.registry" not in loaded


def test_making_the_default_and_the_seed_policy_loads_no_engine() -> None:
    loaded = loaded_after(
        "from context_compact import Policy\nPolicy.default(model='gpt-4o')\nPolicy.seed()"
    )
    assert not {"context_compact.session.engine", "context_compact.seed.engine"} & set(loaded)
