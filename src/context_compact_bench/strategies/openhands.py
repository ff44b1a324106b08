"""``openhands-summarizer``: OpenHands' default condenser, modelled.

Follows ``openhands-sdk`` 1.58.2 (``openhands/sdk/context/condenser/
llm_summarizing_condenser.py``: ``default_condenser`` = ``LLMSummarizingCondenser(max_size=80,
keep_first=4)``; ``condenser/base.py``; ``agent/agent.py``), checked against the real one by
``bench --real-peers``. As that version does it:

* The agent's history is a list of *events*: the system prompt is the first; each tool call
  (action) and each tool output (observation) is one event, as is each plain message.
  ``max_size`` and ``keep_first`` count the system prompt event (here the bench adds the
  system prompt itself, so the model's events are one fewer).
* Soft: when the view holds more than ``max_size`` events, it is condensed to half: the first
  ``keep_first`` events stay, one summary event, then the newest
  ``max_size // 2 - keep_first - 1`` events.
* Hard, by window: when the request's tokens exceed the agent model's input window (the
  budget; ``max_tokens`` unset), the oldest events after the head are forgotten until at least
  ``total - window // 2`` tokens are gone.
* A condensation that would forget less than 10% of the view (``minimum_progress``) is not
  made; for a hard reason the condenser then summarizes everything after the system prompt
  (``hard_context_reset``). After each condensation the agent's next step condenses again
  while a reason remains.
* Everything forgotten is summarized with the previous summary (a rolling summary); the
  summarizer is shown each forgotten event's preview, its text cut to 500 characters.
* Refusal and retry: a request still over the window is refused by the API
  (``LLMContextWindowExceedError``); the agent emits a condensation request and the condenser
  halves the view, up to 5 times a call. ``refusals`` counts those refused requests.
* The view never splits a tool call from its output and keeps a parallel batch together; so a
  batch cut by a boundary is forgotten whole.
* Observations are cut to ``MAX_CMD_OUTPUT_SIZE`` = 30,000 characters (head and tail)
  when recorded (``openhands/tools/.../terminal/constants.py``).

The event store keeps every event, but the model has no way to address a forgotten one, so
forgotten results count as lost unless the summary happens to carry them.
"""

from __future__ import annotations

from typing import Any

from context_compact.engine import Env
from context_compact.invariants import thinking_kept
from context_compact.messages import (
    Message,
    block_type,
    blocks,
    is_text,
    is_tool_use,
    result_text,
    turn_start,
)
from context_compact.sizing import TokenCounter
from context_compact.summary.contract import Summarizes

from .base import LoggedStrategy, result_positions, summary_text, truncate_middle, with_result

MAX_SIZE = 80
KEEP_FIRST = 4
MAX_RETRIES = 5
MAX_LOOPS = 20
MINIMUM_PROGRESS = 0.1
PREVIEW = 500
# The SDK's view opens with the system prompt event, which the bench adds itself.
SYSTEM_EVENTS = 1
MAX_OUTPUT_CHARS = 30_000

# An event: (log index, block index or -1 for the message's non-tool part, batch or -1).
Event = tuple[int, int, int]
SUMMARY: Event = (-1, -1, -1)


def events_of(li: int, message: Message) -> list[Event]:
    uses = [bi for bi, b in enumerate(blocks(message)) if is_tool_use(b)]
    if message.get("role") == "assistant" and uses:
        return [(li, bi, li) for bi in uses]
    results = result_positions(message)
    out: list[Event] = [(li, bi, li - 1) for bi in results]
    content = message.get("content")
    if not results or isinstance(content, str) or len(results) < len(blocks(message)):
        out.append((li, -1, -1))
    return out


class SummarizingCondenser(LoggedStrategy):
    name = "openhands-summarizer"

    def __init__(
        self,
        summarizer: Summarizes,
        budget: int | None = None,
        overhead: int = 0,
        max_size: int = MAX_SIZE,
        keep_first: int = KEEP_FIRST,
        max_output_chars: int = MAX_OUTPUT_CHARS,
    ) -> None:
        if max_size // 2 - keep_first - 1 <= 0 or keep_first < SYSTEM_EVENTS:
            raise ValueError("keep_first must be less than max_size // 2")
        self.summarizer = summarizer
        self.budget = budget
        self.fixed_tokens = overhead
        self.max_size = max_size
        self.keep_first = keep_first
        self.max_output_chars = max_output_chars
        self.counter = TokenCounter()
        self.refusals = 0
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self.head: list[Event] | None = None
        self.tail: list[Event] = []
        self.summary: Message | None = None
        self._indexed = 0

    def admit(self, message: Message) -> Message:
        long = {
            bi: truncate_middle(result_text(blocks(message)[bi]), self.max_output_chars)
            for bi in result_positions(message)
            if len(result_text(blocks(message)[bi])) > self.max_output_chars
        }
        return with_result(message, long) if long else message

    # -- the view ----------------------------------------------------------------------
    def events(self) -> list[Event]:
        if self.head is None:
            return self.tail
        return [*self.head, SUMMARY, *self.tail]

    def render(self, events: list[Event]) -> list[Message]:
        out: list[Message] = []
        i = 0
        while i < len(events):
            li = events[i][0]
            if li < 0:
                if self.summary is not None:
                    out.append(self.summary)
                i += 1
                continue
            j = i
            while j < len(events) and events[j][0] == li:
                j += 1
            parts = tuple(e[1] for e in events[i:j])
            out.append(self._message(li, parts))
            i = j
        return out

    def _message(self, li: int, parts: tuple[int, ...]) -> Message:
        message = self.log[li]
        if len(parts) == len(events_of(li, message)):
            return message
        return self.rendered(li, parts, lambda: self._partial(message, parts))

    @staticmethod
    def _partial(message: Message, parts: tuple[int, ...]) -> Message:
        keep_rest = -1 in parts
        content = [
            b
            for bi, b in enumerate(blocks(message))
            if bi in parts or (keep_rest and block_type(b) not in ("tool_use", "tool_result"))
        ]
        return {**message, "content": content}

    def size(self) -> int:
        return self.counter.messages(self.render(self.events())) + self.fixed_tokens

    # -- condensing --------------------------------------------------------------------
    def condense(self, target: int) -> bool:
        view = self.events()
        events_from_tail = target - self.keep_first - 1
        if events_from_tail <= 0:
            return False
        first = self.keep_first - SYSTEM_EVENTS
        head = view[:first] if self.head is None else self.head
        body = view[first:] if self.head is None else self.tail
        return self.forget(head, body, events_from_tail, view)

    def forget(
        self,
        head: list[Event],
        body: list[Event],
        events_from_tail: int,
        view: list[Event],
        minimum: float = 1,
    ) -> bool:
        """Forget all of ``body`` but its newest ``events_from_tail`` events (batches whole)."""
        cut = len(body) - events_from_tail
        if cut <= 0:
            return False
        forgotten, tail = body[:cut], body[cut:]
        gone = {e[2] for e in forgotten if e[2] >= 0}
        head_batches = {e[2] for e in head if e[2] >= 0}
        # A batch is kept whole or forgotten whole; the head keeps only complete batches.
        tail_cut = {e[2] for e in tail if e[2] in gone}
        forgotten += [e for e in tail if e[2] in tail_cut]
        tail = [e for e in tail if e[2] not in tail_cut]
        split = {b for b in head_batches if b in gone}
        forgotten = [e for e in head if e[2] in split] + forgotten
        head = [e for e in head if e[2] not in split]
        forgotten, tail = self._keep_thinking(view, head, forgotten, tail)
        if not forgotten or len(forgotten) < minimum:
            return False
        previous = [self.summary] if self.summary is not None else []
        text = summary_text(self.summarizer, previous + [self.previews(forgotten)])
        self.summary = {
            "role": "user",
            "content": f"<CONDENSED_HISTORY_SUMMARY>\n{text}\n</CONDENSED_HISTORY_SUMMARY>",
        }
        self.head, self.tail = head, tail
        return True

    def _keep_thinking(
        self, view: list[Event], head: list[Event], forgotten: list[Event], tail: list[Event]
    ) -> tuple[list[Event], list[Event]]:
        """Forget less when the kept tail would start the turn in progress after its thinking
        block (the API refuses that): the turn's events from its first message on are kept.
        The SDK's View does not model thinking; this keeps its requests valid."""
        saved, self.summary = self.summary, {"role": "user", "content": ""}
        try:
            before = self.render(view)
            if thinking_kept(before, self.render([*head, SUMMARY, *tail])):
                return forgotten, tail
        finally:
            self.summary = saved
        start = turn_start(self.log)
        opener = next(
            (i for i in range(start, len(self.log)) if self.log[i].get("role") == "assistant"),
            len(self.log),
        )
        back = [e for e in forgotten if e[0] >= opener]
        return [e for e in forgotten if e[0] < opener], back + tail

    def prepare(self, messages: list[Message], active_request: str) -> list[Message]:
        self.sync(messages)
        for li in range(self._indexed, len(self.log)):
            self.tail.extend(events_of(li, self.log[li]))
        self._indexed = len(self.log)
        for _ in range(MAX_LOOPS):  # the agent condenses again until the view needs none
            over = self.budget is not None and self.size() > self.budget
            soft = len(self.events()) + SYSTEM_EVENTS > self.max_size
            if not (over or soft):
                break
            if not self.condense_step(over, soft):
                if over:
                    self.hard_reset()
                break
        retries = 0
        while self.budget is not None and self.size() > self.budget and retries < MAX_RETRIES:
            self.refusals += 1  # the API refuses it; the agent requests a condensation
            retries += 1
            if not self.condense((len(self.events()) + SYSTEM_EVENTS) // 2):
                break
        return self.returned(self.render(self.events()))

    def condense_step(self, over: bool, soft: bool) -> bool:
        """One condensation for the reasons given, the strictest of their targets; False
        when it would forget less than ``MINIMUM_PROGRESS`` of the view (the SDK's error)."""
        view = self.events()
        first = self.keep_first - SYSTEM_EVENTS
        head = view[:first] if self.head is None else self.head
        body = view[first:] if self.head is None else self.tail
        keep: list[int] = []
        if soft:
            keep.append(self.max_size // 2 - self.keep_first - 1)
        if over and self.budget is not None:
            reduction = self.size() - self.budget // 2
            # The previous summary is the first event after the head: forgetting it counts.
            gone = self.counter.message(self.summary) if self.summary is not None else 0
            dropped = 0
            while dropped < len(body) and gone < reduction:
                event = body[dropped]
                gone += self.counter.message(self._message(event[0], (event[1],)))
                dropped += 1
            keep.append(len(body) - dropped)
        minimum = MINIMUM_PROGRESS * (len(view) + SYSTEM_EVENTS)
        return self.forget(head, body, min(keep), view, minimum)

    def previews(self, events: list[Event]) -> Message:
        """What the SDK's summarizer is shown: each event's ``str()``, its text cut to
        ``N_CHAR_PREVIEW`` = 500 characters (``openhands/sdk/event/base.py``)."""

        def cut(text: str) -> str:
            return text[:PREVIEW] + "..." if len(text) > PREVIEW else text

        out = []
        for li, bi, _ in events:
            if li < 0:
                continue
            message = self.log[li]
            if bi < 0:
                body = message.get("content")
                text = (
                    body
                    if isinstance(body, str)
                    else " ".join(b.get("text", "") for b in blocks(message) if is_text(b))
                )
                out.append(f"MessageEvent ({message.get('role')})\n{cut(text)}")
                continue
            block = blocks(message)[bi]
            if is_tool_use(block):
                thought = " ".join(b.get("text", "") for b in blocks(message) if is_text(b))
                out.append(
                    f"ActionEvent (agent)\n  Thought: {cut(thought)}\n  Action: {block['name']}"
                )
            else:
                out.append(f"ObservationEvent (environment)\n  Result: {cut(result_text(block))}")
        text = "\n".join(f"<EVENT>\n{e}\n</EVENT>" for e in out)
        return {"role": "user", "content": text}

    def hard_reset(self) -> None:
        """Everything after the system prompt summarized (the SDK's hard context reset)."""
        view = self.events()
        if not view:
            return
        previous = [self.summary] if self.summary is not None else []
        text = summary_text(self.summarizer, previous + [self.previews(view)])
        self.summary = {
            "role": "user",
            "content": f"<CONDENSED_HISTORY_SUMMARY>\n{text}\n</CONDENSED_HISTORY_SUMMARY>",
        }
        self.head, self.tail = [], []


def engine(policy: Any, env: Env) -> SummarizingCondenser:
    return SummarizingCondenser(env.summarizer, budget=policy.context_limit)
