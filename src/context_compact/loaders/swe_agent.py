"""SWE-agent trajectories (``.traj``: one JSON object).

``history`` is the chat as sent to the model: entries ``{role, content, agent, ...}`` with
role ``system`` / ``user`` / ``assistant`` / ``tool`` and string content (lists of parts are
flattened). ``trajectory`` (the same run step by step), ``info`` and the configuration are
not conversation and are ignored.

* ``system`` entries before the first user or assistant entry form ``Session.system``;
  later ones stay in place as user text.
* Entries flagged ``is_demo`` (in-context demonstrations) are kept as plain text of their
  role, never as tool calls or results.
* Function-calling runs: an assistant entry's ``tool_calls`` (OpenAI format, ``arguments`` a
  JSON string) become ``tool_use`` blocks after its text, and a ``tool`` entry becomes the
  ``tool_result`` for the first id of its ``tool_call_ids`` (``tool_call_id`` also accepted).
  Replayed runs reuse call ids; the repair renames the repeats (``<id>_2``, ...).
* Older runs: the action is a fenced block inside the assistant text, recorded again in
  ``action``, and the tool output is the next ``user`` entry. Such an entry becomes its
  ``thought`` as text plus a synthetic ``tool_use`` (id ``swe_<history index>``, name
  ``bash``, input ``{"command": action}``), and that next user entry the ``tool_result``.
  An assistant entry with an empty ``action`` (a format error) stays text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._common import (
    HistoryBuilder,
    Session,
    join_system,
    make_session,
    openai_tool_calls,
    stem,
    text_blocks,
    text_of,
    tool_result_block,
    tool_use_block,
    unknown_format,
)

FORMAT = "swe_agent"


def load(path: str | Path) -> list[Session]:
    with Path(path).open(encoding="utf-8") as handle:
        return load_document(json.load(handle), path)


def load_document(document: Any, source: str | Path) -> list[Session]:
    """The one session of a ``.traj`` document."""
    history = document.get("history") if isinstance(document, dict) else None
    if not isinstance(history, list):
        raise unknown_format(source, "SWE-agent trajectory without a 'history' list")
    builder = HistoryBuilder()
    system: list[str] = []
    started = False
    pending: str | None = None
    for index, entry in enumerate(history):
        if not isinstance(entry, dict):
            builder.skip("malformed_entry")
            continue
        role = entry.get("role")
        content = entry.get("content")
        if role == "system":
            if started:
                builder.user(text_blocks(content))
            else:
                system.append(text_of(content))
            continue
        if role not in ("user", "assistant", "tool"):
            builder.skip("unknown_role")
            continue
        started = True
        if entry.get("is_demo"):
            blocks = text_blocks(content)
            if role == "assistant":
                builder.assistant(blocks)
            else:
                builder.user(blocks)
            continue
        if role == "assistant":
            pending = None
            calls = entry.get("tool_calls")
            action = entry.get("action")
            if isinstance(calls, list) and calls:
                blocks = text_blocks(content)
                blocks.extend(openai_tool_calls(builder, calls))
            elif isinstance(action, str) and action.strip():
                thought = entry.get("thought")
                blocks = text_blocks(thought.strip() if isinstance(thought, str) else content)
                pending = f"swe_{index}"
                blocks.append(tool_use_block(pending, "bash", {"command": action.strip()}))
            else:
                blocks = text_blocks(content)
            builder.assistant(blocks)
        elif role == "tool":
            ids = entry.get("tool_call_ids")
            call_id = ids[0] if isinstance(ids, list) and ids else entry.get("tool_call_id")
            builder.user([tool_result_block(str(call_id or ""), text_of(content))])
        elif pending is not None:
            builder.user([tool_result_block(pending, text_of(content))])
            pending = None
        else:
            builder.user(text_blocks(content))
    return [make_session(stem(source), FORMAT, join_system(system), builder, source)]
