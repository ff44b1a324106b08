"""A session continues after any exit, SIGKILL included, exactly where it was.

The reference is the same script run without interruption: after a kill, the reopened
session's view and every view it sends next are equal to the reference's, byte for byte.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from resume_script import open_compactor, play

from context_compact.store import SqliteStore

HERE = Path(__file__).parent
KILLS = int(os.environ.get("RESUME_KILLS", "6"))
# The environment as the tests found it (read at collection, before any test ran): what a
# fresh process gets, whatever a test or a library it drove changed since.
ENVIRON = dict(os.environ)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """Where each run keeps its store. Paths are part of the views (and of the archives'
    content hashes), so the reference runs in the same directory first and moves away."""
    return tmp_path / "work"


@pytest.fixture
def reference(work: Path) -> dict[int, str]:
    work.mkdir()
    c = open_compactor(str(work / "sessions.db"), "s")
    sent = play(c)
    c.store.close()
    work.rename(work.with_name("reference"))
    work.mkdir()
    return sent


def test_the_reference_script_compacts_many_times(
    reference: dict[int, str],
) -> None:
    # The script must exercise persist, clear and summarize or the comparison proves little.
    views = [json.loads(v) for v in reference.values()]
    assert max(map(len, views)) > 2 * min(map(len, views[10:]))
    for marker in ("<persisted-output-", "[Tool result cleared", "[Compacted]"):
        assert any(marker in view for view in reference.values()), marker


def test_a_session_reopened_in_process_shows_the_same_view(tmp_path: Path) -> None:
    db = str(tmp_path / "sessions.db")
    first = open_compactor(db, "s1")
    request_view = first.prepare([{"role": "user", "content": "x"}], "x")
    assert request_view
    first.store.close()
    again = open_compactor(db, "s1")
    assert again.view() == request_view
    again.store.close()


def test_a_resumed_session_continues_byte_for_byte(work: Path, reference: dict[int, str]) -> None:
    db = str(work / "sessions.db")
    c = open_compactor(db, "s")
    sent = play(c)
    c.store.close()
    assert sent == reference
    reopened = open_compactor(db, "s")
    assert json.dumps(reopened.view()) == reference[max(reference)]
    reopened.store.close()


def _script(*args: str) -> list[str]:
    return [sys.executable, str(HERE / "resume_script.py"), *args]


@pytest.fixture
def fresh_reference(work: Path, tmp_path: Path) -> Path:
    """The reference run in a process of its own, as the killed one and its resume are (a
    process that ran other tests first is not a clean reference); the file of its views."""
    work.mkdir()
    out = tmp_path / "reference.json"
    env = {**ENVIRON, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    subprocess.run(_script(str(work / "sessions.db"), "s", "--dump", str(out)), env=env, check=True)
    work.rename(work.with_name("reference"))
    work.mkdir()
    return out


def test_a_session_in_this_process_sends_what_one_in_a_fresh_process_sends(
    work: Path, fresh_reference: Path
) -> None:
    # A process that ran other tests first (a worker runs hundreds) compacts as a fresh one:
    # nothing a test did outlives it in a module or in the environment. (A tokenizer found
    # once and remembered for the process made sessions here compact earlier.)
    expected = {int(k): v for k, v in json.loads(fresh_reference.read_text()).items()}
    c = open_compactor(str(work / "sessions.db"), "s")
    sent = play(c)
    c.store.close()
    first = next((n for n in sorted(expected) if sent.get(n) != expected[n]), None)
    assert first is None, f"the view after {first} messages differs from a fresh process's"
    assert sent.keys() == expected.keys()


@pytest.mark.parametrize("run", range(KILLS))
def test_a_session_killed_at_a_random_moment_resumes_intact(
    work: Path, fresh_reference: Path, run: int
) -> None:
    db = work / "sessions.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    process = subprocess.Popen(_script(str(db), "s"), env=env)
    time.sleep(random.Random(run).uniform(0.3, 1.4))
    process.send_signal(signal.SIGKILL)
    process.wait()
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    raw.close()
    c = open_compactor(str(db), "s")
    assert isinstance(c.store, SqliteStore)
    messages = [r for r in c.store.records("s") if r["kind"] == "message"]
    c.store.close()
    assert [r["seq"] for r in messages] == list(range(len(messages)))
    resumed = subprocess.run(
        _script(str(db), "s", "--check", str(fresh_reference)),
        env=env,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr


def real_scripts() -> list[Any]:
    from context_compact.loaders import load_all
    from context_compact.testing.script import from_session
    from context_compact.testing.trajectories import default_trajectories

    where = default_trajectories()
    if not where.is_dir():
        pytest.skip(f"no trajectory pack at {where}")
    return [from_session(s) for s in load_all(where)]


def test_every_recorded_session_resumed_halfway_sends_the_same_views(tmp_path: Path) -> None:
    from context_compact import Compactor, Policy, SqliteStore
    from context_compact.testing.fakes import BenchSummarizer

    def play_script(script: Any, db: Path, stop: int | None = None) -> list[str]:
        c = Compactor(
            Policy.default(context_limit=12_500), SqliteStore(db), BenchSummarizer(), session="s"
        )
        messages = c.view() or list(script.head)
        done = sum(1 for r in c.store.records("s") if r["kind"] == "message")
        first = (
            0
            if not done
            else next(
                i
                for i in range(len(script.steps) + 1)
                if len(script.head) + sum(len(s) for s in script.steps[:i]) == done
            )
        )
        if done:
            messages += list(script.steps[first])
            first += 1
        sent = []
        for i in range(first, len(script.steps) + 1):
            messages = c.prepare(messages, script.requests[min(i, len(script.steps) - 1)])
            sent.append(json.dumps(messages))
            if i == stop or i == len(script.steps):
                break
            messages = messages + list(script.steps[i])
        c.store.close()
        return sent

    scripts = real_scripts()
    for n, script in enumerate(scripts):
        work = tmp_path / f"w{n}"
        work.mkdir()
        whole = play_script(script, work / "db")
        work.rename(tmp_path / f"ref{n}")
        work.mkdir()
        half = len(script.steps) // 2
        first = play_script(script, work / "db", stop=half)
        rest = play_script(script, work / "db")
        assert first + rest == whole, script.name
    assert len(scripts) >= 19
