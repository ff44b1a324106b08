"""What every part of ``PostgresStore`` stands on: psycopg loaded lazily, the pool, the errors.

``PgConnection`` opens the store: migrates the schema (``postgres/schema.py``), records this
worker's root, and keeps a pool of autocommit connections shared by threads. The shared
state of the store's parts (files: ``postgres/files.py``, the lease: ``postgres/lease.py``,
the journal: ``postgres/store.py``) lives here, behind one lock that is never held during a query.

Errors, so that a caller sees one line and never a driver's traceback:

* the server unreachable or failing (connection lost, disk full, shutting down, a pool
  timeout) is ``ServerUnavailable``, an ``OSError`` like a full disk, so the engine fails
  soft on it (``STORE_ERRORS``);
* the schema not what this version wrote (a table or column dropped, data the server finds
  corrupt) is ``CorruptStore``, naming the server, the schema and the server's own words.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...errors import CorruptStore, MissingExtra
from ...errors import ServerUnavailable as ServerUnavailable  # kept importable from here
from ..disk import DiskFiles
from .schema import check_schema, migrate

LEASE_SECONDS = 60.0
"""How long a writer on another host keeps a session without appending (its heartbeat)."""


def _psycopg() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise MissingExtra(
            "PostgresStore", "psycopg 3 and its pool", "postgres", "'psycopg[binary]' psycopg-pool"
        ) from None
    return psycopg, psycopg_pool


def shown_url(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


class PgConnection(DiskFiles):
    def __init__(
        self,
        url: str,
        root: str | os.PathLike[str] | None = None,
        *,
        schema: str = "context_compact",
        lease_seconds: float = LEASE_SECONDS,
        pool_size: int = 4,
        durable: bool = False,
    ) -> None:
        psycopg, psycopg_pool = _psycopg()
        self._psycopg, self._psycopg_pool = psycopg, psycopg_pool
        super().__init__(Path.cwd() if root is None else root, durable)
        self.url = url
        self.schema = check_schema(schema)
        self.lease_seconds = lease_seconds
        self.where = f"{shown_url(url)} (schema {schema})"
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                migrate(conn, schema, self.where)
                conn.execute(
                    f"INSERT INTO {schema}.roots (root) VALUES (%s) ON CONFLICT DO NOTHING",
                    (self._abs_root,),
                )
                found = conn.execute(f"SELECT id FROM {schema}.instance").fetchone()
        except psycopg.OperationalError as error:
            raise ServerUnavailable(f"{self.where}: {_first_line(error)}") from error
        self.instance: str = found[0]
        """This schema's id, made with it: a schema dropped and made again is another one."""
        options = f"-c search_path={schema}"
        if not durable:
            # Like SqliteStore's default: a commit survives any crash of this process (the
            # server has it); one of the server itself may lose its last fraction of a second.
            options += " -c synchronous_commit=off"
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True, "options": options},
            name=f"context-compact:{schema}",
            open=True,
        )
        self._lock = threading.Lock()  # guards the dicts below, never held during a query
        self._known_paths: set[str] = set()
        self._appended: set[str] = set()  # of those, the files append_file grows
        self._roots: set[str] = {self._abs_root}
        self._lengths: dict[str, int] = {}  # journal length last read or written, per session
        self._heads: dict[str, tuple[int, str]] = {}  # ... with the chain's link at that length
        self._tokens: dict[str, int] = {}  # sessions this store writes -> its fencing token
        self._beats: dict[str, float] = {}  # ... -> the server time of its last heartbeat
        self._beat_clock: dict[str, float] = {}  # ... -> this machine's clock then (monotonic)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled connection; the driver's errors as the module docstring says."""
        psycopg = self._psycopg
        try:
            with self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, self._psycopg_pool.PoolTimeout) as error:
            raise ServerUnavailable(f"{self.where}: {_first_line(error)}") from error
        except (psycopg.ProgrammingError, psycopg.DataError, psycopg.InternalError) as error:
            raise CorruptStore(
                f"{self.where}: the store's tables are not what this version wrote "
                f"({_first_line(error)})"
            ) from error

    @contextlib.contextmanager
    def _batch(self) -> Iterator[Any]:
        """A pooled connection with one transaction on a pipeline (``_one_trip``)."""
        with self._connection() as conn, self._one_trip(conn):
            yield conn

    @contextlib.contextmanager
    def _one_trip(self, conn: Any) -> Iterator[None]:
        """One transaction on a pipeline: BEGIN, the statements queued in the block, and
        COMMIT go to the server together, one round trip (a ``transaction()`` block would
        wait for BEGIN and for COMMIT each). A result read inside the block costs a round
        trip of its own; read after it, none. The block raising (or a statement failing)
        rolls the whole transaction back."""
        try:
            with conn.pipeline():
                # The connection is in autocommit mode: BEGIN and COMMIT are statements of
                # the pipeline (after a failed statement the server skips the rest).
                conn.execute("BEGIN")
                yield
                conn.execute("COMMIT")
        except BaseException:
            status = self._psycopg.pq.TransactionStatus
            if conn.info.transaction_status in (status.INTRANS, status.INERROR):
                conn.execute("ROLLBACK")
            raise

    def __repr__(self) -> str:
        return f"{type(self).__name__}({shown_url(self.url)!r}, root={self.root!r})"


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


__all__ = ["LEASE_SECONDS", "PgConnection", "ServerUnavailable", "shown_url"]
