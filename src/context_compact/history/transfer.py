"""Sessions in and out: ``import`` an agent's log as a session, ``export`` a session's history.

``import_file(store, path)`` reads a log in any format ``context_compact.loaders`` knows
(the format is detected from the content) and writes each trajectory in it as a new session
of the default engine: its messages logged as they are, nothing compacted, so ``view()`` is
the whole history and ``inspect``, ``recall``, ``compact`` and ``--resume`` work on it like on
a session the agent ran. The session's meta says where it came from (``source``,
``format``, ``file``, ``name``), holds the log's system prompt (``system``) and what the
loader had to skip or repair (``notes``: never silent).

``export_session(store, id, fmt)`` writes a session's history (its latest conversation,
complete: the log, not the compacted view, unless ``view=True``):

* ``jsonl``: one Anthropic message per line, the system prompt first as a ``system`` line;
* ``anthropic``: one JSON object ``{"system": ..., "messages": [...]}``;
* ``openai``: a JSON list of Chat Completions messages (``providers.openai_chat.to_openai``).

Each of them imports again (formats ``anthropic`` and ``openai_chat``) to the same messages
and tool pairs; ``jsonl`` and ``anthropic`` to the same messages exactly. JSON is written
ASCII-only (escapes), so text that is not valid UTF-8 (a lone surrogate in tool output)
survives the trip.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..engine import Env
from ..invariants import ensure_valid
from ..loaders import Failure, Limits, Session, candidates, describe, load_file
from ..messages import Message, blocks
from ..session import ledger, ledger_view
from ..session.engine import SessionEngine
from ..session.ledger_rules import stored_rules
from ..session.native_tier import readable
from ..session.policy import SessionPolicy, session_policy
from ..session.records import MessageRecord, Restart, journal
from ..sizing import TokenCounter
from ..store.base import Store
from ..store.meta import meta_of
from ..summary.contract import ExtractiveSummarizer

EXPORT_FORMATS = ("jsonl", "anthropic", "openai", "ledger")
LOAD_ERRORS = (ValueError, OSError, UnicodeError, IndexError, RecursionError)


@dataclass(frozen=True)
class Imported:
    """One session written by ``import``."""

    id: str
    file: str
    name: str
    format: str
    messages: int
    tool_uses: int
    skipped: int
    notes: dict[str, int] = field(default_factory=dict)
    bad_lines: list[int] = field(default_factory=list)
    """Line numbers (1-based) of the JSON Lines that did not parse, the first ``SHOWN``."""
    encoding: str = "utf-8"
    """How the file's bytes were decoded (``Limits.encoding``): said, never guessed."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def quiet_loaders() -> Iterator[None]:
    """The loaders log each repair they make; a command reports them itself."""
    log = logging.getLogger("context_compact.loaders")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def resumed(store: Store, session: str, policy: SessionPolicy | None = None) -> SessionEngine:
    """The session engine on stored session ``session``, its view rebuilt from the journal
    (the replay a resume does); extractive summaries, events dropped."""
    env = Env(store, ExtractiveSummarizer(), TokenCounter(exact=True), lambda event: None, session)
    return SessionEngine(policy or session_policy(), env)


def import_session(store: Store, session: Session, extra: dict[str, Any] | None = None) -> Imported:
    """Write one loaded trajectory as a new session (``extra`` added to its meta); its
    record."""
    policy = session_policy()
    meta = {
        "engine": "default",
        "policy": asdict(policy),
        "source": "import",
        "format": session.format,
        "file": str(Path(session.source).resolve()),
        "name": session.name,
        "system": session.system,
        "notes": dict(session.notes),
        "encoding": session.encoding,
        **(extra or {}),
    }
    # Refused before the session exists: a failed import leaves no empty session behind.
    ensure_valid(session.messages)
    sid = store.create_session(meta)
    if session.messages:
        resumed(store, sid, policy).record(session.messages)
    return report_of(session, sid)


def report_of(session: Session, sid: str) -> Imported:
    """What ``import`` says about ``session``, stored as ``sid``."""
    uses = sum(
        1
        for message in session.messages
        for block in blocks(message)
        if block.get("type") == "tool_use"
    )
    return Imported(
        sid,
        session.source,
        session.name,
        session.format,
        len(session.messages),
        uses,
        session.skipped,
        dict(session.notes),
        unparseable_lines(Path(session.source), encoding=session.encoding)
        if session.notes.get("unparseable_line")
        else [],
        session.encoding,
    )


SHOWN = 20


def unparseable_lines(path: Path, limit: int = SHOWN, encoding: str = "utf-8") -> list[int]:
    """The 1-based numbers of the non-blank lines of ``path`` that are not JSON (the first
    ``limit``), so an import can say where its skipped lines are."""
    found: list[int] = []
    # The loader already decoded this file strictly; only line numbers are read here.
    with path.open(encoding=encoding, errors="surrogateescape", newline="\n") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except json.JSONDecodeError:
                found.append(number)
                if len(found) == limit:
                    break
    return found


def _loaded(path: Path, limits: Limits | None = None) -> list[Session]:
    """The trajectories of one file, each checked: a file with one bad trajectory imports
    none of them."""
    sessions = load_file(path, limits)
    for session in sessions:
        ensure_valid(session.messages)
    return sessions


def import_path(
    store: Store, path: Path, limits: Limits | None = None
) -> tuple[list[Imported], list[Failure]]:
    """Import a file, or every log under a directory; the sessions made and the files that
    could not be read (path and reason). A single file that cannot be read raises."""
    if not path.is_dir():
        return [import_session(store, s) for s in _loaded(path, limits)], []
    imported: list[Imported] = []
    failures: list[Failure] = []
    for file in candidates(path):
        try:
            sessions = _loaded(file, limits)
        except LOAD_ERRORS as error:
            failures.append(Failure(str(file), describe(error, file)))
            continue
        imported.extend(import_session(store, s) for s in sessions)
    return imported, failures


def history(store: Store, session: str) -> list[Message]:
    """The messages of the session's latest conversation, as they were logged."""
    messages: list[Message] = []
    for record in journal(store.records(session), f"session {session}"):
        if isinstance(record, MessageRecord):
            messages.append(record.message)
        elif isinstance(record, Restart):
            messages = []
    return messages


def conversations(store: Store, session: str) -> int:
    """How many conversations the session's log holds (a restart starts one)."""
    records = journal(store.records(session), f"session {session}")
    return 1 + sum(1 for r in records if isinstance(r, Restart))


def export_session(store: Store, session: str, fmt: str, view: bool = False) -> str:
    """The session's history in ``fmt`` (one of ``EXPORT_FORMATS``), as text."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    meta = meta_of(store, session)
    if meta is None:
        raise KeyError(session)
    system = meta.system or ""
    if fmt == "ledger":  # what the agent did, from the whole conversation's tool calls
        rules = stored_rules(meta.policy)
        done = ledger_view.as_dict(ledger.of(history(store, session), rules))
        return json.dumps(done, ensure_ascii=True, indent=1) + "\n"
    messages = resumed(store, session).session.view() if view else history(store, session)
    if fmt == "jsonl":
        lines: list[object] = [{"role": "system", "content": system}] if system else []
        lines += messages
        return "".join(json.dumps(m) + "\n" for m in lines)
    if fmt == "anthropic":
        document: dict[str, Any] = {"system": system} if system else {}
        document["messages"] = messages
        return json.dumps(document, ensure_ascii=True, indent=1) + "\n"
    from ..providers.openai_chat import to_openai

    if view:  # Chat Completions cannot read a compaction block: our readable summary instead
        messages = readable(messages, journal(store.records(session)))
    return json.dumps(to_openai(messages, system), ensure_ascii=True, indent=1) + "\n"


__all__ = [
    "EXPORT_FORMATS",
    "Imported",
    "conversations",
    "export_session",
    "history",
    "import_path",
    "import_session",
    "quiet_loaders",
    "report_of",
    "resumed",
]
