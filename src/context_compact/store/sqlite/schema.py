"""The SQLite schema of ``SqliteStore``: ordered, named migrations, and how a connection opens.

``MIGRATIONS`` is append-only: a released migration is never edited or reordered, a change is
a new entry at the end. Each is applied at most once, in its own ``BEGIN IMMEDIATE``
transaction together with its row in ``schema_migrations``, so a crash or a failing statement
leaves it wholly unapplied; two processes opening a new database at once apply it once (the
second re-checks under the write lock). Opening an up-to-date database writes nothing. A
database that records a migration this code does not know was written by a newer version:
opening it raises ``UnknownMigration`` naming it, rather than guessing at its tables.

Tables (as 0001-0005 made them; what later migrations changed follows). Every journal row
carries its ``session`` and ``pos``, its position in the session's journal
(``sessions.length`` is the next one), so the four record tables merge back into append
order. ``body`` is the whole record as ASCII JSON with long strings moved to ``blobs``
(``blobrefs.py``); ``messages`` also keeps the message's ``id`` and ``parent`` as columns.
``blobs`` holds each text once, keyed by the sha256 of its UTF-8. ``files`` is every path the
store issued, relative to its root, with the blob it can be re-exported from (``file_chunks``
for appended files and packs, in order). ``writers`` holds the lease of the process writing
each session (``store/lease.py``). ``link`` (0003) chains each journal row to the one before
(``witness.link`` of the previous row's link and this row's ``body``; NULL in rows written
before it), so an altered row is found by its position. ``codec`` (0004) says how a blob's
body is stored (``sqlite/blobs.py``).

Since 0006 ``blobs`` is found by ``tag`` (a hash prefix as an integer, not unique) rather
than a unique index on ``hash``; ``files`` and ``file_chunks`` no longer declare references to
it, a pack lists its pieces' hashes in ``files.pieces`` and an appended file's pieces are in
``file_chunks.body`` (``codec`` as in ``blobs``; rows from before name a ``hash`` instead).
Since 0007 the journal is one table, ``journal``, one row per append holding its records and
their links (``sqlite/journal.py``); the four record tables are gone, their rows copied into
it one record a row. Both copy what was there, so a database written before still reads and
verifies; the bytes each saves are in the migration's comment and the README's "The stores".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime

from ...errors import UnknownMigration as UnknownMigration  # kept importable from here
from .blobs import tag as blob_tag

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_journal_and_blobs",
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created TEXT NOT NULL,
            meta TEXT NOT NULL,
            length INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX sessions_by_created ON sessions (created);
        CREATE TABLE blobs (
            hash TEXT PRIMARY KEY,
            size INTEGER NOT NULL,
            body BLOB NOT NULL
        );
        CREATE TABLE messages (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos INTEGER NOT NULL,
            id TEXT,
            parent TEXT,
            body TEXT NOT NULL,
            PRIMARY KEY (session, pos)
        );
        CREATE INDEX messages_by_id ON messages (id);
        CREATE TABLE edits (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session, pos)
        );
        CREATE TABLE events (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session, pos)
        );
        CREATE TABLE records (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos INTEGER NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session, pos)
        );
        CREATE TABLE files (
            path TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            hash TEXT REFERENCES blobs (hash),
            size INTEGER NOT NULL
        );
        CREATE TABLE file_chunks (
            path TEXT NOT NULL REFERENCES files (path),
            seq INTEGER NOT NULL,
            hash TEXT NOT NULL REFERENCES blobs (hash),
            PRIMARY KEY (path, seq)
        );
        """,
    ),
    (
        "0002_session_writers",
        """
        CREATE TABLE writers (
            session TEXT PRIMARY KEY REFERENCES sessions (id),
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            started TEXT NOT NULL,
            heartbeat REAL NOT NULL
        );
        """,
    ),
    (
        "0003_journal_links",
        """
        ALTER TABLE messages ADD COLUMN link TEXT;
        ALTER TABLE edits ADD COLUMN link TEXT;
        ALTER TABLE events ADD COLUMN link TEXT;
        ALTER TABLE records ADD COLUMN link TEXT;
        """,
    ),
    (
        "0004_blob_codec",
        """
        ALTER TABLE blobs ADD COLUMN codec TEXT;
        """,
    ),
    (
        # Nothing looks a message up by id; the index cost a random page write per message.
        "0005_no_messages_by_id",
        """
        DROP INDEX IF EXISTS messages_by_id;
        """,
    ),
    (
        # Texts found by an integer tag instead of a unique index on their 64-character hash
        # (sqlite/blobs.py): ~1.8 index pages written per new text instead of ~3. ``files``
        # and ``file_chunks`` are rebuilt first without their references to ``blobs`` (no
        # unique key to refer to any more; the store writes a text before the rows that name
        # it, sqlite/files.py), each as one b-tree (WITHOUT ROWID), with a pack's pieces in
        # its ``files`` row and an appended file's pieces in their ``file_chunks`` rows
        # rather than in ``blobs``.
        "0006_blobs_by_tag",
        """
        CREATE TABLE files_0006 (
            path TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            hash TEXT,
            size INTEGER NOT NULL,
            pieces TEXT
        ) WITHOUT ROWID;
        INSERT INTO files_0006 (path, kind, hash, size) SELECT path, kind, hash, size FROM files;
        CREATE TABLE file_chunks_0006 (
            path TEXT NOT NULL REFERENCES files_0006 (path),
            seq INTEGER NOT NULL,
            hash TEXT,
            body BLOB,
            codec TEXT,
            PRIMARY KEY (path, seq)
        ) WITHOUT ROWID;
        INSERT INTO file_chunks_0006 (path, seq, hash) SELECT path, seq, hash FROM file_chunks;
        DROP TABLE file_chunks;
        DROP TABLE files;
        ALTER TABLE files_0006 RENAME TO files;
        ALTER TABLE file_chunks_0006 RENAME TO file_chunks;
        ALTER TABLE blobs RENAME TO blobs_0001;
        CREATE TABLE blobs (
            hash TEXT NOT NULL,
            size INTEGER NOT NULL,
            body BLOB NOT NULL,
            codec TEXT,
            tag INTEGER NOT NULL
        );
        INSERT INTO blobs (hash, size, body, codec, tag)
            SELECT hash, size, body, codec, cc_blob_tag(hash) FROM blobs_0001 ORDER BY rowid;
        DROP TABLE blobs_0001;
        CREATE INDEX blobs_by_tag ON blobs (tag);
        """,
    ),
    (
        # One row per append instead of one per record in four tables (sqlite/journal.py).
        # The rows written before are copied one record a row, bodies and links as they were.
        "0007_journal_rows_per_append",
        """
        CREATE TABLE journal (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos INTEGER NOT NULL,
            count INTEGER NOT NULL,
            body BLOB NOT NULL,
            links TEXT NOT NULL,
            codec TEXT,
            PRIMARY KEY (session, pos)
        ) WITHOUT ROWID;
        INSERT INTO journal (session, pos, count, body, links, codec)
            SELECT session, pos, 1, body, coalesce(link, ''), NULL FROM (
                SELECT session, pos, body, link FROM messages
                UNION ALL SELECT session, pos, body, link FROM edits
                UNION ALL SELECT session, pos, body, link FROM events
                UNION ALL SELECT session, pos, body, link FROM records
            ) ORDER BY session, pos;
        DROP TABLE messages;
        DROP TABLE edits;
        DROP TABLE events;
        DROP TABLE records;
        """,
    ),
    (
        # Where each session's checkpoint records are (``store.base.Checkpointed``): a resume
        # reads the journal from the newest one on, not from its first record.
        "0008_checkpoint_marks",
        """
        CREATE TABLE marks (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos INTEGER NOT NULL,
            PRIMARY KEY (session, pos)
        ) WITHOUT ROWID;
        """,
    ),
]

PAGE_SIZE = 512
"""Bytes per page of a new database (an existing one keeps its own). Every commit writes each
page it touched whole to the WAL (and again at the checkpoint), and a turn touches 15-30
b-tree pages (rows, their indexes, the blob-hash index at random places) for a few KB of
data: smaller pages write less (``bench --store-io`` measures 512 against 1024 and SQLite's
default 4096; the README's Measured section has the table)."""


def connect(path: str, durable: bool = False) -> sqlite3.Connection:
    """An open, migrated connection in autocommit mode (transactions are explicit)."""
    db = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA busy_timeout = 5000")
        # Takes effect only while the file is still empty (a new database).
        db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        db.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode survives any process crash; FULL also survives power loss.
        db.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
        db.execute("PRAGMA foreign_keys = ON")
        migrate(db, path)
    except BaseException:
        db.close()
        raise
    return db


def connect_read_only(path: str) -> sqlite3.Connection:
    """A connection that never writes (``mode=ro``; ``immutable=1`` when even SQLite's shared
    memory file cannot be made, on a read-only filesystem). ``UnknownMigration`` or
    ``sqlite3.OperationalError`` when the schema is not this version's (it cannot be
    migrated without writing)."""
    errors = []
    for flags in ("mode=ro", "mode=ro&immutable=1"):
        db = sqlite3.connect(
            f"file:{path}?{flags}", uri=True, isolation_level=None, check_same_thread=False
        )
        try:
            applied = {row[0] for row in db.execute("SELECT name FROM schema_migrations")}
        except sqlite3.OperationalError as error:
            db.close()
            errors.append(error)
            continue
        missing = [name for name, _ in MIGRATIONS if name not in applied]
        if missing:
            db.close()
            raise sqlite3.OperationalError(
                f"{path} lacks migration {missing[0]!r} and is open for reading only: open it "
                "once where it can be written to upgrade it"
            )
        return db
    raise errors[-1]


def migrate(db: sqlite3.Connection, where: str = "the database") -> list[str]:
    """Apply the migrations ``db`` lacks, in order; the names applied now."""
    # Migration 0006 computes the tags of the texts it copies.
    db.create_function("cc_blob_tag", 1, blob_tag, deterministic=True)
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
    )
    known = [name for name, _ in MIGRATIONS]
    applied = {row[0] for row in db.execute("SELECT name FROM schema_migrations")}
    unknown = sorted(applied.difference(known))
    if unknown:
        raise UnknownMigration(
            f"{where} has migration {unknown[0]!r}, unknown to this version of context_compact "
            f"(it knows {known}): it was written by a newer version; upgrade to open it"
        )
    done = []
    for name, script in MIGRATIONS:
        if name in applied:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                db.execute("COMMIT")  # another process applied it meanwhile
                continue
            for statement in statements(script):
                db.execute(statement)
            db.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                (name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        done.append(name)
    return done


def statements(script: str) -> Iterator[str]:
    """The SQL statements of ``script``, one at a time (``execute`` takes only one)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement in migration: {pending.strip()[:80]!r}")
