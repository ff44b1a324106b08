"""The summarizer contract: one request in, one result out, and where a callable becomes one.

Every engine asks for a summary the same way: ``summarizer.summarize(SummaryRequest(...))``,
answered by a ``SummaryResult`` (the text and the usage of its model call) or by the text
alone. ``Summarizes`` is that protocol; ``LLMSummarizer`` (``llm.py``) and the extractive
summarizer implement it.

A plain callable ``summarizer(messages) -> str`` is adapted once, where the ``Compactor``
takes it (``adapt``), into a ``CallableSummarizer``: it is called with the messages alone,
the previous summary as a note before them and the focus as a note after them
(``prompts.previous_summary_note``, ``prompts.summary_focus``). Its signature is never read:
a summarizer that wants the previous summary, the focus, the budget or the request as values
implements ``summarize``. Below the boundary nothing asks what kind of summarizer it has.

Invariants: ``adapt`` returns a ``Summarizes`` as it is (adapting twice is adapting once);
the function ``extractive_summary`` becomes ``ExtractiveSummarizer``, which gets the
previous summary as a value (it rolls its own summary over); anything neither callable nor a
``Summarizes`` is refused at the boundary with a ``ConfigError``. A summarizer may say two
things of itself by attribute: ``model_calls = False`` (fast and local: its summaries are
made at the trigger, not ahead) and ``continue_cache = True`` (it wants the agent's request
as sent, ``SummaryRequest.sent``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import ConfigError
from ..messages import FORMAT_META, PASSTHROUGH, model_visible
from ..sizing import to_json
from .extract import extractive_summary
from .facts import Readings, facts
from .prompts import previous_summary_note, summary_focus


@dataclass(frozen=True)
class SummaryRequest:
    """One summary asked of a summarizer: the messages it replaces, the previous summary to
    update, the caller's focus (``/compact focus on X``), the length budget in tokens, the
    active request and a replacement system prompt; and, when the engine knows them, the
    agent's own request up to the summary's cut: the view's messages as sent (``sent``, the
    previous summary among them), its system prompt and tools, for a summarizer that
    continues the agent's cached prefix (``LLMSummarizer(continue_cache=True)``).

    ``form`` is how the summary is asked for: ``"structured"`` (our sections), or
    ``"seed"``, the reference pipeline's exact call (S-4.2's JSON input, S-4.3's prompt),
    which the seed preset asks for. A summarizer with one way of summarizing ignores it.

    ``readings``: what ``facts`` read of these messages, shared with the engine's score of
    the summary (``facts.Readings``): a summarizer that reads facts (the extractive one)
    passes it to ``facts``, so each message is read once; others ignore it. Not part of
    what is asked (two requests that differ only there ask the same)."""

    messages: list[Any]
    previous: str | None = None
    focus: str | None = None
    budget: int | None = None
    request: str | None = None
    prompt: str | None = None
    sent: list[Any] | None = None
    system: str | None = None
    tools: list[Any] | None = None
    form: Literal["structured", "seed"] = "structured"
    readings: Readings | None = field(default=None, compare=False, repr=False)

    def visible_messages(self) -> list[Any]:
        """The messages as a model may see them (``for_summarizer``)."""
        return [for_summarizer(m) for m in self.messages]


@dataclass(frozen=True)
class SummaryResult:
    """A summarizer's answer: the summary's text, and the usage the API reported for its call
    when it made one (``input_tokens``, every input token, cached ones included;
    ``cached_tokens``, read from the prompt cache; ``output_tokens``). The session engine
    puts the usage on the summary's event (``CompactionEvent.timing``)."""

    text: str
    usage: dict[str, int] | None = None


@runtime_checkable
class Summarizes(Protocol):
    """The summarizer: one request object in, the summary out (a ``SummaryResult``, or its
    text alone)."""

    def summarize(self, ask: SummaryRequest) -> SummaryResult | str: ...


Summarizer = Summarizes | Callable[[list[Any]], str]
"""What a ``Compactor`` takes as its summarizer: a ``Summarizes``, or a plain callable."""


class CallableSummarizer:
    """A plain callable ``summarizer(messages) -> str`` as a ``Summarizes``: called with the
    messages alone, the previous summary as a note first and the focus as a note last; what
    it returns is its text. A model summarizer unless the callable says ``model_calls =
    False``."""

    def __init__(self, summarizer: Callable[[list[Any]], str]) -> None:
        self.summarizer = summarizer
        self.model_calls = getattr(summarizer, "model_calls", True) is not False

    def summarize(self, ask: SummaryRequest) -> str:
        shown = ask.visible_messages()
        if ask.previous is not None:
            shown = [previous_summary_note(ask.previous), *shown]
        if ask.focus:
            shown = [*shown, summary_focus(ask.focus)]
        return self.summarizer(shown)


class ExtractiveSummarizer:
    """``extractive_summary`` as a ``Summarizes``: no model, the previous summary rolled over
    (a value, not a note), the focus a note after the messages (the sections are read off
    the history; a note of ours is never read as the user's words)."""

    model_calls = False

    def summarize(self, ask: SummaryRequest) -> str:
        shown = ask.visible_messages()
        if ask.focus:
            shown = [*shown, summary_focus(ask.focus)]
        found = facts(shown, ask.readings)
        return extractive_summary(shown, ask.request, previous=ask.previous, found=found)


def adapt(summarizer: Summarizer) -> Summarizes:
    """``summarizer`` as a ``Summarizes``: itself if it has ``summarize``; our
    ``extractive_summary`` function as ``ExtractiveSummarizer``; any other callable as a
    ``CallableSummarizer``. ``ConfigError`` for anything else."""
    if isinstance(summarizer, Summarizes):
        return summarizer
    if summarizer is extractive_summary:
        return ExtractiveSummarizer()
    if callable(summarizer):
        return CallableSummarizer(summarizer)
    raise ConfigError(
        f"summarizer: expected a callable summarizer(messages) -> str or an object with "
        f"summarize(request), got {type(summarizer).__name__}"
    )


def is_model_summarizer(summarizer: Summarizes) -> bool:
    """Whether ``summarizer`` stands for a model call: any summarizer but one that says
    otherwise with an attribute ``model_calls = False`` (the extractive one, a fast local
    one). Summaries are made ahead of need by default for these only
    (``SessionPolicy.summarize_ahead``): the extractive summary is fast, made at the trigger."""
    return getattr(summarizer, "model_calls", True) is not False


def text_of(answer: SummaryResult | str) -> str:
    """The text of a summarizer's answer: a ``SummaryResult``'s, else the answer itself (a
    callable's return, checked by whoever reads it)."""
    return answer.text if isinstance(answer, SummaryResult) else answer


def for_summarizer(message: Any) -> Any:
    """``message`` as a summarizer may send it to a model: without the format converters'
    bookkeeping (``FORMAT_META``), each passthrough block (an item with no canonical form,
    such as encrypted reasoning) a text block of its JSON, opaque ciphertext left out. The
    same object when there is nothing to take out (every Anthropic history)."""
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    visible = model_visible(content)
    has_passthrough = isinstance(visible, list) and any(
        isinstance(b, dict) and b.get("type") == PASSTHROUGH for b in visible
    )
    if visible is content and FORMAT_META not in message and not has_passthrough:
        return message
    if has_passthrough:
        visible = [_passthrough_text(b) for b in visible]
    out = {k: v for k, v in message.items() if k != FORMAT_META}
    out["content"] = visible
    return out


def _passthrough_text(block: Any) -> Any:
    if not (isinstance(block, dict) and block.get("type") == PASSTHROUGH):
        return block
    item = block.get("item", block.get("part"))
    if isinstance(item, dict):
        item = {k: v for k, v in item.items() if k != "encrypted_content"}
    return {"type": "text", "text": to_json(item)}


__all__ = [
    "CallableSummarizer",
    "ExtractiveSummarizer",
    "Summarizer",
    "Summarizes",
    "SummaryRequest",
    "SummaryResult",
    "adapt",
    "for_summarizer",
    "is_model_summarizer",
    "text_of",
]
