"""What every part of ``PostgresStore`` stands on: psycopg loaded lazily, the pool, the errors.

``PgConnection`` opens the store: migrates the schema (``postgres/schema.py``), records this
worker's root, and keeps a pool of autocommit connections shared by threads. The shared
state of the store's parts (the lease: ``postgres/lease.py``, the journal:
``postgres/sessions.py``) lives here, behind one lock that is never held during a query.

Errors, so that a caller sees one line and never a driver's traceback: no ``psycopg.Error``
leaves a method of ``PostgresStore``: each method of its parts that reaches the server runs
in the block ``mapped`` (``store.boundary``, ``refusal``), and each becomes ours with the
driver's as ``__cause__``:

* the server unreachable or failing (connection lost, disk full, shutting down, a pool
  timeout: ``OperationalError``) is ``ServerUnavailable``, a ``StoreRefused`` like a full
  disk, so the engine fails soft on it (``STORE_ERRORS``); its ``reason`` from the SQLSTATE
  (``full``, ``busy``, ``io``, else ``unreachable``);
* a server that takes no writes (SQLSTATE 25006, a standby) is ``StoreRefused``
  (``read-only``);
* the schema not what this version wrote (a table or column dropped, data the server finds
  corrupt: ``ProgrammingError``, ``DataError``, ``InternalError``) is ``CorruptStore``,
  naming the server, the schema and the server's own words;
* any other (``IntegrityError``, ``InterfaceError``...) is ``StoreRefused`` (``other``).

A URL the driver does not take (a misspelt parameter, ``&sslmod=``) is ``ConfigError`` naming
it before anything is opened (``url_refusal``), never taken for damaged tables.
"""

from __future__ import annotations

import contextlib
import difflib
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ...errors import (
    ConfigError,
    CorruptStore,
    MissingExtra,
    Refusal,
    StoreError,
    StoreRefused,
)
from ...errors import ServerUnavailable as ServerUnavailable  # kept importable from here
from ..boundary import map_errors
from ..disk import Root
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


def url_refusal(url: str) -> str | None:
    """Why libpq would not take ``url`` (a misspelt parameter: ``sslmod=``), one line with
    the parameter meant when one is close; None when it takes it (or psycopg is missing, which
    ``_psycopg`` says). Nothing is opened."""
    try:
        import psycopg
    except ImportError:
        return None
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error as error:
        line = _first_line(error)
        names = [d.keyword.decode() for d in psycopg.pq.Conninfo.get_defaults()]
        given = [key for key, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)]
        meant = [
            f"{key!r} (did you mean {close[0]!r}?)"
            for key in given
            if key not in names and (close := difflib.get_close_matches(key, names, 1))
        ]
        hint = f"; a typo in {', '.join(meant)}" if meant else ""
        return f"{shown_url(url)} is not a PostgreSQL URL the driver takes: {line}{hint}"
    return None


def shown_url(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


class PgConnection:
    """The server a ``PostgresStore`` is on: its pool, its errors mapped (``mapped``), and the
    state its parts share (what this store knows of each session's journal and lease),
    behind ``lock``, which is never held during a query."""

    def __init__(
        self,
        url: str,
        root: Root,
        schema: str = "context_compact",
        lease_seconds: float = LEASE_SECONDS,
        pool_size: int = 4,
        durable: bool = False,
    ) -> None:
        psycopg, psycopg_pool = _psycopg()
        wrong = url_refusal(url)
        if wrong is not None:  # the URL's fault, not the server's or the tables'
            raise ConfigError(wrong)
        self.psycopg = psycopg
        """The psycopg module (loaded before any of its errors can happen)."""
        self.url = url
        self.schema = check_schema(schema)
        self.lease_seconds = lease_seconds
        self.where = f"{shown_url(url)} (schema {schema})"
        self.mapped = map_errors(lambda error: refusal(self, error))
        with self.mapped:
            with psycopg.connect(url, autocommit=True) as conn:
                migrate(conn, schema, self.where)
                conn.execute(
                    f"INSERT INTO {schema}.roots (root) VALUES (%s) ON CONFLICT DO NOTHING",
                    (root.absolute,),
                )
                found = conn.execute(f"SELECT id FROM {schema}.instance").fetchone()
            self.instance: str = found[0]
            """This schema's id, made with it: a schema dropped and made again is another."""
            options = f"-c search_path={schema}"
            if not durable:
                # Like SqliteStore's default: a commit survives any crash of this process (the
                # server has it); one of the server itself may lose its last fraction of a
                # second.
                options += " -c synchronous_commit=off"
            self.pool = psycopg_pool.ConnectionPool(
                url,
                min_size=1,
                max_size=max(1, pool_size),
                kwargs={"autocommit": True, "options": options},
                name=f"context-compact:{schema}",
                open=True,
            )
        self.lock = threading.Lock()  # guards the dicts below, never held during a query
        self.lengths: dict[str, int] = {}  # journal length last read or written, per session
        self.heads: dict[str, tuple[int, str]] = {}  # ... with the chain's link at that length
        self.tokens: dict[str, int] = {}  # sessions this store writes -> its fencing token
        self.beats: dict[str, float] = {}  # ... -> the server time of its last heartbeat
        self.beat_clock: dict[str, float] = {}  # ... -> this machine's clock then (monotonic)

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection (inside the caller's ``mapped`` block)."""
        with self.pool.connection() as conn:
            yield conn

    @contextlib.contextmanager
    def batch(self) -> Iterator[Any]:
        """A pooled connection with one transaction on a pipeline (``one_trip``)."""
        with self.connection() as conn, self.one_trip(conn):
            yield conn

    @contextlib.contextmanager
    def one_trip(self, conn: Any) -> Iterator[None]:
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
            status = self.psycopg.pq.TransactionStatus
            if conn.info.transaction_status in (status.INTRANS, status.INERROR):
                conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self.mapped:
            self.pool.close()


# SQLSTATEs (or their two-character classes) of a server error and the reason each is.
_REASONS: dict[str, Refusal] = {
    "53": "full",  # insufficient resources: disk full, out of memory, too many connections
    "55P03": "busy",  # lock not available
    "40P01": "busy",  # deadlock detected
    "58": "io",  # system error: an I/O error, a file the server cannot find
}


def refusal(server: PgConnection, error: BaseException) -> StoreError | None:
    """Ours for psycopg's ``error`` out of ``server`` (see the module docstring); None for
    anything else."""
    psycopg = server.psycopg
    if not isinstance(error, psycopg.Error):
        return None
    where = server.where
    line = f"{where}: {_first_line(error)}"
    code = str(getattr(error, "sqlstate", None) or "")
    if isinstance(error, psycopg.OperationalError):
        reason = _REASONS.get(code) or _REASONS.get(code[:2]) or "unreachable"
        return ServerUnavailable(line, reason=reason, where=where, code=code, backend_error=error)
    if code == "25006":  # read-only SQL transaction: a standby, or a server set so
        return StoreRefused(line, reason="read-only", where=where, code=code, backend_error=error)
    if isinstance(error, (psycopg.ProgrammingError, psycopg.DataError, psycopg.InternalError)):
        return CorruptStore(
            f"{where}: the store's tables are not what this version wrote ({_first_line(error)})"
        )
    return StoreRefused(line, where=where, code=code, backend_error=error)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


__all__ = [
    "LEASE_SECONDS",
    "PgConnection",
    "ServerUnavailable",
    "refusal",
    "shown_url",
    "url_refusal",
]
