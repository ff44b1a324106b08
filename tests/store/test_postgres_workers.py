"""A session started on one worker and continued on another (another machine: the files its
view names are not on disk there): the view, ``read_file`` and ``recall`` all get the copies
from the database."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from context_compact import Compactor, Policy
from context_compact.agent.tools import Workspace
from context_compact.store.postgres import PostgresStore
from histories import call, results, user
from postgres_server import require

BIG = "output line with TaxMismatch\n" * 2_000  # persisted with a preview, far over its limit


def test_a_session_continued_on_another_worker_reads_its_copies_from_the_database(
    tmp_path: Path, schema: str
) -> None:
    workdir = tmp_path / "srv"  # the same work directory path on both workers
    first = PostgresStore(require(), root=workdir, schema=schema)
    try:
        compactor = Compactor(Policy.default(context_limit=20_000), first)
        view = compactor.prepare([user("t"), call("a"), results(("a", BIG))], "t")
        sid = compactor.session_id
    finally:
        first.close()
    [path] = set(re.findall(r"/\S+/\.task_outputs/tool-results/\S+\.txt", str(view)))
    shutil.rmtree(workdir)  # the other machine has none of the first one's files
    workdir.mkdir()
    second = PostgresStore(require(), root=workdir, schema=schema)
    try:
        again = Compactor(Policy.default(context_limit=20_000), second, session=sid)
        assert again.view() == view
        assert "TaxMismatch" in again.recall(path).text
        tools = Workspace(workdir, read_roots=(workdir,), recover=again.recover_file)
        read = tools.run("read_file", {"path": path, "limit": 3})
        assert not read.is_error and "output line with TaxMismatch" in read.text
        assert Path(path).is_file()  # cached on this worker now
    finally:
        second.close()


def test_a_conversation_continues_on_another_worker_under_the_same_key(
    tmp_path: Path, schema: str
) -> None:
    from context_compact.integrations import Conversations

    policy = Policy.default(context_limit=20_000)
    first = PostgresStore(require(), root=tmp_path / "a", schema=schema)
    try:
        here = Conversations(policy, first).get("thread-9")
        view = here.prepare([user("find the TaxMismatch")], "find the TaxMismatch")
    finally:
        first.close()  # the worker stops; its lease is released
    second = PostgresStore(require(), root=tmp_path / "b", schema=schema)
    try:
        there = Conversations(policy, second).get("thread-9")
        assert there.session_id == here.session_id and there.view() == view
        there.prepare([*view, call("a"), results(("a", BIG))], "find the TaxMismatch")
        assert second.token(str(there.session_id)) == 2  # a new writer, a new fencing token
        assert len(second.list_sessions()) == 1
    finally:
        second.close()
