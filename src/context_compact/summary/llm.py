"""A summary from a model (``LLMSummarizer``), and the seed's summary input (S-4.2).

``LLMSummarizer(provider)`` implements ``Summarizes`` (``contract.py``) on any Provider.
Asked for the structured form (the default engine): the structured prompt
(``prompts.structured_summary_prompt``: goal and constraints, decisions, files, commands,
errors and fixes, tried and failed, identifiers, open questions, next step) over a readable
transcript (``transcript.py``), the previous summary passed in to be updated, the request's
budget as ``max_tokens``. Asked for the seed form (``SummaryRequest(form="seed")``, the seed
preset): S-4.2's JSON input and S-4.3's prompt, exactly. With ``continue_cache=True`` and the
agent's request as sent: that request, the instruction as one more user message.

``summary_input(messages, limit)`` (S-4.2) is the seed's; the extractive summary needs no
model (``extract.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..sizing import to_json
from .contract import SummaryRequest, SummaryResult
from .prompts import (
    SUMMARY_OMISSION,
    SUMMARY_SYSTEM_PROMPT,
    structured_summary_prompt,
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
    """A summary from a model, on any Provider: ``summarize(SummaryRequest) -> SummaryResult``.

    ``max_tokens`` is the summary's length budget when the request gives none (the session
    engine gives its policy's ``summary_max_tokens``; the seed form always uses this one);
    ``input_limit`` the most characters of transcript sent; ``instructions`` a focus for
    every summary the request gives none for. An empty answer is returned as ``""``: the
    session engine counts it as a failure and falls back to the extractive summary (the seed
    form keeps S-4's ``(empty summary)``).

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

    def summarize(self, ask: SummaryRequest) -> SummaryResult:
        self.calls += 1
        focus = ask.focus or self.instructions
        if ask.form == "seed":
            return self._seed(ask.visible_messages(), focus)
        if self.continue_cache and ask.sent:
            return self._continuing(ask, focus)
        budget = ask.budget or self.max_tokens
        shown = transcript(
            ask.visible_messages(), self.input_limit, also=[ask.previous] if ask.previous else []
        )
        reply = self.provider.complete(
            system=summary_system_prompt(budget, focus, ask.prompt),
            messages=[
                {
                    "role": "user",
                    "content": summary_request(ask.previous, shown.text, shown.token),
                }
            ],
            tools=[],
            max_tokens=budget,
        )
        return SummaryResult(reply.text.strip(), usage_of(reply))

    def _seed(self, messages: list[Any], focus: str | None) -> SummaryResult:
        """S-4.3's call over S-4.2's input, the focus (``/compact focus``) after the prompt."""
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

    def _continuing(self, ask: SummaryRequest, focus: str | None) -> SummaryResult:
        """The summary asked at the end of the agent's own request (``continue_cache``)."""
        budget = ask.budget or self.max_tokens
        instruction = continuing_instruction(budget, focus, ask.prompt)
        reply = self.provider.complete(
            system=ask.system or "",
            messages=[*(ask.sent or []), {"role": "user", "content": instruction}],
            tools=list(ask.tools or []),
            max_tokens=budget,
        )
        return SummaryResult(reply.text.strip(), usage_of(reply))


__all__ = [
    "LLMSummarizer",
    "continuing_instruction",
    "summary_input",
    "summary_system_prompt",
    "usage_of",
]
