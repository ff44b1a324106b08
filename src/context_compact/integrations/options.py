"""What the framework adapters take besides a ``Compactor``: the policy's knobs by the peers'
names, and the framework's own model as the summarizer.

    CompactionMiddleware(model="claude-sonnet-5-5", trigger=("messages", 50),
                         keep=("fraction", 0.3), summary_model=ChatAnthropic(...),
                         exclude_tools=("memory",))

``compactor_from(...)`` builds the ``Compactor`` an adapter was not given: ``trigger`` and
``keep`` as LangChain's ``SummarizationMiddleware`` writes them (``("fraction", f)``,
``("tokens", n)``, ``("messages", n)`` for ``trigger``; a list of triggers fires on any),
every other ``SessionPolicy`` field by its own name (``exclude_tools``,
``keep_recent_tool_uses``, ``clear_placeholder``, ``summary_prompt``...), ``token_counter``
and ``should_compact`` as ``Compactor`` takes them, ``store`` (default: files under the
working directory) and ``summarizer`` or ``summary_model``.

``model_summarizer(complete)`` is an ``LLMSummarizer`` over any ``(system, text, max_tokens)
-> str`` call: each adapter wraps its framework's model in one (LangChain's
``chat_model_summarizer``, pydantic-ai's ``model_summarizer``), so summaries get our
structured prompt (or the policy's ``summary_prompt``) and the previous summary to update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..compactor import Compactor
from ..policy import Policy
from ..providers.base import ModelReply
from ..store.base import Store
from ..summary.llm import LLMSummarizer

Complete = Callable[[str, str, int], str]


class _CompleteProvider:
    """The ``Provider`` face ``LLMSummarizer`` needs, over one ``complete`` callable."""

    def __init__(self, complete: Complete) -> None:
        self._complete = complete

    def complete(
        self, *, system: str, messages: list[Any], tools: list[Any], max_tokens: int
    ) -> ModelReply:
        text = "\n\n".join(str(m.get("content", "")) for m in messages)
        answer = self._complete(system, text, max_tokens)
        return ModelReply({"role": "assistant", "content": [{"type": "text", "text": answer}]})


def model_summarizer(complete: Complete, **options: Any) -> LLMSummarizer:
    """An ``LLMSummarizer`` asking ``complete(system, text, max_tokens)`` for each summary."""
    return LLMSummarizer(_CompleteProvider(complete), **options)  # type: ignore[arg-type]


_TRIGGERS = ("fraction", "tokens", "messages")


def policy_fields(
    trigger: Any = None, keep: Any = None, context_limit: int | None = None, **fields: Any
) -> dict[str, Any]:
    """``Policy.default`` keywords for LangChain-style ``trigger`` and ``keep``."""
    out = dict(fields)
    if context_limit is not None:
        out["context_limit"] = context_limit
    limit = out.get("context_limit") or Policy.default(model=out.get("model")).context_limit
    triggers = trigger if isinstance(trigger, list) else [trigger] if trigger else []
    for kind, value in triggers:
        if kind not in _TRIGGERS:
            raise ValueError(f"trigger kind {kind!r}: expected one of {', '.join(_TRIGGERS)}")
        if kind == "messages":
            out["trigger_messages"] = int(value)
        else:
            out["high_water"] = float(value) if kind == "fraction" else value / limit
    if keep is not None:
        kind, value = keep
        if kind not in ("fraction", "tokens"):
            raise ValueError(
                f"keep=({kind!r}, ...): the view keeps a share of the window "
                "(('fraction', f) or ('tokens', n)); whole turns: keep_recent_turns=N"
            )
        out["low_water"] = float(value) if kind == "fraction" else value / limit
    return out


def compactor_from(
    *,
    store: Store | None = None,
    summarizer: Any = None,
    summary_model: Any = None,
    to_summarizer: Callable[[Any], Any] | None = None,
    token_counter: Callable[[str], int] | None = None,
    should_compact: Callable[..., bool | None] | None = None,
    session: str | None = None,
    **policy: Any,
) -> Compactor:
    """A ``Compactor`` from an adapter's keyword arguments (see the module docstring)."""
    if summary_model is not None:
        if summarizer is not None:
            raise ValueError("give summarizer= or summary_model=, not both")
        if to_summarizer is None:
            raise ValueError("this adapter takes no summary_model; pass summarizer=")
        summarizer = to_summarizer(summary_model)
    return Compactor(
        Policy.default(**policy_fields(**policy)),
        store,
        summarizer,
        session=session,
        token_counter=token_counter,
        should_compact=should_compact,
    )


def given_or_built(
    compactor: Compactor | None, to_summarizer: Callable[[Any], Any], options: dict[str, Any]
) -> Compactor:
    """An adapter's ``compactor`` argument, or one built from its keyword ``options``."""
    if compactor is None:
        return compactor_from(to_summarizer=to_summarizer, **options)
    if options:
        raise TypeError(f"give a Compactor or its settings, not both: {', '.join(sorted(options))}")
    return compactor


__all__ = ["compactor_from", "given_or_built", "model_summarizer", "policy_fields"]
