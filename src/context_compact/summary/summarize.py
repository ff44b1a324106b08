"""Summaries: the input the summarizer sees, the message that replaces history, the summarizers.

A summarizer is an object with ``summarize(SummaryRequest) -> SummaryResult`` (the typed
protocol, ``Summarizes``: one request object holding the messages, the previous summary, the
focus and the budget; the answer its text and the usage of its call, or the text alone), or
any callable ``summarizer(messages) -> str``. A callable is adapted once
(``adapt``): those that declare the keywords ``previous`` (the summary to update: summaries
roll instead of re-summarizing their own summary), ``instructions`` (``/compact focus on
X``), ``max_tokens`` (the length budget), ``request`` (the active request) or ``form``
(``"seed"`` for the seed preset's exact call) get them; any other callable sees the previous
summary and the focus as notes among the messages.

* ``LLMSummarizer(provider)`` asks a model. Under the default engine: the structured prompt
  (``prompts.structured_summary_prompt``: goal and constraints, decisions, files, commands,
  errors and fixes, tried and failed, identifiers, open questions, next step) over a readable
  transcript (``transcript.py``), the previous summary passed in to be updated. Under the
  seed preset (``form="seed"``): S-4.2's JSON input and S-4.3's prompt, exactly.
* ``extractive_summary(messages, request)`` needs no model: the same sections read off the
  history (``extract.py``). It is the default summarizer, and the default engine's fallback
  when the model summarizer fails.
* ``summary_input(messages, limit)`` (S-4.2) and ``summary_message(...)`` (S-4.4) are the
  seed's; ``summary_score`` (``extract.py``) scores any summary against its source.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..markers import summary_message
from ..messages import FORMAT_META, PASSTHROUGH, model_visible
from ..sizing import to_json
from .extract import SummaryScore, extractive_summary, summary_score
from .prompts import (
    SUMMARY_OMISSION,
    SUMMARY_SYSTEM_PROMPT,
    previous_summary_note,
    structured_summary_prompt,
    summary_focus,
    summary_request,
)
from .transcript import transcript

if TYPE_CHECKING:
    from ..providers.base import Provider


def summary_input(messages: list[Any], limit: int) -> str:
    """S-4.2: the serialized history, cut to its head quarter and tail three quarters."""
    text = to_json(messages)
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return text[:head] + SUMMARY_OMISSION + text[len(text) - tail :]


def _keywords(summarizer: Callable[..., Any]) -> set[str]:
    try:
        parameters = inspect.signature(summarizer).parameters
    except (TypeError, ValueError):
        return set()
    return {
        name
        for name, p in parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


@dataclass(frozen=True)
class SummaryRequest:
    """One summary asked of a summarizer: the messages it replaces (as a model may see them),
    the previous summary to update, the caller's focus (``/compact focus on X``), the length
    budget in tokens, the active request and a replacement system prompt; and, when the
    engine knows them, the agent's own request up to the summary's cut: the view's messages
    as sent (``sent``, the previous summary among them), its system prompt and tools, for a
    summarizer that continues the agent's cached prefix (``LLMSummarizer(continue_cache=
    True)``)."""

    messages: list[Any]
    previous: str | None = None
    focus: str | None = None
    budget: int | None = None
    request: str | None = None
    prompt: str | None = None
    sent: list[Any] | None = None
    system: str | None = None
    tools: list[Any] | None = None


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
    """The typed summarizer: one request object in, the summary out (a ``SummaryResult``,
    or its text alone)."""

    def summarize(self, ask: SummaryRequest) -> SummaryResult | str: ...


class Adapted:
    """A summarizer callable with its calling convention read once (``adapt``): keywords it
    declares get their values, the rest ride among the messages as notes (the previous
    summary first, the focus last)."""

    def __init__(self, summarizer: Callable[..., Any]) -> None:
        self.summarizer = summarizer
        self.takes = _keywords(summarizer)

    def summarize(self, ask: SummaryRequest) -> Any:
        return self.call(ask)

    def call(self, ask: SummaryRequest, form: str | None = None) -> Any:
        takes = self.takes
        kwargs: dict[str, Any] = {}
        if ask.request is not None and "request" in takes:
            kwargs["request"] = ask.request
        shown = [for_summarizer(m) for m in ask.messages]
        if ask.previous is not None:
            if "previous" in takes:
                kwargs["previous"] = ask.previous
            else:
                shown = [previous_summary_note(ask.previous), *shown]
        if ask.focus:
            if "instructions" in takes:
                kwargs["instructions"] = ask.focus
            else:
                shown = [*shown, summary_focus(ask.focus)]
        if ask.budget is not None and "max_tokens" in takes:
            kwargs["max_tokens"] = ask.budget
        if form is not None and "form" in takes:
            kwargs["form"] = form
        if ask.prompt is not None and "prompt" in takes:
            kwargs["prompt"] = ask.prompt
        return self.summarizer(shown, **kwargs)


def is_model_summarizer(summarizer: Any) -> bool:
    """Whether ``summarizer`` stands for a model call: any summarizer but the extractive
    one, unless it says otherwise with an attribute ``model_calls = False`` (a fast, local
    summarizer). Summaries are made ahead of need by default for these only
    (``SessionPolicy.summarize_ahead``): the extractive summary is fast, made at the trigger."""
    inner = getattr(summarizer, "summarizer", summarizer)  # through ``Adapted``
    if inner is extractive_summary:
        return False
    return getattr(inner, "model_calls", True) is not False


def adapt(summarizer: Callable[..., Any] | Summarizes) -> Summarizes:
    """``summarizer`` as a typed one: itself if it has ``summarize(SummaryRequest)``
    (``LLMSummarizer``), else the callable adapted once."""
    if isinstance(summarizer, (Adapted, LLMSummarizer)):
        return summarizer
    if isinstance(summarizer, Summarizes) and not callable(summarizer):
        return summarizer
    return Adapted(summarizer)


def call_summarizer(
    summarizer: Callable[..., Any],
    messages: list[Any],
    *,
    previous: str | None = None,
    instructions: str | None = None,
    max_tokens: int | None = None,
    form: str | None = None,
    request: str | None = None,
    prompt: str | None = None,
) -> Any:
    """Call ``summarizer`` with what it declares it takes; the rest as notes among the
    messages (``Adapted``). For one call; an engine adapts its summarizer once."""
    ask = SummaryRequest(messages, previous, instructions, max_tokens, request, prompt)
    return Adapted(summarizer).call(ask, form)


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


def summary_system_prompt(budget: int, focus: str | None, prompt: str | None = None) -> str:
    """The system prompt of a model summary: ours (``prompts.structured_summary_prompt``) or
    the policy's replacement (``summary_prompt``), the focus added to either."""
    if prompt is None:
        return structured_summary_prompt(budget, focus)
    return prompt if not focus else f"{prompt}\n\nFocus the summary on: {focus}"


def continuing_instruction(budget: int, focus: str | None, prompt: str | None = None) -> str:
    """The last user message of a summary request that continues the agent's own: stop the
    task, call no tool, and write the summary of everything above (the previous summary, in
    the conversation, updated)."""
    return (
        "[Context compaction: stop working on the task and do not call any tool. The older "
        "part of this conversation is being removed from your context; answer only with the "
        "summary you will continue from.]\n\n" + summary_system_prompt(budget, focus, prompt)
    )


def focused(summarizer: Callable[..., str], instructions: str | None) -> Callable[[list[Any]], str]:
    """``summarizer`` asked to focus on ``instructions`` (``/compact focus on X``): given the
    ``instructions`` keyword if it takes one, else one more user message after the history,
    ``[Summary focus: ...]``."""
    if not instructions:
        return summarizer
    adapted = Adapted(summarizer)
    return lambda messages: adapted.call(SummaryRequest(messages, focus=instructions))


def seed_form(summarizer: Callable[..., str]) -> Callable[..., str]:
    """``summarizer`` as the seed preset calls it (the seed's own convention, apart from the
    typed one): ``form="seed"`` when it takes that keyword (``LLMSummarizer`` then makes
    S-4.2/S-4.3's exact call)."""
    if isinstance(summarizer, Adapted):
        summarizer = summarizer.summarizer
    adapted = Adapted(summarizer)
    if "form" not in adapted.takes:
        return summarizer

    def call(messages: list[Any], instructions: str | None = None) -> str:
        return str(adapted.call(SummaryRequest(messages, focus=instructions), "seed"))

    return call


def text_of(answer: Any) -> Any:
    """The text of a summarizer's answer: a ``SummaryResult``'s, else the answer itself (a
    callable's return, checked by whoever reads it)."""
    return answer.text if isinstance(answer, SummaryResult) else answer


def usage_of(reply: Any) -> dict[str, int] | None:
    """The usage of ``reply.usage`` (a ``providers.Usage``) as ``SummaryResult.usage``; None
    when it is unknown."""
    usage = getattr(reply, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0)
    output = getattr(usage, "output_tokens", 0)
    if not prompt and not output:
        return None
    cached = getattr(usage, "cache_read_tokens", 0)
    return {"input_tokens": prompt, "cached_tokens": cached, "output_tokens": output}


class LLMSummarizer:
    """A summary from a model, on any Provider: a callable ``(messages) -> str``.

    ``max_tokens`` is the summary's length budget (the session engine passes its policy's
    ``summary_max_tokens``); ``input_limit`` the most characters of transcript sent. An empty
    answer is returned as ``""``: the session engine counts it as a failure and falls back to
    the extractive summary (the seed form keeps S-4's ``(empty summary)``).

    ``continue_cache=True``, when ``provider`` is the agent's own: the summary request is the
    agent's request up to the summary's cut (its system prompt, tools and messages as sent,
    which the engine passes in ``SummaryRequest.sent``) with the instruction as one more user
    message at the end, so its input is read from the prompt cache the agent's requests
    wrote. Without ``sent`` (the seed, a summary made ahead) the transcript call is made.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        input_limit: int = 80_000,
        max_tokens: int = 2_000,
        instructions: str | None = None,
        continue_cache: bool = False,
    ) -> None:
        self.provider = provider
        self.continue_cache = continue_cache
        self.input_limit = input_limit
        self.max_tokens = max_tokens
        self.instructions = instructions
        self.calls = 0

    model_calls = True
    """A model call per summary: made ahead of need by default (``is_model_summarizer``)."""

    def __call__(
        self,
        messages: list[Any],
        instructions: str | None = None,
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
        form: str = "structured",
        prompt: str | None = None,
    ) -> str:
        return self._made(messages, instructions, previous, max_tokens, form, prompt).text

    def _made(
        self,
        messages: list[Any],
        instructions: str | None,
        previous: str | None,
        max_tokens: int | None,
        form: str,
        prompt: str | None,
    ) -> SummaryResult:
        self.calls += 1
        focus = instructions or self.instructions
        if form == "seed":
            system = SUMMARY_SYSTEM_PROMPT
            if focus:
                system += f" The user asks the summary to focus on: {focus}"
            reply = self.provider.complete(
                system=system,
                messages=[{"role": "user", "content": summary_input(messages, self.input_limit)}],
                tools=[],
                max_tokens=self.max_tokens,
            )
            return SummaryResult(reply.text.strip() or "(empty summary)", usage_of(reply))
        budget = max_tokens or self.max_tokens
        shown = transcript(messages, self.input_limit, also=[previous] if previous else [])
        reply = self.provider.complete(
            system=summary_system_prompt(budget, focus, prompt),
            messages=[
                {"role": "user", "content": summary_request(previous, shown.text, shown.token)}
            ],
            tools=[],
            max_tokens=budget,
        )
        return SummaryResult(reply.text.strip(), usage_of(reply))

    def summarize(self, ask: SummaryRequest) -> SummaryResult:
        """The typed call: notes for what ``__call__`` takes as keywords need none."""
        if self.continue_cache and ask.sent:
            return self.continuing(ask)
        return self._made(
            [for_summarizer(m) for m in ask.messages],
            ask.focus,
            ask.previous,
            ask.budget,
            "structured",
            ask.prompt,
        )

    def continuing(self, ask: SummaryRequest) -> SummaryResult:
        """The summary asked at the end of the agent's own request (``continue_cache``)."""
        self.calls += 1
        budget = ask.budget or self.max_tokens
        instruction = continuing_instruction(budget, ask.focus or self.instructions, ask.prompt)
        reply = self.provider.complete(
            system=ask.system or "",
            messages=[*(ask.sent or []), {"role": "user", "content": instruction}],
            tools=list(ask.tools or []),
            max_tokens=budget,
        )
        return SummaryResult(reply.text.strip(), usage_of(reply))


__all__ = [
    "Adapted",
    "LLMSummarizer",
    "Summarizes",
    "SummaryRequest",
    "SummaryResult",
    "SummaryScore",
    "adapt",
    "call_summarizer",
    "continuing_instruction",
    "extractive_summary",
    "focused",
    "is_model_summarizer",
    "seed_form",
    "summary_input",
    "summary_message",
    "summary_score",
    "text_of",
    "usage_of",
]
