"""OpenHands evaluation / resolver output (``output.jsonl``): one instance per line.

Each line is one full trajectory, so a file yields one session per line, named by
``instance_id`` (else ``<stem>[<line>]``). ``history`` is a list of events; each has either
``action`` or ``observation``.

Current schema (events with ``id``, ``source``, ``message``, ``args`` / ``content``):

* ``system`` action: ``args.content`` is the system prompt (``Session.system``).
* ``message`` action: text, from the user (``source: user``) or the agent.
* other agent actions (``run``, ``read``, ``edit``, ``think``, ``finish``, ...) become
  ``tool_use`` blocks: id ``tool_call_metadata.tool_call_id``, name ``function_name``, input
  the parsed ``arguments`` of the matching call in ``model_response`` (the raw LiteLLM
  response). The assistant text is that response's ``content``, once per response; actions
  from one response (parallel calls) form one assistant message. Without metadata the id is
  ``oh_<event id>``, the name the action, the input its ``args`` and the text ``args.thought``.
* observations become ``tool_result`` blocks (``content``), matched by
  ``tool_call_metadata.tool_call_id``, else by ``cause`` (the id of the action answered),
  else to the last unanswered action. An observation with nothing to answer (an ``error``
  raised before any action was recorded) stays in place as user text.
* ``recall`` actions/observations, agent-state changes and condensation events are
  bookkeeping and are dropped; actions from the user other than messages are skipped and
  counted.

Legacy resolver schema (``issue``, ``git_patch``, ...): ``history`` is a flat list of action
and observation dicts (fields inline, no ``args``), possibly as ``[action, observation]``
pairs, with no ids; actions get ids ``oh_<n>`` and observations answer the action before
them. The first ``message`` is the task from the user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import (
    Block,
    HistoryBuilder,
    Session,
    join_system,
    make_session,
    parse_arguments,
    read_jsonl,
    stem,
    text_block,
    text_of,
    tool_result_block,
    tool_use_block,
    unknown_format,
)

FORMAT = "openhands"

_BOOKKEEPING_ACTIONS = frozenset(
    {"recall", "change_agent_state", "null", "condensation", "condensation_request"}
)
_BOOKKEEPING_OBSERVATIONS = frozenset({"recall", "agent_state_changed", "null", "condensation"})
# Event fields that describe the runtime, not the call; dropped from a fallback tool input.
_NOT_ARGUMENTS = frozenset(
    {
        "id",
        "timestamp",
        "source",
        "message",
        "cause",
        "action",
        "observation",
        "thought",
        "args",
        "extras",
        "tool_call_metadata",
        "llm_metrics",
        "is_confirmed",
        "confirmation_state",
        "action_risk",
        "security_risk",
        "keep_prompt",
        "kernel_init_code",
        "blocking",
        "hidden",
        "is_static",
        "cwd",
        "is_input",
        "impl_source",
        "wait_for_response",
        "images_urls",
        "image_urls",
        "include_extra",
        "translated_ipython_code",
    }
)


def load(path: str | Path) -> list[Session]:
    records, bad = read_jsonl(Path(path))
    return load_records(records, path, bad)


def load_records(records: list[Any], source: str | Path, bad_lines: int = 0) -> list[Session]:
    """One session per instance (line) holding a ``history`` list."""
    sessions: list[Session] = []
    carried = bad_lines
    base = stem(source)
    for index, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(record.get("history"), list):
            carried += 1
            continue
        sessions.append(load_instance(record, source, f"{base}[{index}]", carried))
        carried = 0
    if not sessions:
        raise unknown_format(source, "no OpenHands instance with a 'history' list")
    if carried:
        last = sessions[-1]
        notes = dict(last.notes)
        notes["malformed_line"] = notes.get("malformed_line", 0) + carried
        sessions[-1] = Session(
            name=last.name,
            format=last.format,
            system=last.system,
            messages=last.messages,
            skipped=last.skipped + carried,
            source=last.source,
            notes=notes,
        )
    return sessions


def load_instance(
    record: dict[str, Any], source: str | Path, fallback_name: str, skipped_lines: int = 0
) -> Session:
    """The session of one instance (one line of an output file)."""
    builder = HistoryBuilder()
    builder.skip("malformed_line", skipped_lines)
    converter = _Converter(builder)
    for event in _events(record["history"], builder):
        if "action" in event:
            converter.action(event)
        elif "observation" in event:
            converter.observation(event)
        else:
            builder.skip("unknown_event")
    return make_session(
        _name(record, fallback_name), FORMAT, join_system(converter.system), builder, source
    )


def _name(record: dict[str, Any], fallback: str) -> str:
    instance_id = record.get("instance_id")
    if isinstance(instance_id, (str, int)) and str(instance_id):
        return str(instance_id)
    issue = record.get("issue")
    if isinstance(issue, dict) and issue.get("repo") and issue.get("number") is not None:
        return f"{issue.get('owner')}/{issue['repo']}#{issue['number']}"
    return fallback


def _events(history: list[Any], builder: HistoryBuilder) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for entry in history:
        items = entry if isinstance(entry, list) else [entry]
        for item in items:
            if isinstance(item, dict):
                events.append(item)
            else:
                builder.skip("malformed_event")
    return events


class _Converter:
    def __init__(self, builder: HistoryBuilder) -> None:
        self.builder = builder
        self.system: list[str] = []
        self._call_of_event: dict[Any, str] = {}
        self._unanswered: str | None = None
        self._responses_seen: set[str] = set()
        self._count = 0

    def action(self, event: dict[str, Any]) -> None:
        self._count += 1
        action = event.get("action")
        args = event.get("args")
        fields: dict[str, Any] = args if isinstance(args, dict) else event
        source = event.get("source")
        if action == "system":
            self.system.append(text_of(fields.get("content") or event.get("message")))
            return
        if action == "message":
            text = fields.get("content")
            if not isinstance(text, str):
                text = text_of(event.get("message"))
            if source == "agent":
                self.builder.assistant([text_block(text)])
            else:
                self.builder.user([text_block(text)])
            return
        if action in _BOOKKEEPING_ACTIONS:
            return
        if source in ("user", "environment"):
            self.builder.skip("non_agent_action")
            return
        meta = event.get("tool_call_metadata")
        meta = meta if isinstance(meta, dict) else {}
        event_id = event.get("id")
        if not isinstance(event_id, (int, str)):
            event_id = self._count
        call_id = meta.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"oh_{event_id}"
        name = meta.get("function_name")
        if not isinstance(name, str) or not name:
            name = str(action)
        response = meta.get("model_response")
        response = response if isinstance(response, dict) else {}
        response_id = response.get("id") if isinstance(response.get("id"), str) else None
        blocks: list[Block] = []
        call = _response_call(response, call_id)
        if response:
            if response_id is None or response_id not in self._responses_seen:
                blocks.append(text_block(text_of(_response_message(response).get("content"))))
            if response_id is not None:
                self._responses_seen.add(response_id)
        elif isinstance(fields.get("thought"), str):
            blocks.append(text_block(fields["thought"]))
        if call is not None:
            arguments, parsed = parse_arguments(call.get("arguments"))
            if not parsed:
                self.builder.skip("unparsed_arguments")
        else:
            arguments = {k: v for k, v in fields.items() if k not in _NOT_ARGUMENTS}
        blocks.append(tool_use_block(call_id, name, arguments))
        self.builder.assistant(blocks, key=response_id or f"event:{event_id}")
        self._call_of_event[event_id] = call_id
        self._unanswered = call_id

    def observation(self, event: dict[str, Any]) -> None:
        if event.get("observation") in _BOOKKEEPING_OBSERVATIONS:
            return
        meta = event.get("tool_call_metadata")
        call_id = meta.get("tool_call_id") if isinstance(meta, dict) else None
        if not isinstance(call_id, str) or not call_id:
            cause = event.get("cause")
            found = self._call_of_event.get(cause) if isinstance(cause, (int, str)) else None
            call_id = found or self._unanswered
        content = text_of(event.get("content"))
        if call_id is None:
            self.builder.user([text_block(content or text_of(event.get("message")))])
            return
        self.builder.user([tool_result_block(call_id, content)])
        if call_id == self._unanswered:
            self._unanswered = None


def _response_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return {}


def _response_call(response: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    calls = _response_message(response).get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict) and call.get("id") == call_id:
            function = call.get("function")
            return function if isinstance(function, dict) else None
    return None
