"""Every exception the library raises on purpose, under one base.

    ContextCompactError               catch this to catch any of ours
     ├── InvalidHistory (ValueError)  the input violates check(); names the message and the rule
     ├── CompactionFailed (RuntimeError)
     │    │                           compaction could not bring the context back: the
     │    │                           summarizer failed too often, or the view stayed over the limit
     │    └── StoreUnavailable        the store refused a write (disk full, read-only, permissions):
     │                                nothing left the view without its copy; the message names the
     │                                store's own error, which is also the exception's __cause__
     ├── ContextOverflow (RuntimeError)
     │                                the API refused the request as too long for the window;
     │                                raised by our providers, mapped from any SDK's refusal by
     │                                providers.errors.context_overflow (the SDK's exception is
     │                                __cause__); catch it to compact and resend
     ├── SessionLocked (RuntimeError) another live process writes this session
     ├── SessionExists (ValueError)   create_session was given an id the store already has
     ├── CorruptJournal (ValueError)  a journal is not what the store wrote (torn, cut, altered):
     │                                where it starts, and how much before it is whole
     ├── CorruptStore (OSError)       a store file that is not a database, or a damaged one
     ├── ServerUnavailable (OSError)  the PostgreSQL server did not answer or refused a write
     │                                (defined in store/pg_base.py, an optional extra)
     ├── ReadOnlyStore (PermissionError)
     │                                a write to a store opened for reading only
     ├── UnknownMigration (RuntimeError)
     │                                the database was migrated by a newer version of this library
     ├── ConfigError (ValueError)     a setting (config file, option) that cannot be applied
     ├── UnknownFormat (ValueError)   a file is not a trajectory any loader knows (loaders/)
     ├── Undecodable (ValueError)     a log's bytes are not text in the encoding it is read with:
     │                                the file, byte offset and line (loaders/)
     ├── AgentError (RuntimeError)    the agent loop cannot go on; carries the history (agent/)
     └── ScriptExhausted (RuntimeError)
                                      the fake provider was called past its script (providers/)

Each also derives from the builtin it names, so ``except ValueError`` keeps working. The last
four are defined next to their code (they carry its data) and exported with the rest from
``context_compact``. Errors of the model APIs themselves are the SDKs' own; a refused prompt
is recognized with ``is_context_overflow``.
"""

from __future__ import annotations

from dataclasses import dataclass


class ContextCompactError(Exception):
    """The base of every exception this library raises on purpose."""


@dataclass(frozen=True)
class Violation:
    index: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.rule}: {self.detail}"


class InvalidHistory(ContextCompactError, ValueError):
    """The history given to a stage violates ``check``; ``violations`` says where and why."""

    def __init__(self, violations: list[Violation], where: str = "messages") -> None:
        self.violations = violations
        first = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        super().__init__(f"invalid {where}: {first}{more}")
        self.index = first.index
        self.rule = first.rule


class CompactionFailed(ContextCompactError, RuntimeError):
    """Compaction cannot make progress; the message says why and what to do."""


class StoreUnavailable(CompactionFailed):
    """The store refused a write that compaction or the session journal needed."""


class UndoRefused(ContextCompactError, ValueError):
    """``undo`` cannot take the compaction back (none left, or the view would be over the
    limit); the message says why, and nothing was changed."""


class SessionLocked(ContextCompactError, RuntimeError):
    """Another live process writes this session, or wrote it since this one read it."""


class SessionExists(ContextCompactError, ValueError):
    """``create_session`` was given the id of a session the store already has."""


class CorruptJournal(ContextCompactError, ValueError):
    """A session's journal is not what the store wrote: torn, cut, rolled back or altered.

    ``session``, ``at`` (the first unit that is not as written, 0-based), ``whole`` (units
    before it that are intact: what a repair can keep) and ``unit`` ("line", "record") say
    where; the message says it in words."""

    def __init__(
        self, message: str, session: str = "", at: int = -1, whole: int = 0, unit: str = ""
    ) -> None:
        super().__init__(message)
        self.session = session
        self.at = at
        self.whole = whole
        self.unit = unit


class ReadOnlyStore(ContextCompactError, PermissionError):
    """A write to a store that was opened for reading only; the message says why."""


class LinkRefused(ContextCompactError, PermissionError):
    """A symbolic link where a store keeps its own files (a journal, a meta file, a database
    or its ``-wal``, a folder on the way): the store made none, so it was planted and would
    lead the store to another project's data. ``filename`` is the path; ``str()`` is one
    line naming it."""

    def __init__(self, path: object, what: str = "a symbolic link") -> None:
        import errno

        super().__init__(
            errno.ELOOP, f"refused: {what} the store did not create (never followed)", str(path)
        )

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class CorruptStore(ContextCompactError, OSError):
    """The database file is not a SQLite database, or SQLite finds it damaged: one line naming
    the file and what ``integrity_check`` answers."""


class ContextOverflow(ContextCompactError, RuntimeError):
    """The API refused the request as too long for the context window.

    ``prompt_tokens`` (the refused input as the API counted it), ``max_tokens`` (the output
    budget asked for) and ``window`` are the refusal's own numbers, None when it does not say;
    ``status_code``, ``body`` and ``message`` are the SDK error's, so code that reads those
    duck-typed (``is_context_overflow``, ``overflow_figures``) reads this the same way.
    """

    def __init__(
        self,
        message: str,
        *,
        prompt_tokens: int | None = None,
        max_tokens: int | None = None,
        window: int | None = None,
        status_code: int | None = None,
        body: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.window = window
        self.status_code = status_code
        self.body = body


class UnknownMigration(ContextCompactError, RuntimeError):
    """The database was migrated by a newer version of this library."""


class ConfigError(ContextCompactError, ValueError):
    """A setting that cannot be applied; the message names it and its source."""


__all__ = [
    "CompactionFailed",
    "ConfigError",
    "ContextCompactError",
    "ContextOverflow",
    "CorruptJournal",
    "CorruptStore",
    "InvalidHistory",
    "LinkRefused",
    "ReadOnlyStore",
    "SessionExists",
    "SessionLocked",
    "StoreUnavailable",
    "UndoRefused",
    "UnknownMigration",
    "Violation",
]
