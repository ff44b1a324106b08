"""An OpenAI Agents SDK session that keeps everything and hands the runner a compacted view.

    from agents import Runner, SQLiteSession
    from context_compact.integrations.openai_agents import CompactingSession

    session = CompactingSession(SQLiteSession("user-42", "chats.db"), compactor)
    result = await Runner.run(agent, "next question", session=session)

The runner reads a session's history once, when a run starts (``get_items``), and adds what
the run produced (``add_items``). ``CompactingSession`` writes every item to the inner session
unchanged and never deletes one (the SDK's ``OpenAIResponsesCompactionSession`` replaces the
stored history with its compacted form); ``get_items`` returns the compactor's view of the
stored items: large outputs persisted with a preview, old outputs cleared, old turns
summarized, each naming the file that holds its full copy. ``inner.get_items()`` is the
whole conversation; ``pop_item`` and ``clear_session`` act on it. ``get_items(limit=N)``
returns at most the view's last N items, starting where a history may start (never a tool
output without its call). The runner keeps a run's own items in memory, so ``get_items``
compacts a run when it starts; pass ``run_config=session.run_config()`` to compact every model
call inside the run and recover a refusal for length (``openai_agents_run``):

    result = await Runner.run(agent, task, session=session, run_config=session.run_config())

Items are Responses input items (``TResponseInputItem``), converted both ways by
``context_compact.formats.openai_responses`` (losslessly: an item the compactor left alone
comes back equal to the stored one, an output it replaced is the stored item with a new
``output``, a ``function_call`` and its output stay together or leave together; reasoning
and other items it cannot read pass through whole). Leading system/developer items are kept
first and never compacted.
"""

from __future__ import annotations

from typing import Any

from ..compactor import Compactor
from ..formats import openai_responses
from ..messages import Message, block_type, blocks
from .conversations import Conversations, compactor_for
from .openai_agents_run import RunCompaction


def pair_safe_tail(items: list[Any], limit: int) -> list[Any]:
    """At most the last ``limit`` items, starting where a history may start: never at a
    tool output, nor with any output whose call is cut off (calls run in parallel put several
    calls before their outputs), nor right after a reasoning item (the API refuses an item
    without the reasoning that produced it). Fewer than ``limit`` when it must."""
    if limit <= 0:
        return []
    start = max(0, len(items) - limit)
    while True:
        while start < len(items) and not _may_start(items, start):
            start += 1
        calls = {_call_id(i) for i in items[start:] if not _is_output(i)}
        orphans = [
            at
            for at in range(start, len(items))
            if _is_output(items[at]) and _call_id(items[at]) not in calls
        ]
        if not orphans:
            return items[start:]
        start = orphans[-1] + 1


def _is_output(item: Any) -> bool:
    kind = _item_type(item)
    return isinstance(kind, str) and kind.endswith("_output")


def _call_id(item: Any) -> Any:
    return item.get("call_id") if isinstance(item, dict) else getattr(item, "call_id", None)


def _item_type(item: Any) -> Any:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


def _may_start(items: list[Any], index: int) -> bool:
    kind = _item_type(items[index])
    if isinstance(kind, str) and kind.endswith("_output"):
        return False
    return index == 0 or _item_type(items[index - 1]) != "reasoning"


def latest_request(messages: list[Message]) -> str:
    """The text of the latest user message that is a request (not tool outputs)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [str(b.get("text", "")) for b in blocks(message) if block_type(b) == "text"]
        if texts and all(block_type(b) != "tool_result" for b in blocks(message)):
            return "\n".join(texts)
    return ""


class CompactingSession:
    """A ``Session`` over ``inner``: everything stored there, a compacted view returned.

    One compactor session per conversation (per ``inner.session_id``): given
    ``Conversations``, ``conversations.get(inner.session_id)``; given one compactor, the
    first session id it serves is its session and another id gets a compactor of the same
    settings on a session of its own (``conversations.compactor_for``). ``self.compactor`` is
    this conversation's."""

    def __init__(self, inner: Any, compactor: Compactor | Conversations) -> None:
        self.inner = inner
        self.session_id: str = inner.session_id
        if isinstance(compactor, Conversations):
            compactor = compactor.get(self.session_id)
        else:
            compactor = compactor_for(compactor, self.session_id)
        self.compactor = compactor
        self.session_settings = getattr(inner, "session_settings", None)
        self._run: RunCompaction | None = None

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The compactor's view of every stored item; with ``limit``, its latest items."""
        items = list(await self.inner.get_items())
        if not items:
            return []
        system, messages = openai_responses.to_canonical(items)
        view = await self.compactor.aprepare(messages, latest_request(messages))
        out = openai_responses.from_canonical(view, system)
        return out if limit is None else pair_safe_tail(out, limit)

    def run_config(self, **kwargs: Any) -> Any:
        """A ``RunConfig`` (``kwargs`` are its fields) that compacts every model call inside
        a run and recovers a refusal for length (``openai_agents_run``)."""
        if self._run is None:
            self._run = RunCompaction(self.compactor, latest_request)
        return self._run.run_config(**kwargs)

    async def add_items(self, items: list[Any]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()


__all__ = ["CompactingSession", "latest_request", "pair_safe_tail"]
