"""What every store's session journal agrees on: ids, meta, the records' checks.

* A session id is 1-128 characters of ``[A-Za-z0-9._-]``, not starting with ``.``: it names
  files in ``FileStore``, so a session moves between stores unchanged. New ids are the first
  12 hex digits of a uuid4.
* Meta is the dict given to ``create_session`` plus ``id`` and ``created`` (ISO-8601 UTC with
  microseconds, fixed width, so its text sorts by time; the store sets it, a given one is
  replaced). ``created`` strictly increases within a process, so "newest first" has no ties
  between sessions made here.
* A record is a JSON object with a string ``"kind"``; it is stored as strict JSON
  (``codec.dumps``; no ``default=``: what cannot round-trip is refused at ``append``, not
  lost later) with ``ensure_ascii`` so lone surrogates survive as ``\\udXXX`` escapes and
  the stored text is plain ASCII (SQLite and other readers refuse invalid UTF-8).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeGuard

from ..errors import CorruptJournal as CorruptJournal  # the store's errors, kept here too
from ..errors import SessionExists as SessionExists
from .codec import Meta, Record, dumps

__all__ = ["CorruptJournal", "SessionExists"]

_SESSION_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
_clock = threading.Lock()
_last_created: datetime | None = None


def valid_session_id(session: object) -> TypeGuard[str]:
    return isinstance(session, str) and _SESSION_ID.fullmatch(session) is not None


def shown_id(session: object, limit: int = 60) -> str:
    """``repr(session)``, clipped: an error line stays one readable line for any input."""
    text = repr(session)
    if len(text) <= limit:
        return text
    size = f" ({len(session)} characters)" if isinstance(session, str) else ""
    return f"{text[: limit - 1]}…{size}"


def utc_now() -> str:
    """ISO-8601 UTC time, strictly later than the previous call in this process."""
    global _last_created
    with _clock:
        now = datetime.now(UTC)
        if _last_created is not None and now <= _last_created:
            now = _last_created + timedelta(microseconds=1)
        _last_created = now
    return now.isoformat(timespec="microseconds")


def new_meta(meta: Meta) -> tuple[str, Meta]:
    """The new session's id, and the meta it is stored with: ``meta`` plus ``id`` and
    ``created``."""
    if not isinstance(meta, dict):
        raise TypeError(f"session meta must be a dict, not {type(meta).__name__}")
    given = meta.get("id")
    if given is None:
        session = uuid.uuid4().hex[:12]
    elif valid_session_id(given):
        session = given
    else:
        raise ValueError(
            f"not a valid session id: {shown_id(given)} (1-128 characters of "
            "[A-Za-z0-9._-], not starting with '.')"
        )
    full = {**meta, "id": session, "created": utc_now()}
    # Refuse what JSON cannot hold now, before anything is written.
    return session, dict(json.loads(dumps(full)))


def check_records(records: Sequence[Record]) -> None:
    """``TypeError``/``ValueError`` unless ``records`` is a list of dicts with a string kind."""
    if not isinstance(records, list | tuple):
        raise TypeError(f"records must be a list of dicts, not {type(records).__name__}")
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            raise ValueError(f'a record is a dict with a string "kind": {record!r:.200}')
