"""Probes answered by a model: ``bench --probes --answerer URL``.

For each probe, at the call where its atom left the view, ``Asking.ask`` sends a model on an
OpenAI-compatible server (``providers.openai_chat``) the view that call returned, the probe's
question as the last user message, and two tools: ``read_file`` on the store's files and
``recall`` on the session's log (offered only under an engine that keeps one). Up to
``MAX_TOOL_CALLS`` tool calls are run; the reply that follows them is the answer. It is scored
as ``probes.judge`` scores a view: right when the probe's exact answer is in it, whitespace
runs as one (``facts.squash``).

A view larger than the model's window loses its oldest messages first (``fit``: the
window the server states, else the bench's budget; tool calls stay paired with their
results). So beside each answer the counts keep the model-free verdict at that same call
(view / recall / lost) and whether the answer was in the prompt as sent (``in_prompt``).

Invariants: the engine's view is read, never changed (the prompt is built from copies); a
probe is asked once, at the first call it is judged, at most ``max_probes`` per strategy and
workload, oldest first; a request that fails (timeout, server down, refusal, a prompt over
the window twice after cutting it) is counted as an error of its probe, never raised; after
``FAILURES_IN_A_ROW`` requests in a row that found no server, nothing more is asked in the
run (``Answerer.gave_up`` says why).
"""

from __future__ import annotations

import copy
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

from context_compact.agent.tools import RECALL_SCHEMA, RECALL_TOOL_NAME, TOOL_SCHEMAS
from context_compact.messages import (
    Block,
    Message,
    blocks,
    is_result,
    is_text,
    is_tool_use,
)
from context_compact.providers.errors import is_context_overflow, overflow_figures
from context_compact.sizing import TokenCounter
from context_compact.sizing.estimate import text_tokens
from context_compact.summary.facts import squash

from .answer_counts import AnswerCounts
from .probes import Probe, Verdict, view_text

MAX_TOOL_CALLS = 3
REPLY_TOKENS = 96
FAILURES_IN_A_ROW = 3
SAFETY = 0.8
"""Share of the window the prompt's estimate may fill (the model's tokenizer is not ours)."""
RETRIES = 2
"""Sends of a prompt cut smaller after the server says it is over its window."""
PLACEHOLDER_KEY = "sk-local-no-key"
READ_FILE_NAME = "read_file"
READ_FILE_SCHEMA = next(t for t in TOOL_SCHEMAS if t["name"] == READ_FILE_NAME)
"""The agent's own ``read_file``: ``offset`` is the first line (1-based), ``limit`` lines."""
SYSTEM = (
    "You are the coding agent whose work is shown in this conversation. Part of it was moved "
    "out to save room: into files named in the text, and into a log you can search. Answer "
    "the last question with the exact text as it appeared (a line of output, a path, a "
    "sentence), nothing else. If it is not in the conversation, use read_file on a path the "
    "conversation names, or recall to search the log, then answer."
)


@dataclass(frozen=True)
class AnswererConfig:
    """Where the model is and how much to ask it (``BenchConfig.answerer``)."""

    url: str
    model: str | None = None
    """None: the first model the server lists, else ``"local"``."""
    max_probes: int = 10
    """Probes asked per strategy and workload (oldest first)."""
    timeout: float = 300.0
    """Seconds one request may take."""


def api_url(url: str) -> str:
    """``url`` as the OpenAI SDK's ``base_url``: a bare server address gets ``/v1``."""
    url = url.strip().rstrip("/")
    return url + "/v1" if urlsplit(url).path in ("", "/") else url


def server_models(url: str, timeout: float = 5.0) -> list[str]:
    """The model ids ``GET {url}/models`` lists ([] when the server has no such list).
    Raises ``OSError`` (or ``ValueError`` for a malformed URL) when nothing answers."""
    request = urllib.request.Request(f"{api_url(url)}/models")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            data = json.loads(answer.read().decode("utf-8", errors="replace") or "{}")
    except urllib.error.HTTPError:
        return []  # it answered: no list of models
    except json.JSONDecodeError:
        return []
    listed = data.get("data") if isinstance(data, dict) else None
    return [str(m["id"]) for m in listed or [] if isinstance(m, dict) and m.get("id")]


def error_kind(error: BaseException) -> str:
    """What went wrong with one request, in a word the report counts by."""
    if is_context_overflow(error):
        return "overflow"
    names = {cls.__name__ for cls in type(error).__mro__}
    if "APITimeoutError" in names or isinstance(error, TimeoutError):
        return "timeout"
    if "APIConnectionError" in names or isinstance(error, ConnectionError):
        return "down"
    if "APIStatusError" in names:
        return f"http {getattr(error, 'status_code', '?')}"
    return type(error).__name__


def paired(messages: list[Message]) -> list[Message]:
    """``messages`` without a tool call whose result is not among them or a result whose
    call is not (what an API refuses), and without the messages that leaves empty."""
    uses = {str(b.get("id")) for m in messages for b in blocks(m) if is_tool_use(b)}
    results = {str(b.get("tool_use_id")) for m in messages for b in blocks(m) if is_result(b)}
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            kept = [
                b
                for b in content
                if not (is_tool_use(b) and str(b.get("id")) not in results)
                and not (is_result(b) and str(b.get("tool_use_id")) not in uses)
            ]
            if not kept:
                continue
            if len(kept) < len(content):
                message = {**message, "content": kept}
        out.append(message)
    return out


def fit(view: list[Any], room: int, counter: TokenCounter) -> tuple[list[Message], bool]:
    """The newest messages of ``view`` whose estimate fits ``room`` tokens, tool calls paired,
    as copies; and whether anything was left out."""
    kept: list[Message] = []
    used = 0
    for message in reversed(view):
        if not isinstance(message, dict):
            continue
        message = cast(Message, message)  # a view: canonical dicts
        size = counter.message(message)
        if used + size > room:
            break
        kept.append(message)
        used += size
    kept.reverse()
    out = paired(copy.deepcopy(kept))
    return out, len(out) < len(view) or out != kept


def with_question(messages: list[Message], question: str) -> list[Message]:
    """``messages`` with ``question`` as the last user message (joined to a last user
    message, so user and assistant still alternate)."""
    if messages and messages[-1].get("role") == "user":
        content = messages[-1].get("content")
        parts = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        )
        return [
            *messages[:-1],
            {"role": "user", "content": [*parts, {"type": "text", "text": question}]},
        ]
    return [*messages, {"role": "user", "content": question}]


def smaller(refusal: BaseException, sent: int) -> int:
    """Tokens (our estimate) a prompt may have after ``sent`` was refused as over the window:
    shrunk by what the refusal states (its count against its window), else by 40%."""
    figures = overflow_figures(refusal)
    scale = 0.6
    if figures.window and figures.prompt_tokens:
        scale = min(scale, 0.9 * figures.window / figures.prompt_tokens)
    return int(sent * scale)


def question_text(probe: Probe) -> str:
    return (
        f"Question about the work so far: {probe.question} Reply with the exact text as it "
        "appeared, nothing else."
    )


def reply_text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in blocks(message) if is_text(b))


class Answerer:
    """The model of one bench run: its provider, its window, whether it still answers."""

    def __init__(self, config: AnswererConfig, provider: Any = None) -> None:
        self.config = config
        self.url = api_url(config.url)
        if provider is None:
            from context_compact.providers.openai_chat import OpenAIChatProvider

            model = config.model
            if model is None:
                try:
                    model = next(iter(server_models(self.url)), None)
                except (OSError, ValueError):
                    model = None
            provider = OpenAIChatProvider(
                model or "local",
                # A local server needs no key; a hosted API reads OPENAI_API_KEY.
                api_key=None if os.environ.get("OPENAI_API_KEY") else PLACEHOLDER_KEY,
                base_url=self.url,
                timeout=config.timeout,
                max_retries=0,
            )
        self.provider = provider
        self.model = str(getattr(provider, "model", config.model or "local"))
        found = provider.context_window() if hasattr(provider, "context_window") else None
        self.window: int | None = found.tokens if found is not None else None
        self.window_source = found.source if found is not None else None
        self.failures = 0
        self.gave_up: str | None = None
        self.requests = 0

    def session(self, engine: Any, store: Any, budget: int) -> Asking:
        """The asking of one strategy on one workload (``budget``: its window when the
        server states none)."""
        return Asking(self, engine, store, self.window or budget)

    def send(self, messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        self.requests += 1
        try:
            reply = self.provider.complete(
                system=SYSTEM, messages=messages, tools=tools, max_tokens=REPLY_TOKENS
            )
        except Exception as error:
            if error_kind(error) in ("down", "timeout"):
                self.failures += 1
                if self.failures >= FAILURES_IN_A_ROW:
                    self.gave_up = (
                        f"{self.failures} requests in a row failed ({error_kind(error)}): "
                        "nothing more asked"
                    )
            raise
        self.failures = 0
        return reply

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "model": self.model,
            "window": self.window,
            "window_source": self.window_source,
            "requests": self.requests,
            "gave_up": self.gave_up,
        }

    def close(self) -> None:
        close = getattr(self.provider, "close", None)
        if close is not None:
            close()


@dataclass
class Asking:
    """The questions of one strategy on one workload; ``ask`` is ``ProbeTracker``'s hook."""

    answerer: Answerer
    engine: Any
    store: Any
    window: int
    counts: AnswerCounts = field(default_factory=AnswerCounts)
    asked: set[tuple[str, str, str | None]] = field(default_factory=set)
    counter: TokenCounter = field(default_factory=TokenCounter)

    @property
    def recalls(self) -> bool:
        return bool(getattr(self.engine, "keeps_log", False))

    def ask(self, probe: Probe, verdict: Verdict, view: list[Any]) -> None:
        if probe.ident in self.asked or self.answerer.gave_up is not None:
            return
        if len(self.asked) >= self.answerer.config.max_probes:
            return
        self.asked.add(probe.ident)
        tools = [READ_FILE_SCHEMA] + ([RECALL_SCHEMA] if self.recalls else [])
        question = question_text(probe)
        overhead = text_tokens(SYSTEM) + text_tokens(json.dumps(tools)) + REPLY_TOKENS
        limit = int(self.window * SAFETY) - overhead - text_tokens(question)
        loop: list[Message] = []
        calls = tries = 0
        first: tuple[list[Message], bool] = ([], False)
        answer = error = None
        while answer is None and error is None:
            room = limit - sum(map(self.counter.message, loop))
            shown, cut = fit(view, max(0, room), self.counter)
            prompt = with_question(shown, question)
            offer = tools if calls < MAX_TOOL_CALLS else []
            try:
                reply = self.answerer.send([*prompt, *loop], offer)
            except Exception as failure:
                error = error_kind(failure)
                if error == "overflow" and tries < RETRIES:
                    tries, error = tries + 1, None
                    limit = smaller(failure, sum(map(self.counter.message, [*shown, *loop])))
                    self.window = min(self.window, overflow_figures(failure).window or self.window)
                continue
            if not loop:
                first = (prompt, cut)
            if reply.stop_reason == "refusal":
                error = "refused"
                continue
            uses = [b for b in blocks(reply.message) if is_tool_use(b)]
            if not uses or not offer:
                answer = reply_text(reply.message)
                continue
            results: list[Block] = []
            for use in uses:
                calls += 1
                text = self.tool(use) if calls <= MAX_TOOL_CALLS else "Error: no more tool calls"
                result = {"type": "tool_result", "tool_use_id": use.get("id"), "content": text}
                results.append(cast(Block, result))  # the model's id, as it gave it
            loop += [reply.message, {"role": "user", "content": results}]
        self.counts.record(
            probe,
            verdict.outcome,
            answer=answer,
            error=error,
            in_prompt=squash(probe.answer) in view_text(first[0]),
            cut=first[1],
            tool_calls=min(calls, MAX_TOOL_CALLS),
        )

    def page_chars(self) -> int:
        """Characters of one tool answer: a sixth of the window, at about 3 a token."""
        return max(300, min(4_000, self.window // 2))

    def tool(self, use: Block) -> str:
        """One tool call's answer for the model; a bad call is an error text, never raised."""
        given = use.get("input")
        args: dict[str, Any] = given if isinstance(given, dict) else {}
        name = use.get("name")
        try:
            if name == RECALL_TOOL_NAME and self.recalls:
                query, offset = args.get("query"), args.get("offset", 0)
                if not isinstance(query, str) or not query.strip() or not isinstance(offset, int):
                    return "Error: recall takes query (a string) and an optional offset"
                return str(self.engine.recall(query, max(0, offset), self.page_chars()))
            if name == READ_FILE_NAME:
                return self.read_file(args)
        except Exception as failure:  # the model gets an answer for every call
            return f"Error: {type(failure).__name__}: {failure}"
        offered = "read_file, recall" if self.recalls else "read_file"
        return f"Error: no tool {name!r} here (tools: {offered})"

    def read_file(self, args: dict[str, Any]) -> str:
        """The store's file at ``path``, from line ``offset`` (1-based), at most ``limit``
        lines and ``page_chars`` characters, saying where to continue (as the agent's tool)."""
        path, offset, limit = args.get("path"), args.get("offset", 1), args.get("limit")
        if not isinstance(path, str) or not isinstance(offset, int) or offset < 1:
            return "Error: read_file takes path (a string), offset (a line, from 1) and limit"
        lines = self.store.read_text(path.strip()).splitlines()
        end = len(lines) if not isinstance(limit, int) or limit < 1 else offset - 1 + limit
        shown: list[str] = []
        used = 0
        for line in lines[offset - 1 : end]:
            if shown and used + len(line) + 1 > self.page_chars():
                break
            shown.append(line[: self.page_chars()])
            used += len(shown[-1]) + 1
        text = "\n".join(shown) or "(nothing at this offset)"
        after = offset - 1 + len(shown)
        if after < len(lines):
            text += f"\n... ({len(lines) - after} more lines; continue with offset={after + 1})"
        return text


__all__ = [
    "Answerer",
    "AnswererConfig",
    "Asking",
    "api_url",
    "error_kind",
    "fit",
    "paired",
    "server_models",
    "with_question",
]
