"""Asking the summarizer: one typed request, one reused worker, a timeout, a fallback, a cap.

The engine asks for a summary with ``SummaryCaller.text(messages, focus, previous,
budget)``. The caller's summarizer was adapted once (``summary.adapt``) and runs on one
worker thread reused from summary to summary, so a hung model call can time out
(``summary_timeout``) without blocking the engine. A worker whose call timed out may still
be running it: it is abandoned (its result ignored) and the next summary gets a new one.
The worker is a daemon thread of its own, not a ``concurrent.futures`` pool: the pools'
threads are joined when the interpreter exits, so one hung call abandoned long ago would
hold the process open until it returned; an abandoned daemon thread never does.

A summary may also be asked for ahead of need (``ahead``, ``session/ahead.py``): its call
is queued on the worker and the engine goes on. The answer is kept under the request's
content key (``request_key``: the messages, the previous summary, the focus, the budget and
the prompt), and ``text`` uses it only for a request with that very key, waiting for it if
it is not in yet (up to what is left of ``summary_timeout`` since it started): given the
same summarizer, an answer made ahead is the answer the call at the trigger would get. A
call of another key first abandons a pending one (its worker with it), so it never waits
behind it. Nothing made ahead is journaled until ``text`` hands it out.

Whatever goes wrong (an exception, a timeout, an empty or non-text answer) counts as a
failure: the extractive summary is used instead and an event says so, and
``max_summary_failures`` failures in a row raise ``CompactionFailed`` (a text made ahead
and not used, the trigger's clearing having sufficed, breaks the row). A text longer than
the budget is cut at a line end, saying so.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from collections.abc import Callable
from contextvars import copy_context
from typing import Any

from .. import markers
from ..errors import CompactionFailed
from ..errors import EmptySummary as EmptySummary  # kept importable from here
from ..messages import Message, clone
from ..sizing import TokenCounter, to_json
from ..summary import prompts
from ..summary.contract import Summarizes, SummaryRequest, SummaryResult, text_of
from ..summary.extract import extractive_summary
from ..summary.facts import Readings, facts
from .policy import SessionPolicy

Emit = Callable[[str, int, int, str], None]
"""``emit(stage, before, after, note)``: an event of the engine's."""


class _Job:
    """One call on the worker: its answer or its exception, once ``done`` is set."""

    def __init__(self, call: Callable[[], object]) -> None:
        self.call = call
        self.done = threading.Event()
        self.value: object = None
        self.error: BaseException | None = None
        self.started = time.time()
        self.clock = time.monotonic()
        self.ready: float | None = None  # wall time the answer came in

    def wait(self, timeout: float | None) -> object:
        """The call's answer; ``TimeoutError`` when not in within ``timeout`` seconds."""
        if not self.done.wait(timeout):
            raise TimeoutError(f"the summarizer did not answer within {timeout:g} s")
        if self.error is not None:
            raise self.error
        return self.value


class Worker:
    """A daemon thread that runs calls one at a time, in the order given."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        thread = threading.Thread(target=self._serve, name="context-compact-summary", daemon=True)
        thread.start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job.value = job.call()
            except BaseException as error:  # the caller's to see, as the call raised it
                job.error = error
            job.ready = time.time()
            job.done.set()
            del job  # an abandoned job's answer is not kept alive by a waiting worker

    def submit(self, call: Callable[[], object]) -> _Job:
        """``call`` queued; its job, to wait for when its answer is wanted."""
        job = _Job(call)
        self._jobs.put(job)
        return job

    def stop(self) -> None:
        """The thread ends once the call it runs (if any) returns; nothing waits for it."""
        self._jobs.put(None)


class SummaryCaller:
    def __init__(
        self,
        summarizer: Summarizes,
        policy: SessionPolicy,
        counter: TokenCounter,
        emit: Emit,
    ) -> None:
        self.summarizer = summarizer
        self.policy = policy
        self.counter = counter
        self.emit = emit
        self.failures = 0
        self._unused: list[_Job] = []  # made ahead, dropped unused: answered yet? (``_heard``)
        self._worker: Worker | None = None
        self._pending: tuple[str, _Job] | None = None  # a summary asked for ahead, by key
        self.timing: dict[str, object] | None = None  # of the last ``text``: see ``take_timing``
        # The request's system prompt and tools (``Compactor.set_request``).
        self.fixed: tuple[str | None, list[Any] | None] = (None, None)

    def _abandon(self) -> None:
        self._pending = None
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def close(self) -> None:
        self._abandon()

    def _submit(self, ask: SummaryRequest) -> _Job:
        if self._worker is None:
            self._worker = Worker()
        # In a copy of this context: a tracing span or a logging context set around the
        # call reaches the summarizer.
        context = copy_context()
        return self._worker.submit(lambda: context.run(self.summarizer.summarize, ask))

    def request(
        self,
        messages: list[Message],
        focus: str | None,
        previous: str | None,
        budget: int,
        sent: list[Message] | None = None,
        readings: Readings | None = None,
    ) -> SummaryRequest:
        """What the summarizer is asked (the active request is not passed: the summary
        message states it, or points at the message holding it, on its own); ``sent``, the
        view's messages before the cut, with the request's system prompt and tools;
        ``readings``, what facts the summary pass read (``SummaryRequest.readings``)."""
        if sent is not None and getattr(self.summarizer, "continue_cache", False):
            system, tools = self.fixed
            sent = [clone(m) for m in sent]
        else:
            sent, system, tools = None, None, None
        return SummaryRequest(
            messages,
            previous=previous,
            focus=focus,
            budget=budget,
            prompt=self.policy.summary_prompt,
            sent=sent,
            system=system,
            tools=tools,
            readings=readings,
        )

    def ahead(self, ask: SummaryRequest) -> bool:
        """Ask for ``ask``'s summary now, on the worker, unless it is asked for already;
        whether a new call was queued. One made ahead for another request is abandoned."""
        key = request_key(ask)
        if self._pending is not None and self._pending[0] == key:
            return False
        if self._pending is not None:
            self._unused.append(self._pending[1])
        if self._pending is not None and not self._pending[1].done.is_set():
            self._abandon()  # its call would hold up this one: its worker goes with it
        self._pending = (key, self._submit(ask))
        return True

    def _heard(self) -> None:
        """Summaries made ahead and dropped unused (the trigger's clearing sufficed, or it
        chose another range) still tell whether the summarizer answers: one answered with a
        text ends a run of failures. Those not done yet are looked at next time."""
        for job in self._unused:
            value = _text(job.value) if job.done.is_set() and job.error is None else None
            if isinstance(value, str) and value.strip():
                self.failures = 0
        self._unused = [job for job in self._unused if not job.done.is_set()][-4:]

    @property
    def asked_ahead(self) -> str | None:
        """The content key of the summary asked for ahead and not handed out yet."""
        return self._pending[0] if self._pending is not None else None

    def _ask(self, ask: SummaryRequest) -> object:
        """The answer to ``ask``: the one made ahead for it if any, else a call now."""
        waited_from = time.monotonic()
        pending, self._pending = self._pending, None
        made_ahead = pending is not None and pending[0] == request_key(ask)
        if pending is not None and not made_ahead:
            self._unused.append(pending[1])
        if pending is not None and not made_ahead and not pending[1].done.is_set():
            self._abandon()  # never wait behind a summary of another range
        job = pending[1] if made_ahead and pending is not None else self._submit(ask)
        timeout = self.policy.summary_timeout - (time.monotonic() - job.clock)
        try:
            return job.wait(max(0.0, timeout))
        except TimeoutError:
            self._abandon()
            raise TimeoutError(
                f"the summarizer did not answer within {self.policy.summary_timeout:g} s"
            ) from None
        finally:
            self.timing = {
                "ahead": made_ahead,
                "started": round(job.started, 3),
                "ready": round(job.ready, 3) if job.ready is not None else None,
                "waited": round(time.monotonic() - waited_from, 4),
            }
            value = job.value if job.done.is_set() and job.error is None else None
            usage = value.usage if isinstance(value, SummaryResult) else None
            if usage:
                self.timing.update(usage)

    def take_timing(self) -> dict[str, object] | None:
        """When the last summary was asked for (``started``, wall clock), when its answer
        came in (``ready``; None if it never did), how long the call waited for it
        (``waited``, seconds) and whether it was made ahead; then forgotten."""
        timing, self.timing = self.timing, None
        return timing

    def text(
        self,
        messages: list[Message],
        focus: str | None,
        previous: str | None,
        budget: int,
        sent: list[Message] | None = None,
        readings: Readings | None = None,
    ) -> str:
        """The summarizer's text, or the extractive summary if it raised, timed out or gave
        no text, cut to ``budget`` tokens if longer (``readings``: what the summary pass's
        facts read, shared with the summarizer and the fallback)."""
        ask = self.request(messages, focus, previous, budget, sent, readings)
        try:
            text = _text(self._ask(ask))
            if not isinstance(text, str) or not text.strip():
                got = "no text" if isinstance(text, str) else type(text).__name__
                raise EmptySummary(f"the summarizer returned {got}")
            self.failures = 0
        except Exception as error:
            self._heard()
            self.failures += 1
            if self.failures >= self.policy.max_summary_failures:
                raise CompactionFailed(
                    f"the summarizer failed {self.failures} times in a row "
                    f"(last: {type(error).__name__}: {error}); check the model/provider settings"
                ) from error
            note = f"summarizer failed ({type(error).__name__}); extractive summary used"
            self.emit("summary_fallback", 0, 0, note)
            # The summary message states the request in full: the summary need not repeat it.
            found = facts(messages, readings)
            limit = min(4_000, 3 * budget)
            text = extractive_summary(messages, limit=limit, previous=previous, found=found)
        return self.capped(text.strip(), budget)

    def capped(self, text: str, budget: int) -> str:
        """``text`` cut at a line end to ``budget`` tokens, saying so, if it is longer. The
        summary's last section (``## Next step``: where the work stands) is kept whole when
        it takes at most a third of the budget: the cut falls before it, not through it."""
        counter = self.counter
        size = counter.text(text)
        if size <= budget:
            return text
        note = markers.SUMMARY_CUT.format(tokens=budget)
        heading = f"## {prompts.SUMMARY_SECTIONS[-1]}"
        at = text.rfind(heading)
        tail = text[at:].strip() if at > 0 else ""
        if tail and counter.text(tail) > budget // 3:
            tail = ""
        head = text[:at] if tail else text
        room = budget - (counter.text(tail) + 1 if tail else 0)
        cut = self._cut(head, room, note)
        if tail:
            cut = f"{cut}\n\n{tail}"
        self.emit("summary_capped", size, counter.text(cut), f"summary cut to {budget:,} tokens")
        return cut

    def _cut(self, text: str, budget: int, note: str) -> str:
        """``text`` cut at a line end so that it and ``note`` fit ``budget`` tokens."""
        counter = self.counter
        size = max(1, counter.text(text))
        keep = max(0, len(text) * budget // size - len(note) - 1)
        while keep and counter.text(text[:keep]) + counter.text(note) > budget:
            keep = keep * 9 // 10
        line = text.rfind("\n", 0, keep)
        return f"{text[: line if line > keep // 2 else keep].rstrip()}\n{note}"


def _text(answer: object) -> object:
    """The text of a summarizer's answer (``text_of``); anything but a ``SummaryResult`` as
    it is: a callable's return, checked by whoever reads it."""
    return text_of(answer) if isinstance(answer, SummaryResult) else answer


def request_key(ask: SummaryRequest) -> str:
    """The content key of a summary request: two requests with the same key ask the same
    (what the agent's request held before the cut, ``sent``, is how it may be asked, not what:
    a summary made ahead without it answers the call at the trigger)."""
    fields = [ask.messages, ask.previous, ask.focus, ask.budget, ask.request, ask.prompt]
    return hashlib.blake2b(to_json(fields).encode(), digest_size=16).hexdigest()


__all__ = ["EmptySummary", "SummaryCaller", "request_key"]
