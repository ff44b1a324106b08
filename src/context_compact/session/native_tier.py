"""The native tier: a summary the engine decides on, made by the provider as a compaction block.

Under ``Policy.default(native=True)`` (or ``"auto"``) a summary's range is chosen as always
(``summary.plan``: the user's words pinned, the recent steps of a long turn carried, results
persisted and cleared around it); only its text changes hands. Whoever can reach the
provider (the drop-in client, ``integrations/native_client.py``) hands the engine a
``NativeCompact``: given the messages of the view before the summary's cut, as they were
sent, it asks the provider for a compaction of them (Anthropic's on-demand ``compaction``
request, with the conversation's system prompt and tools) and returns the block. The engine
stays free of I/O at the pass level: the call is an effect of the summary pass like the
summarizer's, made after the archive is saved and before the edit is journaled, and the
block is journaled inside the ``SummaryEdit`` (``block``), so the state never runs ahead of
the journal and a resumed session sends the same block.

What the block replaces is archived like any summary's messages, and a readable summary of
ours (extractive: no model call) is saved as a file the summary message names and kept in
the edit (``text``): two reads away, and words for a provider that cannot read the block.
The block goes first in every later request, unchanged (``pinned.Pinned``). For a provider
that cannot read it (an export of the view to Chat Completions), ``readable`` puts our
readable summary in its place.

A call that raises, or returns no usable block (an Anthropic block without content is a
failed compaction), falls back to our own summary; an event (``native_fallback``) says so.
Under ``"auto"`` the first such failure turns the tier off for the session (the model or
the account does not offer it); under ``True`` each summary tries again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import cast

from ..messages import Block, Message, block_type, blocks, native_compaction
from ..sizing import to_json
from .records import MessageRecord, NativeEdit, Read, SummaryEdit

NativeCompact = Callable[[list[Message]], object]
"""The messages a compaction block should stand for -> the provider's block, unchanged."""

MODES = (False, True, "auto")

SUMMARY_CHARS = 4_000
"""Characters of the readable summary kept beside a native block."""


def usable(block: object) -> Block:
    """``block`` if it is a compaction that stands for what came before it (an Anthropic
    block with a summary, an OpenAI item as a passthrough block); ``ValueError`` otherwise."""
    if not isinstance(block, dict) or not native_compaction(block):
        raise ValueError(f"not a usable compaction block: {str(block)[:120]}")
    return cast(Block, block)


def check_mode(value: object) -> None:
    if value is not True and value is not False and value != "auto":
        raise ValueError(f"native must be False, True or 'auto', got {value!r}")


READABLE = "[Summary of the earlier conversation, in place of the provider's compaction block]"


def readable(messages: list[Message], records: Iterable[Read]) -> list[Message]:
    """``messages`` with each compaction block our journal knows (issued for a summary of
    ours, or adopted) replaced by our readable summary of what it stands for, as text."""
    texts: dict[str, str] = {}
    logged: dict[int, Message] = {}
    for record in records:
        if isinstance(record, SummaryEdit) and record.block is not None and record.text:
            texts[to_json(record.block)] = record.text
        elif isinstance(record, NativeEdit) and record.cut in logged and record.text:
            block = blocks(logged[record.cut])[record.block]
            texts[to_json(block)] = record.text
        elif isinstance(record, MessageRecord):
            logged[record.seq] = record.message
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(block_type(b) == "compaction" for b in content):
            content = [
                {"type": "text", "text": f"{READABLE}\n{texts[to_json(b)]}"}
                if block_type(b) == "compaction" and to_json(b) in texts
                else b
                for b in content
            ]
            message = {**message, "content": content}
        out.append(message)
    return out


NATIVE_SETTING = "native_compaction"
"""The ``Setting`` that turns the provider's compaction off for a session (``False``) once it
refused under ``native="auto"``: journaled, so a resumed session does not ask again."""


__all__ = [
    "MODES",
    "NATIVE_SETTING",
    "READABLE",
    "SUMMARY_CHARS",
    "NativeCompact",
    "check_mode",
    "readable",
    "usable",
]
