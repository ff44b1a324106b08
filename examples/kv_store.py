"""A store backend of your own: both doors of the Store protocol over a key-value database.

The database here is the standard library's ``dbm.dumb`` (one file, any platform); the same
class over Redis, DynamoDB or your company's blob store changes only the five ``_get``/
``_put`` lines. Run it: it compacts a 60-turn session on this store, opens the store again
as a restarted process would, resumes the session to the same view, and finds every planted
fact with ``recall``.

    python examples/kv_store.py [FOLDER]
"""

from __future__ import annotations

import dbm.dumb
import json
import sys
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from context_compact import Compactor, Policy
from context_compact.errors import SessionExists
from context_compact.store.base import Store
from context_compact.store.codec import (
    Record,
    append_rel,
    archive_rel,
    blob_rel,
    decode,
    dumps_records,
    encode,
    is_media,
    jsonl,
    media_rel,
    sha256,
    tool_result_rel,
    transcript_rel,
)
from context_compact.testing import synthetic_session


class KeyValueStore:
    """Files under ``file:<path>``, each session's meta under ``meta:<id>`` (their ids under
    ``sessions``), its journal as one value per append under ``batch:<id>:<n>`` and the
    count under ``batches:<id>``."""

    def __init__(self, path: str | Path, root: str = "/kv") -> None:
        self.root = root  # the prefix of every path this store hands out
        self._db = dbm.dumb.open(str(path), "c")  # noqa: SIM115 (held until close)

    def _get(self, key: str) -> bytes | None:
        return self._db.get(key)

    def _put(self, key: str, value: bytes) -> None:
        self._db[key] = value

    # -- the archive door: files the model can open ----------------------------------------
    def _file(self, rel: str, data: bytes, keep: bool = True) -> str:
        path = f"{self.root}/{rel}"
        if not (keep and self._get(f"file:{path}") is not None):
            self._put(f"file:{path}", data)
        return path

    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        return self._file(tool_result_rel(tool_use_id), encode(content))

    def save_blob(self, content: str) -> str:
        data = encode(content)
        return self._file(blob_rel(sha256(data)), data)

    def save_pack(self, pieces: list[str]) -> str:
        return self.save_blob("".join(pieces))

    def save_media(self, data: bytes, media_type: str) -> str:
        return self._file(media_rel(sha256(data), media_type), bytes(data))

    def write_transcript(self, messages: list[Any]) -> str:
        return self._file(transcript_rel(uuid.uuid4().hex), encode(jsonl(messages)))

    def save_messages(self, messages: list[Any]) -> str:
        data = encode(jsonl(messages))
        return self._file(archive_rel(sha256(data)), data)

    def append_file(self, name: str, text: str) -> str:
        rel = append_rel(name)
        before = self._get(f"file:{self.root}/{rel}") or b""
        return self._file(rel, before + encode(text), keep=False)

    def issued(self, path: str) -> bool:
        return isinstance(path, str) and self._get(f"file:{path}") is not None

    def read_text(self, path: str) -> str:
        if is_media(path.removeprefix(f"{self.root}/")) and self.issued(path):
            raise ValueError(f"{path} is a binary media file, not text: use read_bytes")
        return decode(self.read_bytes(path))

    def read_bytes(self, path: str) -> bytes:
        data = self._get(f"file:{path}") if isinstance(path, str) else None
        if data is None:
            raise KeyError(f"not a path this store issued: {path}")
        return data

    # -- the journal door: sessions and their records --------------------------------------
    def create_session(self, meta: dict[str, Any]) -> str:
        session = str(meta.get("id") or uuid.uuid4().hex[:12])
        if self.session_meta(session) is not None:
            raise SessionExists(f"session {session!r} already exists in {self.root}")
        created = datetime.now(UTC).isoformat(timespec="microseconds")
        full = {**meta, "id": session, "created": created}
        self._put(f"meta:{session}", json.dumps(full).encode())
        self._put(f"batches:{session}", b"0")
        self._put("sessions", json.dumps([*self._sessions(), session]).encode())
        return session

    def session_meta(self, session: str) -> dict[str, Any] | None:
        found = self._get(f"meta:{session}")
        return None if found is None else dict(json.loads(found))

    def list_sessions(self) -> list[dict[str, Any]]:
        metas = [self.session_meta(session) for session in self._sessions()]
        return sorted(filter(None, metas), key=lambda meta: str(meta["created"]), reverse=True)

    def _sessions(self) -> list[str]:
        return list(json.loads(self._get("sessions") or b"[]"))

    def append(self, session: str, records: list[Record]) -> None:
        count = self._count(session)
        # The batch first, then the count that makes it part of the journal: a crash in
        # between leaves a value no reader counts, so a batch is whole or absent.
        self._put(f"batch:{session}:{count}", dumps_records(records).encode("ascii"))
        self._put(f"batches:{session}", str(count + 1).encode())
        self._db.sync()

    def records(self, session: str) -> Iterator[Record]:
        batches = [self._db[f"batch:{session}:{n}"] for n in range(self._count(session))]
        return (record for batch in batches for record in json.loads(batch))

    def claim(self, session: str) -> None:
        self._count(session)  # one process: nothing to lease, but the session must exist

    def close(self) -> None:
        self._db.close()

    def _count(self, session: str) -> int:
        found = self._get(f"batches:{session}")
        if found is None:
            raise KeyError(f"no session {session!r} in {self.root}")
        return int(found)


def main(folder: Path) -> None:
    work = synthetic_session(turns=60, seed=1)  # every tool result carries a planted fact
    # Summaries at the trigger, not made ahead on a thread: the same run, the same output.
    policy = Policy.default(context_limit=6_000, summarize_ahead=False)
    store: Store = KeyValueStore(folder / "store")  # mypy checks the class against both doors
    compactor = Compactor(policy, store, session="demo")
    messages: list[Any] = [{"role": "user", "content": work.request}]
    sent = 1
    for turn in work.turns:
        messages = compactor.prepare(messages, work.request)
        messages += [turn.assistant, turn.results]
        sent += 2
    view = compactor.prepare(messages, work.request)
    store.close()

    again = KeyValueStore(folder / "store")  # as a restarted process would
    resumed = Compactor(policy, again, session="demo")
    assert resumed.prepare(messages, work.request) == view, "the resumed view differs"
    lost = [fact for fact in work.facts if not resumed.recall(fact).hits]
    assert lost == [], f"facts no recall finds: {lost}"
    print(f"compaction events: {len(compactor.events)}")
    print(f"view: {len(view)} messages for a history of {sent}; resumed to the same view")
    print(f"facts found by recall: {len(work.facts)} of {len(work.facts)}")
    again.close()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as where:
            main(Path(where))
