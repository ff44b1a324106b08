"""The agent's six tools, confined to one work directory.

``TOOL_SCHEMAS`` declares the seed's six tools in Anthropic format (S-6.3), plus an optional
``offset`` for ``read_file`` so the model can page through long files such as persisted
outputs. ``Workspace.run(name, input)`` executes the five base tools; ``compact`` has no
handler here because the agent loop acts on it after the whole tool batch has run.

Invariants:

- ``run`` never raises. Unknown tools, bad arguments, refused paths and failing commands all
  come back as a ``ToolOutput`` with ``is_error=True`` and a text starting ``Error:``.
- No tool reads or writes outside ``root`` (after resolving ``..`` and symlinks); reading is
  also allowed under ``read_roots``. Glob matches that resolve outside ``root`` are dropped.
- Files are UTF-8. ``read_file`` replaces undecodable bytes; ``edit_file`` keeps them
  byte-for-byte (surrogateescape), so editing one line never corrupts the rest of a file.
  A binary file (an image, a PDF, anything with a NUL byte) is described, never decoded:
  ``read_file`` answers its media type, pixel size or pages, and byte count.
- ``recover`` (the agent loop sets it to ``Compactor.recover_file`` under an engine that
  keeps a log): a missing file that the compaction store issued is rebuilt from the
  session's log and read as if it were there, saying so, so a model following a marker still
  gets the content after someone deleted the copy.
- ``bash`` output is bounded: over ``max_output_chars`` it keeps the head and the tail, and
  only those are read back; a command whose output passes ``max_output_bytes`` on disk is
  stopped like one that passes ``bash_timeout``. ``read_file`` is bounded the same way but
  cuts at a line and says which offset to continue from, so paging stays exact.
- ``bash`` is guarded, not sandboxed (``guard.py``): obviously destructive commands are
  refused, the child runs without the agent's API keys in its environment, and every
  output has the ``secrets`` values replaced by ``[redacted NAME]``. The file tools are
  confined to ``root``; ``bash`` runs in ``root`` but can reach whatever the user can.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..media import describe, sniff
from .guard import PROVIDER_KEYS, Redactor, child_environment, refused
from .tool_schemas import COMPACT_TOOL_NAME as COMPACT_TOOL_NAME
from .tool_schemas import NOTES_SCHEMA as NOTES_SCHEMA
from .tool_schemas import NOTES_TOOL_NAME as NOTES_TOOL_NAME
from .tool_schemas import RECALL_SCHEMA as RECALL_SCHEMA
from .tool_schemas import RECALL_TOOL_NAME as RECALL_TOOL_NAME
from .tool_schemas import TOOL_SCHEMAS as TOOL_SCHEMAS

GLOB_MAX_MATCHES = 200
_HEAD_SHARE = 0.4
_READ_WHOLE = 1 << 20  # bash output up to this size is read whole (exact counts)
_JSON_TYPES: dict[str, type] = {"string": str, "integer": int}
_SNIFF = 8_192  # bytes looked at for a NUL: git's test for a binary file
REBUILT = "[this file is missing on disk; rebuilt from the session's log]"


def binary_note(path: str, data: bytes) -> str | None:
    """What ``read_file`` answers for a binary file (None for text): what it is, not its bytes."""
    kind = sniff(data)
    if kind is None and b"\0" not in data[:_SNIFF]:
        return None
    what = "an image" if (kind or "").startswith("image/") else "a PDF" if kind else "binary"
    return (
        f"Binary file {path}: {describe(data)}. It is {what}, not text: read_file shows text "
        "only, so its content is not shown here."
    )


@dataclass(frozen=True)
class ToolOutput:
    """What one tool call returns: the text for the ``tool_result`` and whether it failed."""

    text: str
    is_error: bool = False


class _Refused(Exception):
    """A tool call that cannot be carried out; its message is the error text for the model."""


def head_and_tail(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping the first 40% and the last 60%.

    The tail gets the larger share because errors and summaries come at the end of output.
    """
    if len(text) <= limit:
        return text
    head = int(limit * _HEAD_SHARE)
    tail = limit - head
    omitted = len(text) - head - tail
    ending = text[-tail:] if tail else ""
    return f"{text[:head]}\n... [{omitted} characters omitted] ...\n{ending}"


class Workspace:
    """Runs tool calls inside ``root``; see the module docstring for the guarantees."""

    def __init__(
        self,
        root: Path,
        bash_timeout: float = 120,
        max_output_chars: int = 50_000,
        read_roots: tuple[Path, ...] = (),
        *,
        max_output_bytes: int = 64 << 20,
        secrets: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        recover: Callable[[str], str | bytes | None] | None = None,
    ) -> None:
        """``secrets``: name -> value, redacted from every output; ``env``: the environment
        of ``bash`` (default: this process's, without ``PROVIDER_KEYS``); ``recover``: the
        content of a missing file by its absolute path, or None (see the module docstring)."""
        self.recover = recover
        self.root = Path(root).resolve()
        self.bash_timeout = bash_timeout
        self.max_output_chars = max_output_chars
        self.max_output_bytes = max_output_bytes
        self.read_roots = tuple(Path(r).resolve() for r in read_roots)
        self.redact = Redactor(secrets)
        self.env = child_environment(os.environ if env is None else env, PROVIDER_KEYS)
        self._params = {schema["name"]: schema["input_schema"] for schema in TOOL_SCHEMAS}

    def run(self, name: str, input: dict[str, Any]) -> ToolOutput:
        """Execute one tool call; every failure becomes an error output, never an exception."""
        output = self._run(name, input)
        if self.redact:
            return ToolOutput(self.redact(output.text), output.is_error)
        return output

    def _run(self, name: str, input: dict[str, Any]) -> ToolOutput:
        try:
            args = self._arguments(name, input)
            if name == "bash":
                return self._bash(**args)
            if name == "read_file":
                return ToolOutput(self._read_file(**args))
            if name == "write_file":
                return ToolOutput(self._write_file(**args))
            if name == "edit_file":
                return ToolOutput(self._edit_file(**args))
            if name == "glob":
                return ToolOutput(self._glob(**args))
            raise _Refused(f"no handler for tool {name!r}")
        except _Refused as refusal:
            return ToolOutput(f"Error: {refusal}", is_error=True)
        except Exception as error:  # the model must always get a tool_result back
            return ToolOutput(f"Error: {type(error).__name__}: {error}", is_error=True)

    def _arguments(self, name: str, input: Any) -> dict[str, Any]:
        if name in (COMPACT_TOOL_NAME, RECALL_TOOL_NAME):
            raise _Refused(f"{name} is handled by the agent loop, not by the workspace")
        schema = self._params.get(name)
        if schema is None:
            known = ", ".join(s["name"] for s in TOOL_SCHEMAS)
            raise _Refused(f"unknown tool {name!r} (tools: {known})")
        if not isinstance(input, dict):
            raise _Refused(f"{name} expects an object of arguments, got {type(input).__name__}")
        properties: dict[str, Any] = schema["properties"]
        unknown = sorted(set(input) - set(properties))
        if unknown:
            raise _Refused(
                f"unknown argument(s) for {name}: {', '.join(unknown)} "
                f"(expected: {', '.join(properties)})"
            )
        args: dict[str, Any] = {}
        for key, spec in properties.items():
            value = input.get(key)
            if value is None:
                if key in schema.get("required", ()):
                    raise _Refused(f"missing argument {key!r} for {name}")
                continue
            expected = _JSON_TYPES[spec["type"]]
            # bool is a subclass of int, but true/false is never a valid line count
            if not isinstance(value, expected) or isinstance(value, bool):
                raise _Refused(
                    f"argument {key!r} of {name} must be {spec['type']}, got {type(value).__name__}"
                )
            args[key] = value
        return args

    def _resolve(self, path: str, *, reading: bool = False) -> Path:
        resolved = (self.root / path).resolve()
        allowed = (self.root, *self.read_roots) if reading else (self.root,)
        if not any(resolved.is_relative_to(base) for base in allowed):
            raise _Refused(f"path outside the work directory: {path}")
        return resolved

    def _bash(self, command: str) -> ToolOutput:
        reason = refused(command)
        if reason is not None:
            raise _Refused(
                f"refused: {reason} (a guard against obviously destructive commands; "
                "nothing was run)"
            )
        # Output goes to a file, not a pipe: a background child that keeps the pipe open
        # would otherwise block reading after the timeout kill.
        with tempfile.TemporaryFile() as sink:
            process = subprocess.Popen(
                command,
                shell=True,
                cwd=self.root,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            stopped = self._wait(process, sink)
            if stopped:
                _kill_group(process)
            code = process.wait()
            output = self._bounded(sink)
        if stopped:
            text = f"Error: {stopped}"
            return ToolOutput(f"{text}\n{output}" if output else text, is_error=True)
        text = output or "(no output)"
        if code != 0:
            text += f"\n[exit code {code}]"
        return ToolOutput(text)

    def _wait(self, process: subprocess.Popen[bytes], sink: IO[bytes]) -> str:
        """Wait for ``process``; why it must be stopped ('' when it ended by itself)."""
        deadline = time.monotonic() + self.bash_timeout
        while True:
            left = deadline - time.monotonic()
            try:
                process.wait(timeout=max(0.0, min(left, 0.1)))
                return ""
            except subprocess.TimeoutExpired:
                pass
            if os.fstat(sink.fileno()).st_size > self.max_output_bytes:
                return f"stopped: output passed {self.max_output_bytes:,} bytes"
            if left <= 0:
                return f"timed out after {self.bash_timeout:g}s"

    def _bounded(self, sink: IO[bytes]) -> str:
        """The output, cut to its head and tail without reading the middle from disk."""
        size = os.fstat(sink.fileno()).st_size
        # A character is at most 4 bytes of UTF-8: this much holds max_output_chars of text.
        span = 4 * self.max_output_chars
        sink.seek(0)
        if size <= 2 * span + _READ_WHOLE:
            return head_and_tail(_decode(sink.read()).rstrip(), self.max_output_chars)
        head_chars = int(self.max_output_chars * _HEAD_SHARE)
        head = _decode(sink.read(span))[:head_chars]
        sink.seek(size - span)
        tail = _decode(sink.read()).rstrip()[-(self.max_output_chars - head_chars) :]
        omitted = size - len(head.encode()) - len(tail.encode())
        return f"{head}\n... [{omitted} bytes omitted] ...\n{tail}"

    def _read_file(self, path: str, limit: int | None = None, offset: int | None = None) -> str:
        if limit is not None and limit < 1:
            raise _Refused("limit must be at least 1")
        if offset is not None and offset < 1:
            raise _Refused("offset is 1-based and must be at least 1")
        target = self._resolve(path, reading=True)
        if target.is_dir():
            raise _Refused(f"is a directory, not a file: {path}")
        head = ""
        if target.is_file():
            data: str | bytes = target.read_bytes()
        else:
            data = self._recovered(path, target)
            head = REBUILT + "\n"
        if isinstance(data, bytes):
            note = binary_note(path, data)
            if note is not None:
                return head + note
            data = data.decode("utf-8", errors="replace")
        lines = data.splitlines()
        if not lines:
            return head + "(empty file)"
        start = (offset or 1) - 1
        if start >= len(lines):
            raise _Refused(f"offset {offset} is past the end of {path} ({len(lines)} lines)")
        end = len(lines) if limit is None else min(len(lines), start + limit)
        shown: list[str] = []
        used = 0
        for line in lines[start:end]:
            if shown and used + len(line) + 1 > self.max_output_chars:
                break
            if len(line) > self.max_output_chars:
                line = head_and_tail(line, self.max_output_chars)
            shown.append(line)
            used += len(line) + 1
        next_line = start + len(shown)
        text = head + "\n".join(shown)
        if next_line < len(lines):
            remaining = len(lines) - next_line
            text += f"\n... ({remaining} more lines; continue with offset={next_line + 1})"
        return text

    def _recovered(self, path: str, target: Path) -> str | bytes:
        """A missing file's content from ``recover``, by the path as written (the store's
        root may be spelled through a symlink) or as resolved."""
        if self.recover is not None:
            for candidate in dict.fromkeys([os.path.normpath(self.root / path), str(target)]):
                data = self.recover(candidate)
                if data is not None:
                    return data
        raise _Refused(f"file not found: {path}")

    def _write_file(self, path: str, content: str) -> str:
        target = self._resolve(path)
        if target.is_dir():
            raise _Refused(f"is a directory, not a file: {path}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"Wrote {len(content)} characters to {path}"

    def _edit_file(self, path: str, old_text: str, new_text: str) -> str:
        if not old_text:
            raise _Refused("old_text must not be empty")
        target = self._resolve(path)
        if target.is_dir():
            raise _Refused(f"is a directory, not a file: {path}")
        if not target.is_file():
            raise _Refused(f"file not found: {path}")
        content = target.read_text(encoding="utf-8", errors="surrogateescape")
        count = content.count(old_text)
        if count == 0:
            raise _Refused(f"text not found in {path}")
        updated = content.replace(old_text, new_text, 1)
        target.write_text(updated, encoding="utf-8", errors="surrogateescape")
        if count > 1:
            return (
                f"Edited {path}: old_text occurs {count} times; replaced the first. "
                "Include more surrounding text to target another occurrence."
            )
        return f"Edited {path}"

    def _glob(self, pattern: str) -> str:
        if not pattern:
            raise _Refused("pattern must not be empty")
        if Path(pattern).is_absolute():
            raise _Refused(f"pattern must be relative to the work directory: {pattern}")
        found: set[str] = set()
        for match in self.root.glob(pattern):
            # Both checks: ``..`` in the pattern escapes lexically, a symlink by resolution.
            shown_as = Path(os.path.normpath(match))
            if shown_as == self.root or not shown_as.is_relative_to(self.root):
                continue
            if not match.resolve().is_relative_to(self.root):
                continue
            relative = shown_as.relative_to(self.root).as_posix()
            found.add(relative + "/" if match.is_dir() else relative)
        if not found:
            return "(no matches)"
        matches = sorted(found)
        shown = matches[:GLOB_MAX_MATCHES]
        if len(matches) > GLOB_MAX_MATCHES:
            shown.append(
                f"... ({len(matches) - GLOB_MAX_MATCHES} more matches omitted; narrow the pattern)"
            )
        return "\n".join(shown)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The group may have exited between the timeout and the kill.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
