"""How every command ends: its exit status, its error line, and what it does when its output
cannot be written.

Exit statuses (the CLI guide's table): 0 the command did what was asked; 1 it failed (the
error line says what and what to do); 2 the command line itself is wrong (an unknown
command or option, a missing argument, a value of the wrong form, options that do not go
together). Only a status 2 is preceded by click's "Usage:" banner.

Invariants, whatever the environment:

* no traceback: an output stream that is closed (``>&-``), full (``/dev/full``), gone (a
  closed pipe) or that cannot take a character (``PYTHONIOENCODING=ascii``) ends the command
  with one line on stderr and status 1, never 0 with nothing written;
* under ``--json`` an error is one JSON object on stdout, ``{"error": ..., "exit_code": ...}``
  (and its line on stderr), so a script that parses stdout always gets JSON;
* a stream that cannot encode every character shows the others as ``\\xNN`` escapes; JSON
  written to it escapes them (``\\uNNNN``), so it stays exact.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import sys
from typing import IO, Any

import click

JSON_GIVEN = "context_compact.json"
"""``ctx.meta`` key: the command line holds ``--json`` (errors are then JSON objects)."""

OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT, errno.EFBIG})
"""A write to an output stream that fails with one of these: the output cannot be written."""


class JsonFailure(click.ClickException):
    """A failure reported as one JSON object on stdout (and its line on stderr)."""

    def show(self, file: IO[Any] | None = None) -> None:
        super().show(file)
        # When stdout is what failed, the line on stderr says so.
        with contextlib.suppress(OSError, ValueError):
            click.echo(dumps({"error": self.message, "exit_code": self.exit_code}))


class JsonUsageFailure(JsonFailure):
    """A usage mistake under ``--json``: the object without the banner, status 2."""

    exit_code = 2


class ClosedOutput(io.TextIOBase):
    """Stands in for a stdout the command was started without (``>&-``): a write fails as a
    write to a closed descriptor does, so the command cannot end 0 having written nothing."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "stdout is closed")


def encodes_everything(stream: Any) -> bool:
    """Whether ``stream`` takes any character (a UTF encoding)."""
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return encoding.startswith("utf")


def prepare_streams() -> None:
    """Before a command runs: a missing stdout becomes one that refuses writes, and a stream
    that cannot encode every character escapes the ones it cannot."""
    if sys.stdout is None:
        sys.stdout = ClosedOutput()
    for stream in (sys.stdout, sys.stderr):
        if not encodes_everything(stream) and isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def dumps(data: Any, indent: int | None = None) -> str:
    """``data`` as JSON for stdout: every character as it is when stdout takes it, escaped
    (``\\uNNNN``) when it does not, so the JSON read back is the same either way."""
    return json.dumps(data, indent=indent, ensure_ascii=not encodes_everything(sys.stdout))


def output_failure(error: BaseException) -> str | None:
    """The line for an output stream that could not be written (None: ``error`` is another
    failure)."""
    if isinstance(error, UnicodeEncodeError):
        return (
            f"the output cannot be written in {error.encoding}: {error.reason} "
            f"({error.object[error.start : error.end]!r}); set PYTHONIOENCODING=utf-8"
        )
    if isinstance(error, OSError) and error.errno in OUTPUT_ERRNOS:
        said = error.strerror or str(error)
        return f"the output cannot be written: {said}"
    if isinstance(error, ValueError) and "closed file" in str(error):
        return "the output cannot be written: the stream is closed"
    return None


def finish_output() -> None:
    """Flush stdout while a failure can still be reported (at exit it would be a traceback
    or nothing)."""
    stdout = sys.stdout
    if stdout is not None and not isinstance(stdout, ClosedOutput):
        stdout.flush()


def as_json(ctx: click.Context, error: click.ClickException) -> click.ClickException:
    """``error`` as the JSON object ``--json`` promises, when the command line holds it."""
    if not ctx.meta.get(JSON_GIVEN) or isinstance(error, JsonFailure):
        return error
    message = error.format_message()
    if isinstance(error, click.UsageError) and error.ctx is not None:
        # The banner is for a person; the JSON names the command to ask for help.
        message = f"{message} (see {error.ctx.command_path} --help)"
    return (JsonUsageFailure if error.exit_code == 2 else JsonFailure)(message)


__all__ = [
    "JSON_GIVEN",
    "ClosedOutput",
    "JsonFailure",
    "JsonUsageFailure",
    "as_json",
    "dumps",
    "encodes_everything",
    "finish_output",
    "output_failure",
    "prepare_streams",
]
