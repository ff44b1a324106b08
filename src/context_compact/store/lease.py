"""One writer per session: who holds a session, whether that writer still lives, and the error
another process gets.

A session's journal is a single ordered history; two processes appending to it would
interleave two conversations into one. Each durable store therefore keeps a *lease* per
session it writes, taken at its first ``append`` (or ``claim``) and released by ``close``:

* ``SqliteStore``: a row of the ``writers`` table (session, pid, host, process start time,
  heartbeat), checked and taken inside the append's own ``BEGIN IMMEDIATE`` transaction;
* ``FileStore``: ``<id>.lock`` beside the journal, held with ``flock`` (the kernel drops it
  when the process dies) and holding the owner's pid and host for the error message.

A lease held by a process that is gone does not block anyone: on the same host the owner is
alive only if its pid exists *and* started when the lease says (a reused pid is not the
owner); a lease from another host is alive while its heartbeat (refreshed by appends) is
younger than ``REMOTE_LEASE_SECONDS``. The same process may open a session through several
store objects: the lease is the process's, not the object's.

A lease alone cannot tell a process that read the journal *before* another one wrote it;
so each store also remembers the journal length it last read or wrote, and an append to a
journal that grew behind its back is refused (``SessionLocked`` too): resume the session
again to continue from what is there.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..errors import SessionLocked

REMOTE_LEASE_SECONDS = 600.0
HEARTBEAT_SECONDS = 5.0


@dataclass(frozen=True)
class Owner:
    pid: int
    host: str
    started: str
    heartbeat: float = 0.0

    def as_dict(self) -> dict[str, int | str | float]:
        return {
            "pid": self.pid,
            "host": self.host,
            "started": self.started,
            "heartbeat": self.heartbeat,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Owner:
        return cls(
            int(data.get("pid") or 0),
            str(data.get("host") or ""),
            str(data.get("started") or ""),
            float(data.get("heartbeat") or 0.0),
        )


def process_start(pid: int) -> str:
    """When process ``pid`` started, as the kernel counts it ('' where it cannot be read:
    then the pid alone identifies the process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[19].decode("ascii")  # field 22, starttime, counted after the name
    except (OSError, IndexError):
        return ""


@cache
def _me(pid: int) -> tuple[str, str]:
    return socket.gethostname(), process_start(pid)


def this_process() -> Owner:
    pid = os.getpid()  # not cached: a forked child is another writer
    host, started = _me(pid)
    return Owner(pid, host, started, time.time())


def same_process(owner: Owner) -> bool:
    me = this_process()
    return (owner.pid, owner.host, owner.started) == (me.pid, me.host, me.started)


def alive(owner: Owner, now: float | None = None) -> bool:
    """Whether the process holding a lease may still write (see the module docstring)."""
    if owner.host != this_process().host:
        return (now or time.time()) - owner.heartbeat < REMOTE_LEASE_SECONDS
    if owner.pid <= 0:
        return False
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    return not owner.started or process_start(owner.pid) in ("", owner.started)


def locked_message(session: str, owner: Owner, where: str) -> str:
    age = max(0.0, time.time() - owner.heartbeat) if owner.heartbeat else None
    seen = f", last write {age:.0f} s ago" if age is not None else ""
    return (
        f"session {session!r} in {where} is being written by process {owner.pid} on "
        f"{owner.host}{seen}; wait for it to finish or stop it (a process that died releases "
        "the session by itself)"
    )


def changed_message(session: str, where: str, known: int, found: int, unit: str = "records") -> str:
    """``known`` and ``found`` are the journal's length in ``unit`` (a FileStore measures
    its journal in bytes)."""
    return (
        f"session {session!r} in {where} was written by another process since this one read "
        f"it ({found:,} {unit}, {known:,} known here); resume it again to continue from there"
    )


__all__ = [
    "HEARTBEAT_SECONDS",
    "REMOTE_LEASE_SECONDS",
    "Owner",
    "SessionLocked",
    "alive",
    "changed_message",
    "locked_message",
    "process_start",
    "same_process",
    "this_process",
]
