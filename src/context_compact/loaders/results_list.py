"""Benchmark results lists: one OpenAI chat message list per run (tau-bench style).

The document is a JSON list of run records (or an object holding one under ``results`` or
``simulations``), each with an id (``task_id``, else ``id``, ``instance_id``,
``simulation_id``) and its conversation, a list of chat messages under ``traj``, else
``messages`` or ``trajectory``. tau-bench's ``historical_trajectories/*.json`` and its
``results/*.json`` are this shape (``task_id``, ``reward``, ``info``, ``traj``, ``trial``).

Each run is one session, named by its id (``<id> trial <n>`` when runs carry a ``trial``,
since a benchmark runs each task several times), loaded as ``openai_chat`` loads one message
list (``openai_chat.py``: system prompt, tool calls and results, repairs counted); the
run's score and metadata (``reward``, ``info``) are not conversation. A record without a
message list is skipped and counted on the next session (``malformed_run``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from . import openai_chat
from ._common import Session, unknown_format

FORMAT = "results_list"

_ID_KEYS = ("task_id", "id", "instance_id", "simulation_id")
_MESSAGE_KEYS = ("traj", "messages", "trajectory")
_WRAPPERS = ("results", "simulations")


def runs_of(document: Any) -> list[Any] | None:
    """The run records of a results document, or ``None`` when it is not one."""
    if isinstance(document, dict):
        inner = next((document[k] for k in _WRAPPERS if isinstance(document.get(k), list)), None)
        return runs_of(inner) if inner is not None else None
    if not isinstance(document, list):
        return None
    objects = [r for r in document if isinstance(r, dict)]
    if objects and all(_messages(r) is not None for r in objects):
        return list(document)
    return None


def _messages(record: dict[str, Any]) -> list[Any] | None:
    for key in _MESSAGE_KEYS:
        value = record.get(key)
        if (
            isinstance(value, list)
            and value
            and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in value)
        ):
            return value
    return None


def load_document(document: Any, source: str | Path) -> list[Session]:
    """One session per run."""
    runs = runs_of(document)
    if runs is None:
        raise unknown_format(source, "no list of runs each holding a chat message list")
    sessions: list[Session] = []
    carried = 0
    for index, record in enumerate(runs):
        messages = _messages(record) if isinstance(record, dict) else None
        if messages is None:
            carried += 1
            continue
        session = openai_chat.load_document(messages, source, openai_chat.FORMAT)[0]
        notes = dict(session.notes)
        if carried:
            notes["malformed_run"] = carried
        sessions.append(
            dataclasses.replace(
                session,
                name=_name(record, index),
                format=FORMAT,
                notes=dict(sorted(notes.items())),
                skipped=session.skipped + carried,
            )
        )
        carried = 0
    if carried and sessions:
        last = sessions[-1]
        notes = {**last.notes, "malformed_run": last.notes.get("malformed_run", 0) + carried}
        sessions[-1] = dataclasses.replace(last, notes=notes, skipped=last.skipped + carried)
    return sessions


def _name(record: dict[str, Any], index: int) -> str:
    ident = next((record[k] for k in _ID_KEYS if isinstance(record.get(k), (str, int))), None)
    name = f"run {index}" if ident is None else str(ident)
    trial = record.get("trial")
    return f"{name} trial {trial}" if isinstance(trial, int) else name
