"""OpenAI Chat Completions message lists, including mini-swe-agent trajectories.

Accepted documents: a top-level list of chat messages (the OpenHands SDK fixtures,
mini-swe-agent's v1 test data) or an object with a ``messages`` list (mini-swe-agent 1.1
``.traj.json``: ``info``, ``messages``, ``trajectory_format``, ``instance_id``). Extra keys
(``extra``, ``provider_specific_fields``, ...) are ignored.

* ``system`` / ``developer`` messages before the first user or assistant message form
  ``Session.system``; later ones stay in place as user text.
* ``user`` content (a string or content parts; images become ``[image]``) becomes text.
* ``assistant`` content becomes text and each ``tool_calls`` entry a ``tool_use`` block
  (``id``, ``function.name``, ``function.arguments`` parsed from its JSON string). The legacy
  single ``function_call`` gets the id ``call_<message index>``.
* ``tool`` messages become ``tool_result`` blocks for their ``tool_call_id``; legacy
  ``function`` messages answer the last ``function_call``.
* mini-swe-agent ends its messages with an ``exit`` record holding the submission: part of
  the format, never sent to the model, so it is dropped without being counted. Any other
  role is skipped and counted.

mini-swe-agent v1 (format ``mini_swe_agent`` without any ``tool_calls``): the action is the
single fenced block (```` ```mswea_bash_command ```` or ```` ```bash ````) in the assistant
text and the next user message is its output. Such an assistant message becomes its text
without the block plus a synthetic ``tool_use`` (id ``mswea_<message index>``, name
``bash``, input ``{"command": ...}``), and the next user message a ``tool_result``. A
message without exactly one block stays text (mini-swe-agent rejects it as a format error
and the next user message is that error), as does everything before the first action; one
with several blocks is counted in ``Session.converted`` (``several_actions_as_text``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ._common import (
    Block,
    HistoryBuilder,
    Session,
    join_system,
    make_session,
    openai_tool_calls,
    parse_arguments,
    stem,
    text_block,
    text_blocks,
    text_of,
    tool_result_block,
    tool_use_block,
    unknown_format,
)

FORMAT = "openai_chat"
MINI_FORMAT = "mini_swe_agent"

_ACTION = re.compile(r"```(?:mswea_bash_command|bash)[ \t]*\n(.*?)\n```", re.DOTALL)


def load(path: str | Path) -> list[Session]:
    with Path(path).open(encoding="utf-8") as handle:
        return load_document(json.load(handle), path)


def is_mini(document: Any, source: str | Path) -> bool:
    """Whether a chat document is a mini-swe-agent trajectory."""
    if isinstance(document, dict):
        marker = document.get("trajectory_format")
        info = document.get("info")
        if isinstance(marker, str) and marker.startswith("mini-swe-agent"):
            return True
        if isinstance(info, dict) and "mini_version" in info:
            return True
    return Path(source).name.endswith(".traj.json")


def load_document(document: Any, source: str | Path, fmt: str | None = None) -> list[Session]:
    """The one session of a chat document (list of messages or ``{"messages": [...]}``)."""
    messages = document.get("messages") if isinstance(document, dict) else document
    if not isinstance(messages, list):
        raise unknown_format(source, "no list of chat messages")
    fmt = fmt or (MINI_FORMAT if is_mini(document, source) else FORMAT)
    text_actions = fmt == MINI_FORMAT and not any(
        isinstance(m, dict) and (m.get("tool_calls") or m.get("role") == "tool") for m in messages
    )
    builder = HistoryBuilder()
    system: list[str] = []
    started = False
    pending: str | None = None
    last_function: str | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            builder.skip("malformed_message")
            continue
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            if started:
                builder.user(text_blocks(content))
            else:
                system.append(text_of(content))
            continue
        if role == "user":
            started = True
            if pending is not None:
                builder.user([tool_result_block(pending, text_of(content))])
                pending = None
            else:
                builder.user(text_blocks(content))
        elif role == "assistant":
            started = True
            pending = None
            blocks = text_blocks(content)
            if text_actions:
                blocks, pending = _text_action(content, index)
                if pending is None and len(_ACTION.findall(text_of(content))) > 1:
                    builder.convert("several_actions_as_text")
            blocks.extend(openai_tool_calls(builder, message.get("tool_calls")))
            function_call = message.get("function_call")
            if isinstance(function_call, dict) and function_call.get("name"):
                last_function = f"call_{index}"
                arguments, parsed = parse_arguments(function_call.get("arguments"))
                if not parsed:
                    builder.skip("unparsed_arguments")
                blocks.append(tool_use_block(last_function, str(function_call["name"]), arguments))
            builder.assistant(blocks)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            builder.user([tool_result_block(str(call_id or ""), text_of(content))])
        elif role == "function":
            builder.user([tool_result_block(last_function or "", text_of(content))])
        elif role == "exit" and fmt == MINI_FORMAT:
            continue
        else:
            builder.skip("unknown_role")
    return [make_session(stem(source), fmt, join_system(system), builder, source)]


def _text_action(content: Any, index: int) -> tuple[list[Block], str | None]:
    text = text_of(content)
    matches = list(_ACTION.finditer(text))
    if len(matches) != 1:
        return text_blocks(text), None
    match = matches[0]
    thought = (text[: match.start()] + text[match.end() :]).strip()
    call_id = f"mswea_{index}"
    blocks: list[Block] = [text_block(thought)] if thought else []
    blocks.append(tool_use_block(call_id, "bash", {"command": match.group(1).strip()}))
    return blocks, call_id
