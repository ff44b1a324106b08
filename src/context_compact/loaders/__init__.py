"""Load recorded agent sessions into the canonical history.

``load_session(path)`` reads one trajectory file, detects its format from its content and
returns a ``Session``: ``messages`` (Anthropic Messages dicts, valid by the history rules),
``system`` (the system prompt, never a message), ``skipped`` (dropped entries plus repairs,
by reason in ``notes``), ``name``, ``format`` and ``source``. ``load_file`` returns every
trajectory of a file (an OpenHands output file holds one per line; an old Claude Code log
holds its inline sub-agent threads after the main one); ``load_all`` walks a directory.

Formats (``FORMATS``), one module each; their docstrings say what is kept and how:

* ``claude_code``: Claude Code session ``.jsonl`` (``claude_code.py``);
* ``codex``: Codex CLI rollout ``.jsonl`` (``codex.py``);
* ``openhands``: OpenHands output ``.jsonl``, one instance per line (``openhands.py``);
* ``openai_chat``: a list of OpenAI chat messages (``openai_chat.py``);
* ``mini_swe_agent``: mini-swe-agent ``.traj.json``, chat messages with native tool calls or
  (v1) a fenced bash block per assistant message (``openai_chat.py``);
* ``swe_agent``: SWE-agent ``.traj`` (``swe_agent.py``);
* ``anthropic``: Anthropic Messages API histories, as JSON or JSON Lines (``anthropic.py``);
* ``openhands_v1``: OpenHands V1 (software-agent-sdk, CLI) typed events, one file per event
  in an ``events`` folder, as JSON Lines, a JSON list, or the agent server's page of events
  (``{"items": [...]}``) (``openhands_v1.py``);
* ``aider``: aider's ``.aider.chat.history.md``, one session per run of aider (``aider.py``);
* ``results_list``: benchmark results, a JSON list of runs each holding one chat message
  list (tau-bench), one session per run (``results_list.py``).

OpenHands histories are read with or without their ``history`` wrapper: an output file's
instances, one ``{"history": [...]}`` object, or a bare list of events (how OpenHands keeps
the trajectories it replays), as JSON or one event per line.

Detection looks at the parsed content, not at the file name (except that ``.traj.json``
marks mini-swe-agent and ``*chat.history.md`` aider); a file it cannot place raises
``UnknownFormat`` naming the file. Files are read as UTF-8, strictly, or in the encoding
``Limits.encoding`` names: bytes that are not text in it raise ``Undecodable`` naming the
file, the byte offset and line, never turn into U+FFFD without a word. The loaders never
modify the files they read.
``load_all`` reports every file it could not load (``failures``) instead of dropping it
without a word.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import (
    aider,
    anthropic,
    claude_code,
    codex,
    openai_chat,
    openhands,
    openhands_v1,
    results_list,
    swe_agent,
)
from ._common import (
    FORMATS,
    Limits,
    Session,
    TooLarge,
    Undecodable,
    UnknownFormat,
    check_size,
    read_jsonl,
    read_text,
    unknown_format,
)

__all__ = [
    "FORMATS",
    "Failure",
    "Limits",
    "Session",
    "TooLarge",
    "Undecodable",
    "UnknownFormat",
    "candidates",
    "describe",
    "detect_format",
    "load_all",
    "load_file",
    "load_session",
]

log = logging.getLogger("context_compact.loaders")

EXTENSIONS = (".jsonl", ".json", ".traj")


def load_session(path: str | Path, index: int = 0) -> Session:
    """The trajectory of a file; ``index`` picks one when the file holds several.

    Index 0 is the main session of a Claude Code log and the first instance (line) of an
    OpenHands output file; use ``load_file`` to get them all.
    """
    sessions = load_file(path)
    if len(sessions) > 1:
        log.info("%s holds %d trajectories; returning number %d", path, len(sessions), index)
    try:
        return sessions[index]
    except IndexError:
        raise IndexError(f"{path} holds {len(sessions)} trajectories, no index {index}") from None


def load_file(path: str | Path, limits: Limits | None = None) -> list[Session]:
    """Every trajectory in one file, in file order (``TooLarge`` over ``limits``;
    ``Undecodable`` where its bytes are not text in ``limits.encoding``, UTF-8 by default)."""
    limits = limits or Limits()
    sessions = _load(Path(path), limits)
    if limits.encoding == Limits.encoding:
        return sessions
    return [replace(session, encoding=limits.encoding) for session in sessions]


def _load(path: Path, limits: Limits) -> list[Session]:
    if openhands_v1.is_events_dir(path):
        return openhands_v1.load_directory(path, limits)
    fmt, data, bad = _read(path, limits)
    if fmt == aider.FORMAT:
        return aider.load_text(data, path)
    if fmt == openhands_v1.FORMAT:
        return openhands_v1.load_records(openhands_v1.events_of(data), path, bad)
    if fmt == results_list.FORMAT:
        return results_list.load_document(data, path)
    if fmt == claude_code.FORMAT:
        return claude_code.load_records(data, path, bad)
    if fmt == codex.FORMAT:
        return codex.load_records(data, path, bad)
    if fmt == openhands.FORMAT:
        return openhands.load_records(_instances(data), path, bad)
    if fmt == anthropic.FORMAT:
        return _unparseable(anthropic.load_document(data, path), bad)
    if fmt == swe_agent.FORMAT:
        # A .traj is one document; the same object written as a one-line .jsonl also loads.
        document = data[0] if isinstance(data, list) else data
        return _unparseable(swe_agent.load_document(document, path), bad)
    return _unparseable(openai_chat.load_document(data, path, fmt), bad)


def _unparseable(sessions: list[Session], bad: int) -> list[Session]:
    """A document format read from JSON Lines: its lines that were not JSON, counted as the
    line formats count them (``unparseable_line``), on the file's first session."""
    if not bad or not sessions:
        return sessions
    first = sessions[0]
    notes = dict(sorted({**first.notes, "unparseable_line": bad}.items()))
    log.warning("%s (%s): skipped %d lines that are not JSON", first.name, first.source, bad)
    return [replace(first, skipped=first.skipped + bad, notes=notes), *sessions[1:]]


def detect_format(path: str | Path) -> str:
    """The format name (one of ``FORMATS``) of a trajectory file."""
    return _read(Path(path), Limits())[0]


@dataclass(frozen=True)
class Failure:
    """A file ``load_all`` could not load, and why (one line)."""

    path: str
    reason: str


def load_all(
    directory: str | Path, *, strict: bool = False, failures: list[Failure] | None = None
) -> list[Session]:
    """Every trajectory under ``directory`` (recursively, sorted by path).

    Only ``.jsonl``, ``.json`` and ``.traj`` files and aider's ``.aider.chat.history.md`` are
    read (no other hidden file, nothing in a hidden folder); an OpenHands V1 ``events``
    folder is one log, and the ``base_state.json`` beside it (the agent's settings) none. A
    file that cannot be loaded (no known format, unreadable) raises when ``strict``;
    otherwise it is logged and appended to ``failures`` (path and reason), when a list is
    given.
    """
    root = Path(directory)
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a directory")
    sessions: list[Session] = []
    for path in candidates(root):
        try:
            sessions.extend(load_file(path))
        except (UnknownFormat, Undecodable, OSError, UnicodeError, ValueError) as error:
            if strict:
                raise
            log.warning("skipping %s", error)
            if failures is not None:
                failures.append(Failure(str(path), describe(error, path)))
    return sessions


def candidates(root: Path) -> list[Path]:
    """The logs under ``root`` that ``load_all`` tries, sorted by path: files, and OpenHands
    V1 events folders in place of the event files they hold."""
    found: set[Path] = set()
    for path in root.rglob("*"):
        if not _is_candidate(path, root):
            continue
        if openhands_v1.EVENT_FILE.fullmatch(path.name):
            found.add(path.parent)  # one event file is enough to make its folder a log
        elif not openhands_v1.is_state_file(path):
            found.add(path)
    return sorted(found)


def describe(error: BaseException, path: Path) -> str:
    """One line saying why ``path`` did not load (without repeating the path)."""
    if isinstance(error, UnknownFormat):
        return f"not a known trajectory format ({error.reason})"
    if isinstance(error, RecursionError):
        return "JSON nested too deep to read"
    text = str(error).replace(str(path), "").strip(" :") or type(error).__name__
    return " ".join(text.split())


def _is_candidate(path: Path, root: Path) -> bool:
    if not path.is_file():
        return False
    *folders, name = path.relative_to(root).parts
    if any(part.startswith(".") for part in folders):
        return False
    if name.endswith(aider.FILE_SUFFIX):
        return True
    return name.endswith(EXTENSIONS) and not name.startswith(".")


def _read(path: Path, limits: Limits) -> tuple[str, Any, int]:
    """``(format, data, unparseable lines)``: records for line formats, else the document."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise OSError(
            f"{path}: not a regular file (a device, a pipe or a socket); give the log file"
        )
    if path.name.endswith(".md"):
        check_size(path, limits)
        text = read_text(path, limits)
        if not aider.is_aider(path, text[:4096]):
            raise unknown_format(path, "a Markdown file that is not an aider chat history")
        return aider.FORMAT, text, 0
    if path.name.endswith(".jsonl"):
        records, bad = read_jsonl(path, limits)
        return _detect_records(records, path), records, bad
    check_size(path, limits)
    text = read_text(path, limits)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        records, bad = read_jsonl(path, limits)
        if len(records) < 2:
            where = f"line {error.lineno}, column {error.colno}: {error.msg}"
            raise unknown_format(path, f"not valid JSON or JSON Lines ({where})") from None
        return _detect_records(records, path), records, bad
    return _detect_document(document, path), document, 0


def _detect_records(records: list[Any], path: Path) -> str:
    objects = [r for r in records if isinstance(r, dict)]
    if not objects:
        raise unknown_format(path, "no JSON object lines")
    if len(records) == 1 and _detect_dict(objects[0], path) == swe_agent.FORMAT:
        return swe_agent.FORMAT
    if any(openhands_v1.is_event(r) for r in objects):
        return openhands_v1.FORMAT
    if all(_is_event(r) for r in objects):
        return openhands.FORMAT
    if all(isinstance(r.get("role"), str) and "content" in r for r in objects):
        return anthropic.FORMAT if anthropic.is_anthropic(objects) else _chat_format(objects, path)
    for record in objects:
        if isinstance(record.get("history"), list):
            return openhands.FORMAT
        kind = record.get("type")
        if kind in claude_code.LINE_TYPES and (
            "uuid" in record
            or "sessionId" in record
            or "leafUuid" in record
            or "messageId" in record
        ):
            return claude_code.FORMAT
        if kind in codex.LINE_TYPES and "payload" in record:
            return codex.FORMAT
        if kind in codex.ITEM_TYPES or "record_type" in record:
            return codex.FORMAT
    raise unknown_format(path, "JSON Lines records match no known format")


def _detect_document(document: Any, path: Path) -> str:
    if isinstance(document, dict):
        fmt = _detect_dict(document, path)
        if fmt is None:
            raise unknown_format(path, f"JSON object with keys {sorted(document)[:8]}")
        return fmt
    if isinstance(document, list):
        if any(openhands_v1.is_event(m) for m in document):
            return openhands_v1.FORMAT
        if results_list.runs_of(document) is not None:
            return results_list.FORMAT
        if any(isinstance(m, dict) and m.get("role") in _CHAT_ROLES for m in document):
            if anthropic.is_anthropic(document):
                return anthropic.FORMAT
            return _chat_format(document, path)
        if any(isinstance(m, dict) and isinstance(m.get("history"), list) for m in document):
            return openhands.FORMAT
        objects = [m for m in document if isinstance(m, dict)]
        if objects and all(_is_event(m) for m in objects):
            return openhands.FORMAT
    raise unknown_format(path, "JSON document matches no known format")


def _is_event(record: dict[str, Any]) -> bool:
    """An OpenHands event: an action or an observation, with no chat role."""
    return ("action" in record or "observation" in record) and "role" not in record


def _instances(data: Any) -> list[Any]:
    """OpenHands instances: an output file's lines, or one history from a bare event list."""
    if isinstance(data, dict):
        return [data]
    if any(isinstance(item, dict) and isinstance(item.get("history"), list) for item in data):
        return list(data)
    return [{"history": data}]


_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _detect_dict(document: dict[str, Any], path: Path) -> str | None:
    if openhands_v1.is_event(document) or openhands_v1.is_page(document):
        return openhands_v1.FORMAT
    if results_list.runs_of(document) is not None:
        return results_list.FORMAT
    history = document.get("history")
    if isinstance(history, list):
        if any(key in document for key in ("trajectory", "replay_config", "environment")):
            return swe_agent.FORMAT
        first = next((e for e in history if isinstance(e, (dict, list))), None)
        if isinstance(first, dict) and "role" in first:
            return swe_agent.FORMAT
        return openhands.FORMAT
    if isinstance(document.get("messages"), list):
        if anthropic.is_anthropic(document):
            return anthropic.FORMAT
        return _chat_format(document, path)
    return None


def _chat_format(document: Any, path: Path) -> str:
    return openai_chat.MINI_FORMAT if openai_chat.is_mini(document, path) else openai_chat.FORMAT
