"""aider chat histories (``.aider.chat.history.md``, which aider appends to in the repository).

The file is Markdown written as the chat goes: each run of aider starts with a header
``# aider chat started at <time>``, and each run is one session (a new run starts with a
fresh context), named ``<file stem> <time>``. A run in which nothing reached the model (no
reply, no shell command run for it, no user turn but aider's own commands such as ``/add``
or ``/exit``: aider started and quit, the usual case of most headers) is no session.
Inside a run, aider writes three kinds of lines:

* ``#### <text>``: what the user typed (a run of them is one turn; aider ends every line
  with two spaces, removed here). Slash commands (``/add``, ``/run ...``, ``/test ...``,
  ``!cmd``) are kept as the user typed them: they are what the user did.
* ``> <text>``: aider's own output (files added, edits applied, commits, confirmations):
  UI, never sent to the model, dropped without being counted, except as below. A message
  aider printed over several lines starts with ``> `` and ends at the line ending in two
  spaces; older versions wrote the output of ``/run`` that way.
* anything else: the model's reply, verbatim Markdown; edit blocks (``<<<<<<< SEARCH`` ...
  ``>>>>>>> REPLACE``, whole files, diffs) stay in it as text, as the model wrote them.
  Inside a fenced block of the reply every line is the reply's, ``> `` lines included (a
  reply cut off inside a fence so keeps aider's next lines as text until the next user turn:
  text kept rather than dropped). Outside a fence, a reply line that itself starts with ``> `` (a
  Markdown quote) reads as aider's: the file does not tell the two apart.

The commands aider ran for the model (``> Running <command>``, after the user accepted the
shell commands the reply suggested) become ``tool_use`` blocks (id ``aider_<n>``, name
``shell``, input ``{"command": ...}``) in that reply's assistant message; aider does not
record their output in the file, so each result says so (``NOT_RECORDED``), followed by
aider's lines on whether the output went to the chat (``Add command output to the chat?
(Y)es/(N)o [Yes]: y``, ``Added 3 lines of output to the chat.``).
The output of a user's ``/run`` / ``/test`` / ``!`` that the file does hold (older aider
wrote it, and sent it to the model when the user said yes) is kept in that user turn, as
text after the command, counted in ``Session.converted`` (``command_output_as_text``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ._common import (
    HistoryBuilder,
    Session,
    make_session,
    text_blocks,
    tool_result_block,
    tool_use_block,
    unknown_format,
)

FORMAT = "aider"

FILE_SUFFIX = "chat.history.md"
HEADER = "# aider chat started at "
_USER_COMMAND = re.compile(r"(?:/run|/test)\s|!")
# aider's lines about a shell command's output: whether it went to the chat.
_ABOUT_OUTPUT = re.compile(r"Add (?:command )?output to the chat\?|Added \d+ lines? of output")
NOT_RECORDED = "(aider does not write a shell command's output to its chat history)"


def is_aider(path: Path, head: str) -> bool:
    """An aider chat history: by its name, or by a run header in its first lines."""
    return path.name.endswith(FILE_SUFFIX) or HEADER in head


@dataclass
class _Run:
    time: str
    lines: list[str] = field(default_factory=list)


def load_text(text: str, source: str | Path) -> list[Session]:
    """One session per run of aider in the file that holds a conversation."""
    runs: list[_Run] = []
    preamble = _Run("")
    for line in text.splitlines():
        if line.startswith(HEADER):
            runs.append(_Run(line[len(HEADER) :].strip()))
        else:
            (runs[-1] if runs else preamble).lines.append(line)
    if not runs and not preamble.lines:
        raise unknown_format(source, "empty aider chat history")
    base = stem_of(source)
    sessions = []
    for run in ([preamble] if preamble.lines else []) + runs:
        session = _load_run(run, source, f"{base} {run.time}".strip())
        if session is not None:
            sessions.append(session)
    if not sessions:
        raise unknown_format(source, "aider chat history with no conversation in any run")
    return sessions


def stem_of(source: str | Path) -> str:
    name = Path(source).name
    return name[: -len(".md")] if name.endswith(".md") else name


def _load_run(run: _Run, source: str | Path, name: str) -> Session | None:
    builder = HistoryBuilder()
    state = _State(builder)
    lines = run.lines
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("####"):
            state.flush()
            turn: list[str] = []
            while i < len(lines) and lines[i].startswith("####"):
                turn.append(_strip_marker(lines[i][4:]))
                i += 1
            state.user("\n".join(turn).strip())
            continue
        if _is_aider_line(line) and not state.in_fence:
            state.flush_reply()
            message = [_strip_marker(line[1:])]
            multi = line.strip() != ">" and not line.endswith("  ")
            i += 1
            while multi and i < len(lines) and not _starts_entry(lines[i]):
                message.append(lines[i].rstrip())
                if lines[i].endswith("  "):
                    i += 1
                    break
                i += 1
            state.aider("\n".join(message))
            continue
        state.reply.append(line)
        if line.lstrip().startswith("```"):
            state.in_fence = not state.in_fence
        i += 1
    state.flush()
    if not state.conversation:
        return None
    return make_session(name, FORMAT, None, builder, source)


def _strip_marker(text: str) -> str:
    text = text[1:] if text.startswith(" ") else text
    return text[:-2] if text.endswith("  ") else text.rstrip()


def _is_aider_line(line: str) -> bool:
    # ">>>>>>> REPLACE" ends an edit block: the model's text, not aider's.
    return line == ">" or line.startswith("> ")


def _starts_entry(line: str) -> bool:
    return line.startswith(("####", HEADER)) or _is_aider_line(line)


class _State:
    """The turn being read: the user's command waiting for its output, the reply being
    collected, and the shell call waiting for aider's lines after it."""

    def __init__(self, builder: HistoryBuilder) -> None:
        self.builder = builder
        self.reply: list[str] = []
        self.in_fence = False
        self.conversation = False
        self.calls = 0
        self._command: list[str] | None = None
        self._call: tuple[str, list[str]] | None = None
        self._turn = 0

    def user(self, text: str) -> None:
        if not text:
            return
        # aider's own commands (/add, /drop, /exit, ...) reach no model by themselves.
        self.conversation = self.conversation or not text.startswith(("/", "!"))
        self._turn += 1
        if _USER_COMMAND.match(text):
            self._command = [text]
        else:
            self.builder.user(text_blocks(text))

    def aider(self, message: str) -> None:
        if message.startswith("Running "):
            self._close_call()
            self.calls += 1
            call_id = f"aider_{self.calls}"
            command = message[len("Running ") :].strip()
            self.conversation = True
            self.builder.assistant(
                [tool_use_block(call_id, "shell", {"command": command})], key=self._turn
            )
            self._call = (call_id, [])
        elif self._call is not None:
            if _ABOUT_OUTPUT.match(message):
                self._call[1].append(message)
        elif self._command is not None and message.strip():
            self._command.append(message)

    def flush_reply(self) -> None:
        text = "\n".join(self.reply).strip()
        self.reply, self.in_fence = [], False
        if not text:
            return
        self._close_command()
        self._close_call()
        self.conversation = True
        self.builder.assistant(text_blocks(text), key=self._turn)

    def flush(self) -> None:
        self.flush_reply()
        self._close_command()
        self._close_call()

    def _close_command(self) -> None:
        if self._command is None:
            return
        command, *output = self._command
        self._command = None
        if output:
            self.builder.convert("command_output_as_text")
            command += "\n\n[output]\n" + "\n".join(output)
        self.builder.user(text_blocks(command))

    def _close_call(self) -> None:
        if self._call is None:
            return
        call_id, lines = self._call
        self._call = None
        self.builder.user([tool_result_block(call_id, "\n".join([NOT_RECORDED, *lines]))])
