"""One writer per session across machines: ``PostgresStore``'s lease with fencing tokens.

``store/lease.py`` says who holds a session and how its messages read; here is how the lease is
kept on a server every worker shares:

* The first append (or ``claim``) takes the session's row in ``writers`` with a *fencing
  token* one above the last one given (``close`` marks the lease released, heartbeat 0,
  without deleting the row, so a token is never given twice).
* Every append checks, under the session's row lock (``lock_session``), that the token is
  still its own: a worker that lost its lease (another took the session over after its
  heartbeat went stale) cannot append, even if it never noticed, nor when the takeover
  committed while its append waited for the row (the token is read once the lock is held).
* A holder on the same host is alive while its pid is (SIGKILL frees the session at once);
  on another host while its heartbeat, the server's clock at its last append, is younger
  than ``lease_seconds``.
* An append to a journal that grew since this store read or wrote it is refused as well.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..lease import (
    HEARTBEAT_SECONDS,
    Owner,
    SessionLocked,
    alive,
    changed_message,
    locked_message,
    same_process,
    this_process,
)
from .base import PgConnection

_NOW = "extract(epoch FROM clock_timestamp())"
_WRITER = (
    f"SELECT token, pid, host, started, heartbeat, {_NOW}::float8 FROM writers WHERE session = %s"
)
_LOCK = "SELECT length, head FROM sessions WHERE id = %s FOR UPDATE"
_STILL_MINE = (
    # Divides by zero (``DivisionByZero``) unless the row is as the writer knows it: the
    # count is not a constant, so the planner cannot fold the division.
    "SELECT 1 / count(*) FROM sessions s JOIN writers w ON w.session = s.id "
    "WHERE s.id = %(s)s AND s.length = %(n)s AND s.head IS NOT DISTINCT FROM %(h)s "
    "AND w.token = %(t)s AND w.heartbeat > 0"
)
_BEAT = f"UPDATE writers SET heartbeat = {_NOW} WHERE session = %s"
_TAKE = (
    "INSERT INTO writers (session, token, pid, host, started, heartbeat) "
    f"VALUES (%s, %s, %s, %s, %s, {_NOW}) ON CONFLICT (session) DO UPDATE SET "
    "token = excluded.token, pid = excluded.pid, host = excluded.host, "
    "started = excluded.started, heartbeat = excluded.heartbeat"
)

Writer = tuple[Any, ...]
"""A row of ``writers`` as ``_WRITER`` selects it: token, pid, host, started, heartbeat, now."""


class PgLease:
    """The leases of one ``PostgresStore`` on its server ``pg`` (see above)."""

    def __init__(self, pg: PgConnection) -> None:
        self.pg = pg

    def claim(self, session: str) -> None:
        """Take the session's lease now (``SessionLocked`` if another live writer holds it)."""
        with self.pg.mapped:
            with self.pg.connection() as conn, conn.transaction():
                start, _, writer = self.lock_session(conn, session)
                committed = self.hold(conn, session, start, writer, check_length=False)
            committed()

    def writer(self, session: str) -> Owner | None:
        """The live writer holding the session's lease, if any."""
        with self.pg.mapped:
            with self.pg.connection() as conn:
                row = conn.execute(_WRITER, (session,)).fetchone()
            if row is None:
                return None
            owner = Owner(row[1], row[2], row[3], row[4])
            return owner if self._alive(owner, row[5]) else None

    def token(self, session: str) -> int | None:
        """The fencing token this store writes ``session`` with (None: not its writer)."""
        return self.pg.tokens.get(session)

    def release_all(self) -> None:
        """Mark every lease this store holds released (``close``)."""
        with self.pg.mapped:
            with self.pg.lock:
                held = dict(self.pg.tokens)
                self.pg.tokens.clear()
            if held:
                with self.pg.connection() as conn:
                    conn.cursor().executemany(
                        "UPDATE writers SET heartbeat = 0 WHERE session = %s AND token = %s",
                        list(held.items()),
                    )

    def lock_session(self, conn: Any, session: str) -> tuple[int, str | None, Writer | None]:
        """Lock the session's row: its journal length and head link, and its writer's row.

        The writer's row is read by a statement of its own, after the lock is held: a
        statement sees what was committed when it started, so a takeover committed while
        this one waited for the row would be missed by a join in the locking statement (and
        a writer that lost its lease could append). On a pipeline both are sent at once:
        one round trip."""
        locked = conn.execute(_LOCK, (session,))
        writer = conn.execute(_WRITER, (session,))
        row = locked.fetchone()
        if row is None:
            raise KeyError(f"no session {session!r} in {self.pg.where}")
        found = writer.fetchone()
        return int(row[0]), row[1], None if found is None else tuple(found)

    def steady(self, session: str) -> tuple[int, str, int] | None:
        """What this store's next append to ``session`` may take as known without reading it
        first: the journal's length and head link, and its fencing token (this store holds
        the lease, its heartbeat younger than ``HEARTBEAT_SECONDS`` by this machine's clock).
        None: the append reads and checks them first (``lock_session``, ``_hold``)."""
        with self.pg.lock:
            token = self.pg.tokens.get(session)
            known = self.pg.heads.get(session)
            length = self.pg.lengths.get(session)
            beat = self.pg.beat_clock.get(session)
        if token is None or known is None or length != known[0] or beat is None:
            return None
        if time.monotonic() - beat >= HEARTBEAT_SECONDS:
            return None
        return known[0], known[1], token

    def still_mine(
        self, conn: Any, session: str, length: int, head: str | None, token: int
    ) -> None:
        """Queue the lock of the session's row, then the statement that fails with
        ``DivisionByZero`` (and so rolls the transaction back) unless the journal is at
        ``length`` and ``head`` and the lease still has ``token``, unreleased. The second
        statement starts once the lock is held: it sees a takeover committed meanwhile."""
        conn.execute(_LOCK, (session,))
        conn.execute(_STILL_MINE, {"s": session, "n": length, "h": head, "t": token})

    def _alive(self, owner: Owner, now: float) -> bool:
        if owner.heartbeat <= 0:
            return False  # released by close
        if owner.host == this_process().host:
            return alive(owner)
        return now - owner.heartbeat < self.pg.lease_seconds

    def hold(
        self,
        conn: Any,
        session: str,
        length: int,
        row: Writer | None,
        check_length: bool = True,
    ) -> Callable[[], None]:
        """Inside the transaction holding the session's row: make sure this store still holds
        the lease (its token is the newest) and the journal is the one it knows. What to
        remember once the transaction commits: remembered before, a rolled-back transaction
        would leave this store holding a token the database never recorded (and refusing
        its own retry as "lost its lease")."""
        mine = self.pg.tokens.get(session)
        token = 0 if row is None else int(row[0])
        owner = None if row is None else Owner(row[1], row[2], row[3], row[4])
        now = 0.0 if row is None else float(row[5])
        if mine is not None and token != mine:
            raise SessionLocked(_lost_message(session, self.pg.where, owner, mine, row))
        if (
            mine is None
            and owner is not None
            and not same_process(owner)
            and self._alive(owner, now)
        ):
            raise SessionLocked(locked_message(session, owner, self.pg.where))
        known = self.pg.lengths.get(session)
        if check_length and known is not None and known != length:
            raise SessionLocked(changed_message(session, self.pg.where, known, length))
        if mine is not None:
            stale = now - self.pg.beats.get(session, 0.0) >= HEARTBEAT_SECONDS
            if stale or (owner is not None and owner.heartbeat <= 0):
                # (0: released by another store object of this process meanwhile)
                conn.execute(_BEAT, (session,))
                return lambda: self._took_lease(session, None, now)
            return lambda: None
        if owner is None or not same_process(owner) or owner.heartbeat <= 0:
            token += 1  # a new writer: a new fencing token
        # else another store object of this process holds it: the lease is the process's
        me = this_process()
        conn.execute(_TAKE, (session, token, me.pid, me.host, me.started))
        return lambda: self._took_lease(session, token, now)

    def _took_lease(self, session: str, token: int | None, beat: float) -> None:
        with self.pg.lock:
            if token is not None:
                self.pg.tokens[session] = token
            self.pg.beats[session] = beat
            self.pg.beat_clock[session] = time.monotonic()


def _lost_message(
    session: str, where: str, owner: Owner | None, mine: int, row: Writer | None
) -> str:
    holder = (
        "nobody holds it now"
        if owner is None or owner.heartbeat <= 0
        else f"process {owner.pid} on {owner.host} holds it now"
    )
    token = "" if row is None else f", token {row[0]}"
    return (
        f"session {session!r} in {where}: this store lost its lease (token {mine}): it was "
        f"taken over after this writer's heartbeat went stale; {holder}{token}. Nothing was "
        "appended; resume the session again to continue from what is there"
    )


__all__ = ["PgLease", "Writer"]
