"""Compaction inside one ``Runner.run`` of the OpenAI Agents SDK: every model call, and a
refusal for length recovered.

    result = await Runner.run(agent, task, session=session, run_config=session.run_config())

The runner keeps a run's items in memory and calls the model once per turn; a run of many
tool calls outgrows the window long before the session is read again. ``run_config()``
returns a ``RunConfig`` whose ``call_model_input_filter`` (the SDK's hook "to stay within a
token limit", run immediately before each model call) sends the compactor's view of the
items instead: the same conversion as ``CompactingSession.get_items`` (reasoning and other
items passed through whole, a call and its output together), the agent's instructions and
function tool schemas counted into the budget. The runner's own items, and what it stores in
the session, are never changed: only the input of that call is.

A refusal for length (``is_context_overflow``: ``BadRequestError`` with
``context_length_exceeded`` and the other wordings) is recovered through the SDK's own retry
machinery: the config's ``model_settings.retry`` carries a policy that, on such a refusal,
compacts reactively, puts the smaller view in the input the runner replays, and retries once
(``max_retries=1``, no delay). Any other error goes to the caller's own ``retry`` policy when
``run_config(model_settings=ModelSettings(retry=...))`` gave one, else propagates. The
config's ``model_settings`` override the agent's field by field, as the SDK merges them.
``Runner.run_streamed`` takes the same config: its streamed model call retries through the
same policy and reads the replayed input afresh at each attempt (SDK 0.24,
``stream_response_with_retry``), so a refusal before the first event is recovered the same.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any

from ..compactor import Compactor
from ..formats import openai_responses
from ..messages import Message
from ..providers.errors import is_context_overflow
from ..telemetry import integrations_log


@dataclass
class _Call:
    """The input the filter returned for the call in flight, and what it was made from."""

    data: Any
    messages: list[Message]
    system: list[Any]
    request: str
    retried: bool = False


class RunCompaction:
    """The filter and the retry policy of one compactor's runs (``run_config``)."""

    def __init__(self, compactor: Compactor, latest_request: Any) -> None:
        self.compactor = compactor
        self._latest_request = latest_request
        self._call: _Call | None = None
        self._user_policy: Any = None

    async def filter(self, data: Any) -> Any:
        """``call_model_input_filter``: the compactor's view of this call's input."""
        from agents.run_config import ModelInputData

        model_data = data.model_data
        items = list(model_data.input)
        self.compactor.set_request(model_data.instructions, _tool_schemas(data.agent))
        if not items:
            self._call = None
            return model_data
        system, messages = openai_responses.to_canonical(items)
        request = self._latest_request(messages)
        view = await self.compactor.aprepare(messages, request)
        out = ModelInputData(
            input=openai_responses.from_canonical(view, system),  # type: ignore[arg-type, unused-ignore]
            instructions=model_data.instructions,
        )
        self._call = _Call(out, messages, system, request)
        return out

    async def retry(self, context: Any) -> Any:
        """The retry policy: a refusal for length compacted and retried once (see above)."""
        from agents.retry import RetryDecision

        call = self._call
        if is_context_overflow(context.error) and call is not None and not call.retried:
            call.retried = True
            integrations_log.debug(
                "agents run refused for length, compacting once: %s", context.error
            )
            view = await self.compactor.areactive_compact(call.messages, call.request)
            # The runner replays ``filtered.input`` of the object the filter returned.
            call.data.input = openai_responses.from_canonical(view, call.system)
            return RetryDecision(retry=True, delay=0.0, reason="compacted after a refusal")
        if self._user_policy is None:
            return RetryDecision(retry=False)
        decision = self._user_policy(context)
        return await decision if inspect.isawaitable(decision) else decision

    def run_config(self, **kwargs: Any) -> Any:
        from agents import ModelSettings, RunConfig
        from agents.retry import ModelRetrySettings

        settings = kwargs.pop("model_settings", None) or ModelSettings()
        retry = settings.retry or ModelRetrySettings()
        self._user_policy = retry.policy
        retry = dataclasses.replace(
            retry, max_retries=max(1, retry.max_retries or 0), policy=self.retry
        )
        return RunConfig(
            call_model_input_filter=self.filter,
            model_settings=dataclasses.replace(settings, retry=retry),
            **kwargs,
        )


def _tool_schemas(agent: Any) -> list[Any]:
    """The function tools' schemas as the model sees them (other tools are the API's own)."""
    out = []
    for tool in getattr(agent, "tools", None) or []:
        schema = getattr(tool, "params_json_schema", None)
        if schema is not None:
            out.append({"name": tool.name, "description": tool.description, "parameters": schema})
    return out


__all__ = ["RunCompaction"]
