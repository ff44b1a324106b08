"""What the inspector shows of one session, read from its store: no click, no HTTP.

``Inspection.load(store, session)`` replays the session's journal through ``SessionState``
(the replay a resume does), one record at a time. Each time an assistant message is logged,
the view as it stood then is the request that produced it; of that request it keeps

* its size, ``SessionState.measure()`` (the API's last count plus an estimate of what came
  after, the system prompt and tools included), and its number of messages;
* the view itself, as indices into ``messages``: every distinct message the session ever
  sent, once (the same object, or the same content, is one entry), in runs ``(start, count)``
  since a view is mostly a run of consecutive log messages: 10,000 requests cost a few lists
  of pairs, not 10,000 copies of a view;
* whether it **broke the prompt cache**: its view does not open with the whole previous
  request's view, or the system prompt and tools (their tokens) changed.

Events are the journal's (``history.inspect.Event``), at the request they shaped (the one
after the last answer: its ``turn``), with their absolute paths (what the view names).

Links are never read from text alone (principle 7, "references are ours"): a path in a
view's text is a link only when the store says it issued it (``Store.issued``), and the
archive behind it is ``recall.recover``'s answer (rebuilt from the log if the file is gone).
Search is ``recall.recall``. ``compare`` is ``compact --dry-run`` of two policies on the
session's latest conversation (``cli.compact.replay_policy``, passed in by the commands,
against a ``MemoryStore``: nothing written).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InspectorError as InspectorError  # kept importable from here
from ..errors import StoreError
from ..history.inspect import Event, Undone, shown_path, timing_line, timing_of
from ..messages import Message
from ..session.recall import message_text, recall, recover
from ..session.records import EventRecord, MessageRecord, journal
from ..session.state import SessionState
from ..sizing import TokenCounter
from ..store.base import Store
from ..store.meta import SessionMeta, meta_of, sessions_of

# (session, policy, store) -> (outcome with ``as_dict()``, final view): ``replay_policy``.
Replay = Callable[[Any, Any, Store], tuple[Any, list[Message]]]
# A candidate path in a view's text; only those the store issued become links.
_PATH = re.compile(r"/[^\s\"'<>()\[\]{},;]+")
EVENTS_PAGE = 200
_HIT = re.compile(r"^=== message (\d+) \(", re.MULTILINE)


@dataclass(frozen=True)
class Request:
    """One model call: 1-based ``index``, the log position of its answer, its size."""

    index: int
    answer: int
    tokens: int
    messages: int
    cache_break: bool
    spans: tuple[tuple[int, int], ...]


@dataclass
class Inspection:
    session: str
    meta: SessionMeta
    limit: int | None
    root: str
    requests: list[Request] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    logged: int = 0
    now: int = 0
    _issued: dict[str, bool] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, store: Store, session: str) -> Inspection:
        meta = meta_of(store, session)
        if meta is None:
            known = ", ".join(m.id for m in sessions_of(store)[:5]) or "none"
            raise InspectorError(f"no session {session!r} in this store (newest: {known})")
        out = cls(session, meta, meta.context_limit, store.root)
        out._replay(store)
        return out

    def _replay(self, store: Store) -> None:
        state = SessionState(TokenCounter())
        by_id: dict[int, int] = {}
        by_content: dict[str, int] = {}
        alive: list[Message] = []  # holds every object whose id() is a key of by_id
        previous: list[int] = []
        previous_overhead = 0
        undone = Undone()
        for at, record in enumerate(
            journal(store.records(self.session), f"session {self.session}")
        ):
            undone.see(at, record, len(self.events))
            if isinstance(record, MessageRecord):
                message = record.message
                if message.get("role") == "assistant":
                    ids = []
                    # The state keeps each view message's content key: one entry per content.
                    for m, key in zip(state.view, state.shown.keys, strict=True):
                        index = by_id.get(id(m))
                        if index is None:
                            index = by_content.setdefault(key, len(self.messages))
                            if index == len(self.messages):
                                self.messages.append(m)
                            by_id[id(m)] = index
                            alive.append(m)
                        ids.append(index)
                    broke = bool(self.requests) and (
                        ids[: len(previous)] != previous or state.overhead != previous_overhead
                    )
                    self.requests.append(
                        Request(
                            len(self.requests) + 1,
                            record.seq,
                            state.measure(),
                            len(ids),
                            broke,
                            _runs(ids),
                        )
                    )
                    previous, previous_overhead = ids, state.overhead
                state.add_message(record, _key(message))
                self.logged += 1
            elif isinstance(record, EventRecord):
                self.events.append(self._event(record))
            else:
                state.apply(record)
        self.events = undone.mark(self.events)
        self.now = state.measure()

    def _event(self, record: EventRecord) -> Event:
        before, after = record.before, record.after
        return Event(
            len(self.requests) + 1,
            record.stage,
            before,
            after,
            before - after,
            record.note,
            list(record.paths),
            timing_of(record),
        )

    def event_rows(self, request: int | None = None) -> list[dict[str, Any]]:
        """The events (of one request, or all) as the page shows them."""
        return self._rows([e for e in self.events if request is None or e.turn == request])

    def _rows(self, events: list[Event]) -> list[dict[str, Any]]:
        """``turn`` is the request the event shaped; ``paths`` as the view names them,
        ``shown`` relative to the store's root."""
        return [
            {
                **asdict(e),
                "request": e.turn,
                "shown": [shown_path(p, Path(self.root)) for p in e.paths],
                "when": timing_line(e.timing),
            }
            for e in events
        ]

    # -- what the page asks for ------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Everything the page draws before any click: small, whatever the session's size."""
        return {
            "session": self.session,
            "source": self.meta.source_text,
            "created": self.meta.created,
            "limit": self.limit,
            "logged": self.logged,
            "now": self.now,
            "tokens": [r.tokens for r in self.requests],
            "sizes": [r.messages for r in self.requests],
            "breaks": [r.index for r in self.requests if r.cache_break],
            "marks": sorted({e.turn for e in self.events}),
            "events": len(self.events),
            "compare_limit": self.limit or max(1_000, max(self.tokens(), default=0) // 2),
        }

    def events_page(self, offset: int = 0, limit: int = EVENTS_PAGE) -> dict[str, Any]:
        """The events table, ``limit`` rows from ``offset``: thousands of rows are not drawn
        before the page is shown."""
        rows = self._rows(self.events[offset : offset + limit])
        return {"total": len(self.events), "offset": offset, "rows": rows}

    def tokens(self) -> list[int]:
        return [r.tokens for r in self.requests]

    def request(self, index: int) -> Request:
        if not 1 <= index <= len(self.requests):
            raise InspectorError(
                f"session {self.session} has requests 1-{len(self.requests)}, not {index}"
            )
        return self.requests[index - 1]

    def view(self, index: int) -> list[Message]:
        """Request ``index``'s messages exactly as they were sent."""
        return [
            self.messages[i]
            for start, count in self.request(index).spans
            for i in range(start, start + count)
        ]

    def view_payload(self, store: Store, index: int) -> dict[str, Any]:
        request = self.request(index)
        view = self.view(index)
        return {
            "request": index,
            "tokens": request.tokens,
            "answer": request.answer,
            "cache_break": request.cache_break,
            "events": self.event_rows(index),
            "messages": view,
            "links": self.links(store, view),
        }

    def first_sent(self, seq: int) -> int | None:
        """The first request that carried log message ``seq`` (its answer came after it)."""
        answers = [r.answer for r in self.requests]
        at = bisect.bisect_right(answers, seq)
        return at + 1 if at < len(answers) else None

    def search(self, store: Store, query: str, offset: int = 0, limit: int = 20_000) -> Any:
        try:
            page = recall(store, self.session, query, offset=offset, limit=limit)
        except ValueError as error:
            raise InspectorError(str(error)) from None
        hits = sorted({int(m.group(1)) for m in _HIT.finditer(page.text)})
        return {
            "query": page.query,
            "hits": page.hits,
            "offset": page.offset,
            "total": page.total,
            "next_offset": page.next_offset,
            "text": page.text,
            "messages": [{"message": s, "first_sent": self.first_sent(s)} for s in hits],
            "links": self.links(store, [{"role": "user", "content": page.text}]),
        }

    def links(self, store: Store, messages: list[Message]) -> list[str]:
        """The paths named in ``messages`` that the store issued, each once, in order."""
        seen: dict[str, None] = {}
        for message in messages:
            for candidate in _PATH.findall(message_text(message)):
                path = candidate.rstrip(".:")
                if path in seen:
                    continue
                if path not in self._issued:
                    self._issued[path] = store.issued(path)
                if self._issued[path]:
                    seen[path] = None
        return list(seen)


def archive(store: Store, session: str, path: str) -> dict[str, Any]:
    """The archived original behind a path the store issued (``recover``), as text."""
    found = recover(store, session, path)
    if found is None:
        raise InspectorError(f"{path} is not a file this session's store issued")
    if isinstance(found, bytes):
        from ..media import describe

        return {"path": path, "text": f"[media file: {describe(found)}]"}
    return {"path": path, "text": found}


def sessions(store: Store) -> list[dict[str, Any]]:
    """Every session of the store, newest first: id, when, where from (no replay)."""
    return [{"id": m.id, "created": m.created, "source": m.source_text} for m in sessions_of(store)]


def worth_showing(store: Store, listed: list[dict[str, Any]]) -> str | None:
    """The session a page opens on: the newest one in which the model answered at least once
    (a one-message import has nothing to show per request), else the newest. Journals are
    read newest first and only until an answer shows up."""
    for item in listed:
        try:
            for record in store.records(str(item["id"])):
                message = record.get("message") if record.get("kind") == "message" else None
                if isinstance(message, dict) and message.get("role") == "assistant":
                    return str(item["id"])
        except StoreError:  # a damaged session is not opened on; its own request says why
            continue
    return str(listed[0]["id"]) if listed else None


def compare(
    store: Store, session: str, a: str, b: str, limit: int, replay: Replay
) -> dict[str, Any]:
    """``compact --dry-run`` of policies ``a`` and ``b`` on the session, side by side:
    ``replay`` is ``cli.compact.replay_policy`` (given by the command: it lives above us)."""
    from ..history.transfer import history
    from ..loaders import Session
    from ..store.memory import MemoryStore

    meta = meta_of(store, session) or SessionMeta(session)
    source = Session(
        meta.name or session,
        meta.format or "session",
        meta.system,
        history(store, session),
        0,
        session,
    )
    out: dict[str, Any] = {"limit": limit, "policies": []}
    for name in (a, b):
        try:
            outcome, _ = replay(source, policy_named(name, limit), MemoryStore())
        except Exception as error:  # a policy that gives up is shown, not a traceback
            out["policies"].append({"policy": name, "error": f"{type(error).__name__}: {error}"})
            continue
        out["policies"].append({"policy": name, **outcome.as_dict()})
    return out


def policy_names() -> list[str]:
    """Every name of the registry, the engines of installed packages (the bench's peers)
    registered first through the registry's entry points (here, not when the inspector is
    imported)."""
    from ..registry import NAMES, load_plugins

    load_plugins()
    return list(NAMES)


def policy_named(name: str, limit: int) -> Any:
    """The registry's policy ``name`` at ``limit`` (characters for ``seed``)."""
    from ..registry import policy_at

    names = policy_names()
    if name not in names:
        raise InspectorError(f"unknown policy {name!r}; known: {', '.join(names)}")
    return policy_at(name, limit)


def _runs(ids: list[int]) -> tuple[tuple[int, int], ...]:
    runs: list[list[int]] = []
    for i in ids:
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1][1] += 1
        else:
            runs.append([i, 1])
    return tuple((s, c) for s, c in runs)


def _key(message: Message) -> str:
    from ..keys import content_key

    return content_key(message)


__all__ = [
    "Inspection",
    "InspectorError",
    "Replay",
    "Request",
    "archive",
    "compare",
    "policy_named",
    "sessions",
    "worth_showing",
]
