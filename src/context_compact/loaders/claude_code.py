"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON object per line. Lines of ``type`` ``user`` / ``assistant`` carry ``message``, an
Anthropic Messages API message (``role`` + ``content``: a string or blocks ``text``,
``thinking``, ``tool_use``, ``tool_result``, ``image``), plus ``uuid`` / ``parentUuid``
(the thread), ``isSidechain`` (Task sub-agent lines) and flags. Every other ``type``
(``system``, ``summary``, ``progress``, ``file-history-snapshot``, ``queue-operation``, and
from 2.1.x ``attachment``, ``last-prompt``, ``ai-title``, ``custom-title``, ``mode``,
``permission-mode``) is runtime or UI data and is ignored; unknown types are skipped and
counted. An ``attachment`` (a hook's output, a skill listing, a queued command, plan mode)
reaches the model, if at all, as injected reminder text, which the loader drops like the
``isMeta`` lines below.

How the log differs from the conversation the model saw, and what the loader does:

* One API response is written as several ``assistant`` lines sharing ``message.id``, one
  content block per line, and Claude Code runs each tool as soon as its block arrives, so
  the ``tool_result`` lines of earlier blocks can come *between* lines of the same response.
  Lines sharing ``message.id`` are merged back into one assistant message and their results
  into the one user message after it.
* ``thinking`` / ``redacted_thinking`` blocks are dropped (their signatures cannot be
  re-sent; the published logs even replace them), as are lines flagged ``isMeta``
  (injected slash-command expansions, skill bodies, caveats: not typed by the user) and
  ``isApiErrorMessage`` (client-side error notices, not model output).
* Compaction: the ``compact_boundary`` ``system`` line is ignored and the following
  ``isCompactSummary`` user line, the summary the model wrote, stays where it is as a plain
  user text message. The history therefore holds the whole session, before and after.
* ``tool_result`` content lists are flattened to a string (images become ``[image]``);
  ``is_error`` is not kept.
* Sub-agents: a file whose conversation lines are all ``isSidechain`` (``subagents/*.jsonl``)
  is one session, in file order. Older Claude Code versions wrote Task sub-agent threads
  *into* the main file; those lines are not part of the main conversation, so each such
  thread (the lines sharing a ``parentUuid`` root) becomes its own session named
  ``<stem>/sidechain-<n>``, after the main session.
* The main thread is kept in file order; abandoned branches (after a rewind) are not pruned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import (
    HistoryBuilder,
    Session,
    make_session,
    message_blocks,
    read_jsonl,
    stem,
)

FORMAT = "claude_code"

CONVERSATION = frozenset({"user", "assistant"})
RUNTIME = frozenset(
    {
        "system",
        "summary",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        # Written by Claude Code 2.1.x: injected context and session bookkeeping.
        "attachment",
        "last-prompt",
        "ai-title",
        "custom-title",
        "mode",
        "permission-mode",
    }
)
LINE_TYPES = CONVERSATION | RUNTIME


def load(path: str | Path) -> list[Session]:
    records, bad = read_jsonl(Path(path))
    return load_records(records, path, bad)


def load_records(records: list[Any], source: str | Path, bad_lines: int = 0) -> list[Session]:
    """The main session of a Claude Code log, then one session per inline sidechain."""
    base = stem(source)
    main: list[dict[str, Any]] = []
    side: list[dict[str, Any]] = []
    unknown = 0
    for record in records:
        if not isinstance(record, dict):
            unknown += 1
            continue
        kind = record.get("type")
        if kind in CONVERSATION:
            (side if record.get("isSidechain") is True else main).append(record)
        elif kind not in RUNTIME:
            unknown += 1

    groups: list[tuple[str, list[dict[str, Any]]]] = []
    if main:
        groups.append((base, main))
        threads: dict[str, list[dict[str, Any]]] = {}
        roots = _Roots(records)
        for record in side:
            threads.setdefault(roots.of(record), []).append(record)
        groups.extend(
            (f"{base}/sidechain-{n}", lines) for n, lines in enumerate(threads.values(), 1)
        )
    else:
        # A sub-agent file is a single thread, even where its lines hang off several parents.
        groups.append((base, side))

    sessions = []
    for index, (name, lines) in enumerate(groups):
        builder = HistoryBuilder()
        if index == 0:
            builder.skip("unparseable_line", bad_lines)
            builder.skip("unknown_line", unknown)
        for record in lines:
            _add_line(builder, record)
        sessions.append(make_session(name, FORMAT, None, builder, source))
    return sessions


class _Roots:
    """The first line of each line's ``parentUuid`` chain (a sidechain thread's prompt)."""

    def __init__(self, records: list[Any]) -> None:
        self._parent: dict[str, str | None] = {}
        for record in records:
            if isinstance(record, dict) and isinstance(record.get("uuid"), str):
                parent = record.get("parentUuid")
                self._parent[record["uuid"]] = parent if isinstance(parent, str) else None
        self._root: dict[str, str] = {}

    def of(self, record: dict[str, Any]) -> str:
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            return ""
        path: list[str] = []
        seen: set[str] = set()
        node = uuid
        while node not in self._root:
            path.append(node)
            seen.add(node)
            parent = self._parent.get(node)
            if parent is None or parent not in self._parent or parent in seen:
                self._root[node] = node
                break
            node = parent
        root = self._root[node]
        for visited in path:
            self._root[visited] = root
        return root


def _add_line(builder: HistoryBuilder, record: dict[str, Any]) -> None:
    message = record.get("message")
    if not isinstance(message, dict) or "content" not in message:
        builder.skip("malformed_line")
        return
    if record.get("isMeta") is True or record.get("isApiErrorMessage") is True:
        return
    content = message["content"]
    if record["type"] == "assistant":
        key = message.get("id") if isinstance(message.get("id"), str) else None
        builder.assistant(message_blocks(builder, content, "malformed_line"), key=key)
    else:
        builder.user(message_blocks(builder, content, "malformed_line"))
