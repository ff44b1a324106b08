"""Every command under hostile environments ends with one line and a documented exit status,
never a traceback: a store the user cannot read, a store opened read only, a stdout that takes
only ASCII, a closed stdout (``>&-``), a full one (``/dev/full``), a pipe whose reader is gone,
and an interrupt (Ctrl-C) in the middle of a model call.

The commands run in this process (``main.main``, with ``sys.stdout`` the hostile stream), so
an exception nothing caught fails the test with its traceback; two subprocesses check what
only a real process shows (a reader that goes away, a SIGINT). As root, the permission
environments drop the capability to bypass file permissions for the duration of the command
(``unprivileged``), so they test the same thing as for any user.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_model import SETTINGS
from context_compact.cli import main
from context_compact.store import WORKDIR_DB

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*SETTINGS, "CC_STORE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "100")


# -- running a command ---------------------------------------------------------------------


class BrokenPipe(io.RawIOBase):
    """A pipe whose reader is gone: every write fails as the kernel's would."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def ascii_stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="ascii", newline="\n")


def run(args: list[str], stdout: Any, stderr: Any | None = None) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``context-compact ARGS`` with ``stdout`` as given.
    An exception the CLI let through propagates: the test fails with its traceback."""
    err = stderr if stderr is not None else io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, err
    code: Any = 0
    try:
        main.main(args, prog_name="context-compact")
    except SystemExit as done:
        code = done.code
    finally:
        sys.stdout, sys.stderr = saved
    return int(code or 0), written(stdout), written(err)


def written(stream: Any) -> str:
    if isinstance(stream, io.StringIO):
        return stream.getvalue()
    if isinstance(stream, io.TextIOWrapper) and isinstance(stream.buffer, io.BytesIO):
        with contextlib.suppress(ValueError):
            stream.flush()
        # click writes UTF-8 to a stream that claims ASCII (it takes that for a
        # misconfiguration); the rest of the CLI writes what the stream takes.
        return stream.buffer.getvalue().decode("utf-8")
    return ""


# -- the permission environments, for any user -----------------------------------------------

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


@contextlib.contextmanager
def unprivileged() -> Iterator[None]:
    """File permissions apply to this thread: for root, the two capabilities that bypass
    them leave its effective set for the block (they stay permitted, so they come back)."""
    if os.geteuid() != 0:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    header = CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        pytest.skip("root cannot drop its capabilities here")
    saved = data[0].effective
    data[0].effective = saved & ~((1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH))
    if libc.capset(ctypes.byref(header), data) != 0:
        pytest.skip("root cannot drop its capabilities here")
    try:
        yield
    finally:
        data[0].effective = saved
        libc.capset(ctypes.byref(header), data)


def unreadable(work: Path) -> Callable[[], None]:
    folder = (work / WORKDIR_DB).parent
    folder.chmod(0o000)
    return lambda: folder.chmod(0o755)


def read_only(work: Path) -> Callable[[], None]:
    folder = (work / WORKDIR_DB).parent
    files = [folder, *folder.iterdir()]
    for path in files:
        path.chmod(0o555 if path.is_dir() else 0o444)
    return lambda: [path.chmod(0o755) for path in files] and None


# -- the work directory and the commands -----------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """A work directory holding one imported session (its id), and the log it came from."""
    root = tmp_path_factory.mktemp("hostile")
    log = root / "log.json"
    messages = [
        {"role": "user", "content": "where is the tax code · naïve?"},
        {"role": "assistant", "content": "In app/tax.py → line_tax (café)."},
    ]
    log.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
    work = root / "work"
    code, out, err = run(["import", str(log), "--workdir", str(work), "--json"], io.StringIO())
    assert code == 0, err
    return work, json.loads(out)["sessions"][0]["id"], log


def commands(sid: str, work: Path, log: Path) -> list[list[str]]:
    at = ["--workdir", str(work)]
    return [
        ["sessions", *at],
        ["sessions", *at, "--json"],
        ["inspect", sid, *at],
        ["inspect", sid, *at, "--json"],
        ["recall", sid, "tax", *at],
        ["recall", sid, "tax", *at, "--json"],
        ["export", sid, *at],
        ["export", sid, *at, "--json"],
        ["doctor", *at],
        ["doctor", *at, "--json"],
        ["compact", sid, "--dry-run", *at],
        ["undo", sid, *at, "--json"],
        ["sessions", "prune", "--empty", "--dry-run", *at],
        ["import", str(log), *at],
        ["sessions", "rm", sid, *at, "--json"],
        ["check-model", "--base-url", "notaurl", "--model", "m", "--json"],
        ["--version"],
    ]


ENVIRONMENTS = ["unreadable store", "read-only store", "ascii", "closed", "full", "broken pipe"]


def stream_for(environment: str) -> Any:
    if environment == "ascii":
        return ascii_stream()
    if environment == "closed":
        return None
    if environment == "full":
        return open("/dev/full", "w", encoding="utf-8")
    if environment == "broken pipe":
        return io.TextIOWrapper(io.BufferedWriter(BrokenPipe()), encoding="utf-8")
    return io.StringIO()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_no_command_ends_in_a_traceback_under_a_hostile_environment(
    template: tuple[Path, str, Path], tmp_path: Path, environment: str
) -> None:
    source, sid, log = template
    work = tmp_path / "work"
    shutil.copytree(source, work)
    restore: Callable[[], None] = lambda: None  # noqa: E731
    if environment == "unreadable store":
        restore = unreadable(work)
    elif environment == "read-only store":
        restore = read_only(work)
    try:
        for args in commands(sid, work, log):
            stdout = stream_for(environment)
            stderr = ascii_stream() if environment == "ascii" else None
            with unprivileged():
                code, out, err = run(args, stdout, stderr)
            if hasattr(stdout, "close") and environment == "full":
                with contextlib.suppress(OSError):
                    stdout.close()
            assert code in (0, 1, 2), (args, code, err)
            assert "Traceback" not in err, (args, err)
            if code and environment != "broken pipe":  # a reader gone needs no word
                assert (err + out).strip(), f"{args} failed ({code}) without saying why"
            if environment in ("closed", "full", "broken pipe") and args[0] != "check-model":
                # A command whose output could not be written never says it succeeded.
                assert code == 1, (args, code, err)
            if environment == "ascii" and "--json" in args:
                json.loads(out)  # exact JSON, every character escaped
    finally:
        restore()


def test_the_store_environments_are_refused_in_one_line_naming_the_store(
    template: tuple[Path, str, Path], tmp_path: Path
) -> None:
    source, sid, _ = template
    for make, command in ((unreadable, ["sessions"]), (read_only, ["sessions", "rm", sid])):
        work = tmp_path / make.__name__
        shutil.copytree(source, work)
        restore = make(work)
        try:
            with unprivileged():
                code, _, err = run([*command, "--workdir", str(work)], io.StringIO())
        finally:
            restore()
        assert code == 1, err
        (line,) = err.strip().splitlines()
        assert str(work / WORKDIR_DB) in line and "Usage:" not in err


def test_undo_on_a_read_only_store_is_one_line(
    template: tuple[Path, str, Path], tmp_path: Path
) -> None:
    """``undo`` writes its record through the session journal: the refusal comes back
    wrapped, and is still the store's one line."""
    from context_compact import Compactor, Policy
    from context_compact.store import SqliteStore

    source, sid, _ = template
    work = tmp_path / "work"
    shutil.copytree(source, work)
    store = SqliteStore(work / WORKDIR_DB)
    compactor = Compactor(Policy.default(context_limit=4_000), store, session=sid)
    big = [
        {"role": "user", "content": f"question {i} " + "words " * 300}
        if i % 2 == 0
        else {"role": "assistant", "content": f"answer {i} " + "words " * 300}
        for i in range(12)
    ]
    compactor.compact_history([*compactor.view(), *big], "go on")
    store.close()
    restore = read_only(work)
    try:
        with unprivileged():
            code, _, err = run(["undo", sid, "--workdir", str(work)], io.StringIO())
    finally:
        restore()
    assert code == 1 and "Traceback" not in err
    assert "reading only" in err and str(work / WORKDIR_DB) in err


# -- exit statuses and --json -----------------------------------------------------------------


def test_sessions_json_in_a_folder_without_sessions_is_an_empty_list(tmp_path: Path) -> None:
    code, out, err = run(["sessions", "--json", "--workdir", str(tmp_path)], io.StringIO())
    assert (code, json.loads(out), err) == (0, [], "")
    assert not (tmp_path / WORKDIR_DB).exists()  # listing creates no store


def test_a_usage_mistake_under_json_is_a_json_object_and_exit_2(tmp_path: Path) -> None:
    code, out, _err = run(["sessions", "--json", "--no-such-option"], io.StringIO())
    assert code == 2 and json.loads(out)["exit_code"] == 2
    assert "--no-such-option" in json.loads(out)["error"]


def test_a_failure_is_no_usage_mistake_and_under_json_is_a_json_object(tmp_path: Path) -> None:
    code, out, err = run(["inspect", "nope", "--workdir", str(tmp_path)], io.StringIO())
    assert code == 1 and "Usage:" not in err and "no sessions in" in err
    code, out, err = run(["inspect", "nope", "--json", "--workdir", str(tmp_path)], io.StringIO())
    assert code == 1 and json.loads(out) == {"error": err.strip()[len("Error: ") :], "exit_code": 1}


def test_an_empty_store_url_is_a_usage_mistake_not_the_default(tmp_path: Path) -> None:
    code, _, err = run(["--store", "", "sessions", "--workdir", str(tmp_path)], io.StringIO())
    assert code == 2 and "--store" in err and "empty" in err


@pytest.mark.parametrize("url", ["notaurl", "", "ftp://example.com/v1", "http://"])
def test_check_model_refuses_a_base_url_that_is_not_http(url: str) -> None:
    code, _, err = run(["check-model", "--base-url", url, "--model", "m"], io.StringIO())
    assert code == 2 and "--base-url" in err and "http://" in err


def test_recall_that_finds_nothing_fails(template: tuple[Path, str, Path]) -> None:
    work, sid, _ = template
    for query in ("message 99999", "zzz-not-there"):
        code, out, err = run(["recall", sid, query, "--workdir", str(work)], io.StringIO())
        assert code == 1 and out == "" and "nothing" in err


def test_importing_a_device_says_it_is_not_a_regular_file(tmp_path: Path) -> None:
    code, _, err = run(["import", os.devnull, "--workdir", str(tmp_path)], io.StringIO())
    assert code == 1 and "not a regular file" in err and "no such file" not in err


def test_the_ascii_demo_runs_to_its_end(tmp_path: Path) -> None:
    stdout, stderr = ascii_stream(), ascii_stream()
    code, out, err = run(["demo", "--workdir", str(tmp_path / "demo")], stdout, stderr)
    assert code == 0, err
    assert "app/tax.py fixed" in out


# -- what only a real process shows ------------------------------------------------------------


def cli_process(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "context_compact.cli", *args]
    return subprocess.Popen(command, env={**env, **kwargs.pop("env", {})}, **kwargs)


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    log = tmp_path / "big.json"
    messages = [{"role": "user", "content": "x" * 8_000_000}, {"role": "assistant", "content": "k"}]
    log.write_text(json.dumps(messages), encoding="utf-8")
    _code, out, _ = run(["import", str(log), "--workdir", str(tmp_path), "--json"], io.StringIO())
    sid = json.loads(out)["sessions"][0]["id"]
    args = ["export", sid, "--workdir", str(tmp_path)]
    process = cli_process(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()
    err = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=60) in (0, 1)
    assert "Traceback" not in err and "Exception ignored" not in err


def test_ctrl_c_during_a_model_call_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as server:  # accepts the connection, never answers
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(30)
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        env = {"MODEL_ID": "claude-test", "ANTHROPIC_BASE_URL": url}
        args = ["run", "hi", "--json", "--workdir", str(tmp_path), "--context-limit", "8000"]
        process = cli_process(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        connection, _ = server.accept()
        with connection:
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
    assert process.returncode == 1, err
    assert "Traceback" not in err.decode() and "interrupted" in err.decode()
    assert json.loads(out)["error"].startswith("interrupted")


def test_prune_empty_removes_the_session_a_run_that_failed_at_once_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stub_api import closed_port_url

    monkeypatch.setenv("MODEL_ID", "claude-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", closed_port_url())
    args = ["run", "hi", "--workdir", str(tmp_path), "--max-retries", "0"]
    code, _, err = run(args, io.StringIO())
    assert code == 1 and "Traceback" not in err
    listed = ["sessions", "--json", "--workdir", str(tmp_path)]
    assert [row["turns"] for row in json.loads(run(listed, io.StringIO())[1])] == [0]
    prune = ["sessions", "prune", "--empty", "--json", "--workdir", str(tmp_path)]
    code, out, _ = run(prune, io.StringIO())
    assert code == 0 and len(json.loads(out)["removed"]) == 1
    assert json.loads(run(listed, io.StringIO())[1]) == []
