"""The Store seam: where content goes before it leaves the context view, and the session log.

A store has two doors, each a protocol of its own, and ``Store`` is both on one object.

1. **Files the model can open** (``Archive``). ``save_blob``, ``save_pack``, ``save_messages``,
   ``save_tool_result``, ``save_media``, ``write_transcript`` and ``append_file`` return a
   path that exists on disk (or, for the in-memory store, in its dicts) *before* they
   return, under ``root``. The
   view only ever names paths a store returned, and ``issued(path)`` is true exactly for those
   (also after a restart on the same root), so only our own references are honored.
   ``read_text`` gives the text back, ``read_bytes`` the bytes (the only way to read a
   media file: ``read_text`` refuses one with ``ValueError``).
2. **The durable session journal** (``Journal``). A session is an ordered list of records,
   plain JSON dicts with a ``"kind"`` key (``message``, ``edit``, ``event``, ``observe`` ...; the
   engine defines them, the store treats them as data). ``append`` writes a batch of
   records atomically and durably, in order; ``records`` gives them back equal to what was
   appended (JSON round trip). A process killed at any point leaves every appended batch
   whole or absent, never torn. A durable store also finds a journal that is not what it
   wrote (a cut or rolled-back tail, an altered record: hash chain and witness,
   ``witness.py``) and raises ``CorruptJournal`` instead of resuming from an earlier point.
   One writer per session, enforced by a lease (``lease.py``: another live process gets
   ``SessionLocked``, a dead one's lease is taken over); several sessions may be written at
   once from several processes.

Invariant (the project's first rule): the engine calls the store *before* it drops or
shortens anything and puts the path the store returned into the view. Every text may hold
lone surrogates (tool output is not always valid UTF-8): a store never crashes on them and
gives them back unchanged.

What some stores can do besides is a small protocol each, checked with ``isinstance``
(``Searches``, ``BatchesTurns``, ``Checkpointed``, ``DeletesSessions``, ``KnowsWriters``,
``ChecksDatabase``, ``OnDatabaseFile``); where the engine needs one that a store lacks, a
function here does without it (``search`` scans, ``turn`` batches nothing). The engine knows
a store by these protocols and its encodings (``codec.py``), nothing else of a backend.

Implementations: ``FileStore`` (plain files), ``SqliteStore`` (one embedded database plus the
files the view names), ``PostgresStore`` (a server shared by workers), ``MemoryStore`` (tests
and benchmarks). A backend of one's own is one class with the two doors' methods
(docs/store-backend.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, TypeGuard, runtime_checkable

from ..errors import CorruptStore, LinkRefused, StoreRefused
from ..messages import Message
from .codec import Meta as Meta
from .codec import Record as Record  # the record type, kept importable from here
from .lease import Owner
from .text import scan

STORE_ERRORS: tuple[type[Exception], ...] = (StoreRefused, OSError)
"""What a store raises when it cannot write: ``StoreRefused`` (its database locked past the
wait, full, read-only, failing; ``ReadOnlyStore``, ``ServerUnavailable``) and ``OSError``
(a file under its root: disk full, permissions). No driver's exception leaves a store
(``boundary.py``)."""

NOT_REFUSED: tuple[type[Exception], ...] = (CorruptStore, LinkRefused)
"""Our own ``OSError``s that are no refused write: a damaged store and a planted link. A caller
that takes ``STORE_ERRORS`` softly (skips a pass, retries the call) lets these through first
(``except NOT_REFUSED: raise``), as themselves."""


class Archive(Protocol):
    """The first door: files the model can open (see the module docstring, 1)."""

    root: str

    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        """The seed's layout (S-1.3): one file per tool_use id; an existing file is reused."""
        ...

    def save_blob(self, content: str) -> str:
        """Content-addressed copy of a text; the same text always gets the same path."""
        ...

    def save_pack(self, pieces: list[str]) -> str:
        """Content-addressed copy of ``"".join(pieces)`` (the same path as ``save_blob`` of the
        joined text). A store that keeps texts by hash may keep the pieces by reference, so
        results packed together cost no second copy of what the log already holds."""
        ...

    def save_media(self, data: bytes, media_type: str) -> str:
        """Content-addressed copy of an image's or document's bytes, named with the extension
        of ``media_type`` (``media.EXTENSIONS``; ``.bin`` for any other)."""
        ...

    def write_transcript(self, messages: list[Message]) -> str:
        """The seed's transcript (S-2.4): a new ``transcript_<token>.jsonl`` each call."""
        ...

    def save_messages(self, messages: list[Message]) -> str:
        """Content-addressed JSONL of messages: deterministic path, written once."""
        ...

    def append_file(self, name: str, text: str) -> str:
        """Append ``text`` to the store's file ``name`` (a safe relative name); its path.

        The path depends only on ``name``, so a view that names it never changes when the
        file grows (a session's index of everything that left its view).
        """
        ...

    def issued(self, path: str) -> bool:
        """True when ``path`` names a file this store wrote."""
        ...

    def read_text(self, path: str) -> str:
        """The text behind a path this store issued (``KeyError`` otherwise; ``ValueError``
        for a media file)."""
        ...

    def read_bytes(self, path: str) -> bytes:
        """The bytes behind a path this store issued (``KeyError`` otherwise); a text file's
        as UTF-8 (lone surrogates passed through)."""
        ...


class Journal(Protocol):
    """The second door: sessions and their records (see the module docstring, 2)."""

    def create_session(self, meta: Meta) -> str:
        """Start a new, empty session; its id (``meta["id"]`` when given, else a new one)."""
        ...

    def session_meta(self, session: str) -> Meta | None:
        """What ``create_session`` was given (plus ``id`` and ``created``), or None."""
        ...

    def list_sessions(self) -> list[Meta]:
        """Every session's meta, newest first."""
        ...

    def append(self, session: str, records: list[Record]) -> None:
        """Add records at the end of the session's journal, all or none, durably."""
        ...

    def records(self, session: str) -> Iterator[Record]:
        """The session's records in the order appended."""
        ...

    def claim(self, session: str) -> None:
        """Become the session's one writer now, before appending (``append`` does it on its
        first call). ``SessionLocked`` when another live process writes it."""
        ...

    def close(self) -> None:
        """Release files and connections; the store is not used afterwards."""
        ...


class Store(Archive, Journal, Protocol):
    """A store: both doors on one object (what the engine is given)."""


# -- what some stores can do besides: each a protocol, checked with isinstance ------------
# A wrapper that forwards by ``__getattr__`` (``testing.FaultyStore``) binds these on the
# instance: Python 3.12's isinstance reads attributes statically, never through __getattr__.
OPTIONAL = ("turn", "delete_session", "writer", "check_database", "db_path", "search")
"""The names of the optional capabilities below, for wrappers to forward."""


@runtime_checkable
class BatchesTurns(Protocol):
    """A store that commits a turn's writes at once (SqliteStore: the files a turn issues
    are committed with its journal append)."""

    def turn(self) -> AbstractContextManager[object]: ...


@runtime_checkable
class DeletesSessions(Protocol):
    """A store that can remove a session (its journal and meta) it holds."""

    def delete_session(self, session: str) -> None: ...


@runtime_checkable
class KnowsWriters(Protocol):
    """A store with leases: who writes a session now (``store.lease``)."""

    def writer(self, session: str) -> Owner | None: ...


@runtime_checkable
class ChecksDatabase(Protocol):
    """A store on a database server that checks its own schema and rows (PostgresStore)."""

    def check_database(self) -> str: ...


@runtime_checkable
class OnDatabaseFile(Protocol):
    """A store in one SQLite database file, ``db_path``."""

    db_path: Path


_BATCHES: dict[type, bool] = {}
"""``isinstance(store, BatchesTurns)`` by store class, decided at the class's first ``turn``."""


def batches_turns(store: Store) -> TypeGuard[BatchesTurns]:
    """Whether ``store`` commits a turn's writes at once (``BatchesTurns``), decided once per
    class: the protocol's ``isinstance`` costs tens of microseconds, a tenth of a turn's own
    work. A class that forwards attributes (``__getattr__``: a wrapper such as
    ``testing.FaultyStore``) is asked per instance: each answers as the store it wraps."""
    kind = type(store)
    known = _BATCHES.get(kind)
    if known is None:
        known = isinstance(store, BatchesTurns)
        if not hasattr(kind, "__getattr__"):
            _BATCHES[kind] = known
    return known


def turn(store: Store) -> AbstractContextManager[object]:
    """``store.turn()`` where the store batches a turn's writes into one commit
    (``batches_turns``), else a block that does nothing. The engine enters it once per call,
    around its passes and its append."""
    return store.turn() if batches_turns(store) else contextlib.nullcontext()


CHECKPOINT_KIND = "checkpoint"
"""The kind of the records a ``Checkpointed`` store finds without reading the journal."""


@runtime_checkable
class Checkpointed(Protocol):
    """A store that reads a journal from a position on, without reading what is before it.

    ``checkpoints(session)``: the positions of the session's records of kind
    ``CHECKPOINT_KIND``, oldest first, as the store noted them at ``append`` (a hint: what
    is read there is checked by its reader). ``records_from(session, start)``: the records
    at positions ``start`` on, their hash chain checked from the link stored before
    ``start`` up to the witness; ``CorruptJournal`` when that cannot be verified (then a
    full ``records`` read decides what is whole). A store that reads this way also knows
    the journal's length and head afterwards, as after ``records``."""

    def checkpoints(self, session: str) -> list[int]: ...

    def records_from(self, session: str, start: int) -> Iterator[Record]: ...


@runtime_checkable
class Searches(Protocol):
    """A store with an index of its journals' text (``FileStore``, ``SqliteStore``).

    ``search(session, query)``: the session's message records whose text
    (``text.searchable``: ``codec.message_text`` and the tool calls' arguments as written)
    holds ``query``, case-insensitively (``str.casefold``), in journal order: exactly what
    ``text.scan`` over ``records`` answers, faster. A store without it is scanned
    (``search``)."""

    def search(self, session: str, query: str) -> Iterator[Record]: ...


def search(store: Journal, session: str, query: str) -> Iterator[Record]:
    """The session's message records holding ``query`` (``Searches``): the store's index
    where it has one, else every record read and tested (``text.scan``)."""
    if isinstance(store, Searches):
        return store.search(session, query)
    return scan(store.records(session), query)
