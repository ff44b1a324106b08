"""A scripted model for the CLI tests: agent calls get the scripted answers in order, summary
calls (recognized by the summary prompt) get a short summary and are kept to look at."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from context_compact.summary.prompts import SUMMARY_SYSTEM_PROMPT, structured_summary_prompt
from stub_api import Reply, StubAPI

# What the CLI reads from the environment; each CLI test starts without them.
SETTINGS = (
    "MODEL_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


def is_summary_request(body: Any) -> bool:
    """Whether a request is the compactor's summary call (by its prompt), not the agent's."""
    sent = json.dumps(body)
    return SUMMARY_SYSTEM_PROMPT[:40] in sent or structured_summary_prompt(1)[:40] in sent


class Model:
    def __init__(self, *answers: Any) -> None:
        self.answers = deque(answers)
        self.summary_requests: list[Any] = []

    def __call__(self, body: Any) -> Any:
        if is_summary_request(body):
            self.summary_requests.append(body)
            return Reply(text="Read notes.txt; nothing else done.")
        return self.answers.popleft()


def serve(stub: StubAPI, *answers: Any) -> Model:
    """Script ``stub`` with ``answers``, leaving room for the summary calls among them."""
    model = Model(*answers)
    stub.enqueue(*[model] * (len(answers) + 6))
    return model
