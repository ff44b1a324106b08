"""PostgresStore's schema: ordered, named migrations, as in ``sqlite/schema.py``.

``MIGRATIONS`` is append-only (a released migration is never edited or reordered). Each is
applied at most once, in its own transaction together with its row in ``schema_migrations``,
under a transaction-scoped advisory lock on the schema's name, so workers starting at once on
a new database apply it once and a failing statement leaves nothing of it. A database that
records a migration this code does not know raises ``UnknownMigration`` naming it.

The tables are SQLite's (``sqlite/schema.py``), in PostgreSQL types, plus:

* ``writers.token``, the fencing token, only grows: a writer that takes a session over gets
  the previous token plus one, and ``close`` marks the lease released (heartbeat 0) without
  deleting the row, so a token is never given twice.
* ``roots``: every root a store of this database exported files under (one per worker's
  directory), so a path another worker was issued is recognized here (``PostgresStore``).
* ``heartbeat`` is the *server's* clock (seconds since the epoch), so leases compare times
  from one clock whatever the workers' clocks say.
* ``link`` (0003) chains each journal row to the one before, as in SQLite (NULL in rows
  written before it), and ``sessions.head`` is the link of the session's last row, written
  with ``length`` in the append's transaction: a row deleted or altered behind the store's
  back is found (``journal_rows.py``). ``instance`` holds one id made with the schema, which
  names this worker's witnesses of it (``postgres/store.py``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from ...errors import UnknownMigration

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_journal_and_blobs",
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created TEXT NOT NULL,
            meta TEXT NOT NULL,
            length BIGINT NOT NULL DEFAULT 0,
            seq BIGSERIAL NOT NULL
        );
        CREATE INDEX sessions_by_created ON sessions (created);
        CREATE TABLE blobs (
            hash TEXT PRIMARY KEY,
            size BIGINT NOT NULL,
            body BYTEA NOT NULL
        );
        CREATE TABLE messages (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos BIGINT NOT NULL,
            id TEXT,
            parent TEXT,
            body TEXT NOT NULL,
            PRIMARY KEY (session, pos)
        );
        CREATE INDEX messages_by_id ON messages (id);
        CREATE TABLE edits (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos BIGINT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session, pos)
        );
        CREATE TABLE events (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos BIGINT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session, pos)
        );
        CREATE TABLE records (
            session TEXT NOT NULL REFERENCES sessions (id),
            pos BIGINT NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session, pos)
        );
        CREATE TABLE files (
            path TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            hash TEXT REFERENCES blobs (hash),
            size BIGINT NOT NULL
        );
        CREATE TABLE file_chunks (
            path TEXT NOT NULL REFERENCES files (path),
            seq BIGINT NOT NULL,
            hash TEXT NOT NULL REFERENCES blobs (hash),
            PRIMARY KEY (path, seq)
        );
        CREATE TABLE roots (
            root TEXT PRIMARY KEY
        );
        """,
    ),
    (
        "0002_session_writers",
        """
        CREATE TABLE writers (
            session TEXT PRIMARY KEY REFERENCES sessions (id),
            token BIGINT NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            started TEXT NOT NULL,
            heartbeat DOUBLE PRECISION NOT NULL
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
        ALTER TABLE sessions ADD COLUMN head TEXT;
        CREATE TABLE instance (id TEXT PRIMARY KEY);
        INSERT INTO instance (id) VALUES (replace(gen_random_uuid()::text, '-', ''));
        """,
    ),
    (
        # Where each session's checkpoint records are (``store.base.Checkpointed``), found
        # without reading the session's other records.
        "0004_checkpoint_index",
        """
        CREATE INDEX records_checkpoints ON records (session, pos) WHERE kind = 'checkpoint';
        """,
    ),
]

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def check_schema(name: str) -> str:
    """``name`` if it is a plain lower-case SQL identifier (it is put in SQL unquoted)."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ValueError(
            f"not a valid schema name: {name!r} (lower-case letters, digits and _, "
            "not starting with a digit, at most 63 characters)"
        )
    return name


def migrate(conn: Any, schema: str, where: str = "the database") -> list[str]:
    """Create ``schema`` if needed and apply the migrations it lacks, in order; the names
    applied now. ``conn`` is a psycopg connection in autocommit mode."""
    check_schema(schema)
    done = []
    for name, script in [("", ""), *MIGRATIONS]:
        with conn.transaction():
            # One migrator at a time per schema, across every machine using this server.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"cc:{schema}",))
            if not name:
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {schema}.schema_migrations "
                    "(name TEXT PRIMARY KEY, applied_at TEXT)"
                )
                applied = {
                    row[0] for row in conn.execute(f"SELECT name FROM {schema}.schema_migrations")
                }
                known = [known for known, _ in MIGRATIONS]
                unknown = sorted(applied.difference(known))
                if unknown:
                    raise UnknownMigration(
                        f"{where} has migration {unknown[0]!r}, unknown to this version of "
                        f"context_compact (it knows {known}): it was written by a newer "
                        "version; upgrade to open it"
                    )
                continue
            found = conn.execute(
                f"SELECT 1 FROM {schema}.schema_migrations WHERE name = %s", (name,)
            ).fetchone()
            if found:
                continue
            conn.execute(f"SET LOCAL search_path TO {schema}")
            conn.execute(script)
            conn.execute(
                f"INSERT INTO {schema}.schema_migrations (name, applied_at) VALUES (%s, %s)",
                (name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
        if name:
            done.append(name)
    return done
