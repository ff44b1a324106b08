"""Asking the summarizer: one typed request, one reused worker, a timeout, a fallback, a cap.

The engine asks for a summary with ``SummaryCaller.text(messages, focus, previous,
budget)``. The caller's summarizer was adapted once (``summarize.adapt``) and runs on one
worker thread reused from summary to summary, so a hung model call can time out
(``summary_timeout``) without blocking the engine. A worker whose call timed out may still
be running it: it is abandoned (its result ignored) and the next summary gets a new one.
The worker is a daemon thread of its own, not a ``concurrent.futures`` pool: the pools'
threads are joined when the interpreter exits, so one hung call abandoned long ago would
hold the process open until it returned; an abandoned daemon thread never does.

Whatever goes wrong (an exception, a timeout, an empty or non-text answer) counts as a
failure: the extractive summary is used instead and an event says so, and
``max_summary_failures`` failures in a row raise ``CompactionFailed``. A text longer than
the budget is cut at a line end, saying so.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from contextvars import copy_context
from typing import Any

from .. import markers
from ..errors import CompactionFailed
from ..errors import EmptySummary as EmptySummary  # kept importable from here
from ..messages import Message
from ..sizing import TokenCounter
from ..summarize import Summarizes, SummaryRequest, extractive_summary
from .policy import SessionPolicy

Emit = Callable[[str, int, int, str], None]
"""``emit(stage, before, after, note)``: an event of the engine's."""


class _Job:
    """One call on the worker: its answer or its exception, once ``done`` is set."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


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
            job.done.set()
            del job  # an abandoned job's answer is not kept alive by a waiting worker

    def run(self, call: Callable[[], Any], timeout: float | None) -> Any:
        """``call()``'s answer; ``TimeoutError`` when it takes longer than ``timeout``."""
        job = _Job(call)
        self._jobs.put(job)
        if not job.done.wait(timeout):
            raise TimeoutError(f"the summarizer did not answer within {timeout:g} s")
        if job.error is not None:
            raise job.error
        return job.value

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
        self._worker: Worker | None = None

    def _abandon(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def close(self) -> None:
        self._abandon()

    def _ask(self, ask: SummaryRequest) -> Any:
        if self._worker is None:
            self._worker = Worker()
        # In a copy of this context: what the call set up (``facts.read_once``) holds there.
        context = copy_context()
        try:
            return self._worker.run(
                lambda: context.run(self.summarizer.summarize, ask), self.policy.summary_timeout
            )
        except TimeoutError:
            self._abandon()
            raise

    def text(
        self,
        messages: list[Message],
        focus: str | None,
        previous: str | None,
        budget: int,
    ) -> str:
        """The summarizer's text, or the extractive summary if it raised, timed out or gave
        no text, cut to ``budget`` tokens if longer. The active request is not passed: the
        summary message states it (or points at the message holding it) on its own."""
        ask = SummaryRequest(
            messages,
            previous=previous,
            focus=focus,
            budget=budget,
            prompt=self.policy.summary_prompt,
        )
        try:
            text = self._ask(ask)
            if not isinstance(text, str) or not text.strip():
                got = "no text" if isinstance(text, str) else type(text).__name__
                raise EmptySummary(f"the summarizer returned {got}")
            self.failures = 0
        except Exception as error:
            self.failures += 1
            if self.failures >= self.policy.max_summary_failures:
                raise CompactionFailed(
                    f"the summarizer failed {self.failures} times in a row "
                    f"(last: {type(error).__name__}: {error}); check the model/provider settings"
                ) from error
            note = f"summarizer failed ({type(error).__name__}); extractive summary used"
            self.emit("summary_fallback", 0, 0, note)
            # The summary message states the request in full: the summary need not repeat it.
            text = extractive_summary(messages, limit=min(4_000, 3 * budget), previous=previous)
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
        heading = f"## {markers.SUMMARY_SECTIONS[-1]}"
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


__all__ = ["EmptySummary", "SummaryCaller"]
