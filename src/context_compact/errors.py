"""Every exception the library raises on purpose, under one base, in groups a caller can catch.

    ContextCompactError                      catch this to catch any of ours
     ├── HistoryError                        a history or a log that cannot be taken as it is
     │    ├── InvalidHistory (ValueError)    the input violates check(); names the message and
     │    │                                  the rule
     │    ├── UnknownFormat (ValueError)     a file is not a trajectory any loader knows
     │    ├── Undecodable (ValueError)       a log's bytes are not text in the encoding it is read
     │    │                                  with: the file, byte offset and line
     │    └── TooLarge (ValueError)          a file or one of its lines is over the import's limit
     ├── StoreError                          the store cannot do what was asked
     │    ├── StoreRefused (OSError)         the database or its disk refused the operation:
     │    │    │                             locked past the wait, full, an I/O error, a file
     │    │    │                             that cannot be written; ``reason``, ``where``,
     │    │    │                             ``code`` and the backend's own exception
     │    │    │                             (``backend_error``, also ``__cause__``)
     │    │    ├── ReadOnlyStore (PermissionError)
     │    │    │                             a write to a store opened for reading only
     │    │    └── ServerUnavailable         the PostgreSQL server did not answer or refused a
     │    │                                  write
     │    ├── SessionLocked (RuntimeError)   another live process writes this session
     │    ├── SessionExists (ValueError)     create_session was given an id the store already has
     │    ├── CorruptJournal (ValueError)    a journal is not what the store wrote (torn, cut,
     │    │                                  altered): where it starts, and how much before it is
     │    │                                  whole
     │    ├── CorruptStore (OSError)         a store file that is not a database, or a damaged one
     │    │    └── BadRecord (ValueError)    a journal record without the shape its kind requires
     │    ├── LinkRefused (PermissionError)  a symbolic link the store did not make, where it keeps
     │    │                                  its files (never followed)
     │    ├── UnknownMigration (RuntimeError)
     │    │                                  the database was migrated by a newer version of this
     │    │                                  library
     │    ├── Incomplete                     a search index that cannot be read to the journal's
     │    │                                  end (the store scans instead; never leaves it)
     │    └── StoreUnavailable               (also a CompactionFailed: see below)
     ├── ProviderError                       the model, or its stand-in, refused the call
     │    ├── ContextOverflow (RuntimeError) the API refused the request as too long for the
     │    │    │                             window; raised by our providers, mapped from any
     │    │    │                             SDK's refusal by providers.errors.context_overflow
     │    │    │                             (the SDK's exception is __cause__); catch it to
     │    │    │                             compact and resend
     │    │    └── FakeContextOverflow       the scripted model's refusal, shaped like Anthropic's
     │    │                                  HTTP 400 (testing/)
     │    └── ScriptExhausted (RuntimeError) the scripted model was called past its script
     ├── CompactionError                     compaction could not do its work
     │    ├── CompactionFailed (RuntimeError)
     │    │    │                             it could not bring the context back: the summarizer
     │    │    │                             failed too often, or the view stayed over the limit
     │    │    └── StoreUnavailable          the store refused a write (disk full, read-only,
     │    │                                  permissions, server gone): nothing left the view
     │    │                                  without its copy; the message names the store's own
     │    │                                  error, which is also the exception's __cause__
     │    ├── EmptySummary (ValueError)      the summarizer answered without text (a failed
     │    │                                  attempt, counted as such)
     │    └── UndoRefused (ValueError)       undo cannot take the compaction back (none left,
     │                                       or the view would be over the limit)
     ├── ConfigError (ValueError)            a setting (config file, option) that cannot be applied
     ├── MissingExtra (ImportError)          an optional dependency (an SDK, psycopg, a
     │                                       framework) is not installed: what needs it and the
     │                                       pip line that adds it
     ├── AgentError (RuntimeError)           the agent loop cannot go on; carries the history
     └── InspectorError (ValueError)         a session the inspector cannot show

    UnknownModelWarning (UserWarning)        a warning, not an error: ``Policy.default(model=...)``
                                             for a model whose window we do not know, without
                                             ``context_limit`` (said once per process per model)

Each also derives from the builtin it names, so ``except ValueError`` keeps working; the
groups derive from no builtin. Each is importable from here and, as before, from the module
that raises it (``loaders``, ``agent.loop``, ``store.postgres.base``...); the public ones are
exported from ``context_compact`` too. Errors of the model APIs themselves are the SDKs' own;
a refused prompt is recognized with ``is_context_overflow``.

Each store backend maps its driver's exceptions once, where its methods are called
(``store.boundary``): ``sqlite3.Error`` and ``psycopg.Error`` never leave a store. What the
database or its disk refused is ``StoreRefused`` (the driver's exception kept as
``backend_error`` and ``__cause__``), a damaged file ``CorruptStore``. A store's callers that
treat a refused write softly (``store.base.STORE_ERRORS``: ``StoreRefused`` and ``OSError``,
a file under the store's root that cannot be written) let a damaged store (``CorruptStore``)
and a planted link (``LinkRefused``) through as themselves: those are not refused writes to
retry.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .messages import Message


class ContextCompactError(Exception):
    """The base of every exception this library raises on purpose."""


# -- the groups ---------------------------------------------------------------------------


class HistoryError(ContextCompactError):
    """A history given to the library, or a log given to the loaders, that cannot be taken as
    it is: the message names where and why."""


class StoreError(ContextCompactError):
    """The store cannot do what was asked: locked, damaged, read-only, gone, too new."""


class ProviderError(ContextCompactError):
    """The model (an API through our providers, or the scripted one) refused the call."""


class CompactionError(ContextCompactError):
    """Compaction could not do its work."""


# -- history errors -----------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    index: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.rule}: {self.detail}"


class InvalidHistory(HistoryError, ValueError):
    """The history given to a stage violates ``check``; ``violations`` says where and why."""

    def __init__(self, violations: list[Violation], where: str = "messages") -> None:
        self.violations = violations
        first = violations[0]
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        super().__init__(f"invalid {where}: {first}{more}")
        self.index = first.index
        self.rule = first.rule


class UnknownFormat(HistoryError, ValueError):
    """The file is not a trajectory in any format the loaders know; ``known`` are the formats
    they know (the loaders give theirs)."""

    def __init__(self, path: str | Path, reason: str, known: Iterable[str] = ()) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(
            f"{self.path}: not a known trajectory format ({reason}); "
            f"known formats: {', '.join(known)}"
        )


class Undecodable(HistoryError, ValueError):
    """A file's bytes are not text in the encoding it is read with. ``path``, ``offset``
    (of the first bad byte in the file), ``line`` (1-based) and ``encoding`` say where and
    how; the message says it in one line, with what to do."""

    def __init__(self, path: Path, offset: int, line: int, problem: str, encoding: str) -> None:
        self.path = str(path)
        self.offset = offset
        self.line = line
        self.encoding = encoding
        super().__init__(
            f"{path}: not {encoding} text at byte offset {offset:,} (line {line}): {problem}; "
            "if the file is in another encoding, name it (import --encoding latin-1, cp1252, ...)"
        )


class TooLarge(HistoryError, ValueError):
    """A file or one of its lines is over the import's size limit."""


# -- compaction errors --------------------------------------------------------------------


class CompactionFailed(CompactionError, RuntimeError):
    """Compaction cannot make progress; the message says why and what to do."""


class StoreUnavailable(CompactionFailed, StoreError):
    """The store refused a write that compaction or the session journal needed."""


class EmptySummary(CompactionError, ValueError):
    """The summarizer answered without text (an empty string, None, not a string)."""


class UndoRefused(CompactionError, ValueError):
    """``undo`` cannot take the compaction back (none left, or the view would be over the
    limit); the message says why, and nothing was changed."""


# -- store errors -------------------------------------------------------------------------


class SessionLocked(StoreError, RuntimeError):
    """Another live process writes this session, or wrote it since this one read it."""


class SessionExists(StoreError, ValueError):
    """``create_session`` was given the id of a session the store already has."""


class CorruptJournal(StoreError, ValueError):
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


Refusal = Literal["busy", "full", "read-only", "io", "unreachable", "other"]
"""Why a store refused, in the words every backend shares: its database locked by another
writer past the wait (``busy``), no space left (``full``), a file or database that cannot
be written (``read-only``), the disk failing (``io``), the server gone (``unreachable``)."""


class StoreRefused(StoreError, OSError):
    """The database or its disk refused what the store asked: ``reason`` (a ``Refusal``),
    ``where`` (the file or server), ``code`` (the backend's name for it: ``SQLITE_BUSY``, a
    PostgreSQL SQLSTATE; "" when it gives none) and ``backend_error`` (the driver's own
    exception, also ``__cause__``). ``str()`` is one line naming where, in the backend's
    words."""

    reason: Refusal = "other"

    def __init__(
        self,
        *args: object,
        reason: Refusal | None = None,
        where: str = "",
        code: str = "",
        backend_error: BaseException | None = None,
    ) -> None:
        super().__init__(*args)
        if reason is not None:
            self.reason = reason
        self.where = where
        self.code = code
        self.backend_error = backend_error


class ReadOnlyStore(StoreRefused, PermissionError):
    """A write to a store that was opened for reading only; the message says why."""

    reason: Refusal = "read-only"


class LinkRefused(StoreError, PermissionError):
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


class CorruptStore(StoreError, OSError):
    """The database file is not a SQLite database, or SQLite finds it damaged: one line naming
    the file and what ``integrity_check`` answers."""


class UnknownMigration(StoreError, RuntimeError):
    """The database was migrated by a newer version of this library."""


class BadRecord(CorruptStore, ValueError):
    """A journal record that does not have the shape its kind requires: the journal was
    edited or damaged outside this library (one line naming the record)."""


class ServerUnavailable(StoreRefused):
    """The PostgreSQL server did not answer, or refused the write (connection lost, disk
    full, shutting down)."""

    reason: Refusal = "unreachable"


class Incomplete(StoreError):
    """The journal cannot be indexed to its end (damaged, or shorter than indexed): scan it,
    so the store's own checks report what is wrong."""


# -- provider errors ----------------------------------------------------------------------


class ContextOverflow(ProviderError, RuntimeError):
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


class FakeContextOverflow(ContextOverflow):
    """A prompt-too-long refusal (a ``ContextOverflow``, as our providers raise) with the
    attributes of Anthropic's ``BadRequestError``: the scripted model's (``testing/``)."""

    def __init__(self, input_tokens: int = 0, maximum: int = 0) -> None:
        message = f"prompt is too long: {input_tokens} tokens > {maximum} maximum"
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
        }
        super().__init__(
            message, prompt_tokens=input_tokens, window=maximum, status_code=400, body=body
        )
        self.input_tokens = input_tokens
        self.maximum = maximum


class ThinkingRefused(ProviderError, RuntimeError):
    """The API refused a thinking block sent back after what came before it changed (its
    "prefix check": "The block is bound to a different conversation").

    ``message_index`` and ``block_index`` say where the first refused block was in the
    request (``messages.N.content.M``), None when the error does not say; ``status_code``,
    ``body`` and ``message`` are the SDK error's. ``Compactor.recover`` (and the drop-in
    clients, once on their own) take the thinking from that block on out of the view; the
    next request goes out without it.
    """

    def __init__(
        self,
        message: str,
        *,
        message_index: int | None = None,
        block_index: int | None = None,
        status_code: int | None = None,
        body: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.message_index = message_index
        self.block_index = block_index
        self.status_code = status_code
        self.body = body


class ScriptExhausted(ProviderError, RuntimeError):
    """The provider was called more times than its script has steps."""


# -- the others ---------------------------------------------------------------------------


class ConfigError(ContextCompactError, ValueError):
    """A setting that cannot be applied; the message names it and its source."""


class MissingExtra(ContextCompactError, ImportError):
    """An optional dependency is not installed: one line naming what needs it and how to add
    it, both as our extra (``pip install 'context-compact[EXTRA]'``) and as the package itself
    (true whether this library came from an index, a wheel or a checkout)."""

    def __init__(self, what: str, needs: str, extra: str, packages: str) -> None:
        self.what, self.needs, self.extra, self.packages = what, needs, extra, packages
        super().__init__(
            f"{what} needs {needs}: pip install 'context-compact[{extra}]' "
            f"(or: pip install {packages})"
        )


class AgentError(ContextCompactError, RuntimeError):
    """The run cannot go on; ``history`` is the conversation so far, ``__cause__`` the error."""

    def __init__(self, message: str, history: list[Message]) -> None:
        super().__init__(message)
        self.history = history


class InspectorError(ContextCompactError, ValueError):
    """A session the inspector cannot show: the message says which and why, in one line."""


# -- warnings -----------------------------------------------------------------------------


class UnknownModelWarning(UserWarning):
    """``Policy.default(model=NAME)`` without ``context_limit``, for a model whose context
    window no table of ours knows: the limit rests on an assumed window. ``model`` is the
    name. Said once per process per model (``warnings.warn``); pass ``context_limit`` to set
    the real window, or filter it by its class:
    ``warnings.filterwarnings("ignore", category=UnknownModelWarning)``."""

    def __init__(self, message: str, model: str = "") -> None:
        super().__init__(message)
        self.model = model


__all__ = [
    "AgentError",
    "BadRecord",
    "CompactionError",
    "CompactionFailed",
    "ConfigError",
    "ContextCompactError",
    "ContextOverflow",
    "CorruptJournal",
    "CorruptStore",
    "EmptySummary",
    "FakeContextOverflow",
    "HistoryError",
    "Incomplete",
    "InspectorError",
    "InvalidHistory",
    "LinkRefused",
    "MissingExtra",
    "ProviderError",
    "ReadOnlyStore",
    "Refusal",
    "ScriptExhausted",
    "ServerUnavailable",
    "SessionExists",
    "SessionLocked",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "ThinkingRefused",
    "TooLarge",
    "Undecodable",
    "UndoRefused",
    "UnknownFormat",
    "UnknownMigration",
    "UnknownModelWarning",
    "Violation",
]
