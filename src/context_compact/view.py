"""The default policy's engine: an append-only session log and the view derived from it.

Nothing is lost because nothing is ever removed from the log: ``log`` holds a private copy
of every message exactly as it was first appended. What the model is sent is the *view*:

    view = prefix + render(log[first_kept:])
    prefix = [first request] + [summary message] + [latest request, if older than first_kept]

``render`` applies block replacements: a persisted newest result (path + preview) or a
cleared older one (path only). Every replacement and every summary names a file that the
store wrote *before* the view changed: a content-addressed copy of the result, or a JSONL
archive of the original log messages the summary stands for (whose first line is the
previous summary message, so older archives stay reachable).

When the view changes (the cache-relevant events), in order of cost:
1. New results the model has not seen are budgeted as they arrive (``batch_budget`` of
   the limit; any result over ``large_result_limit`` tokens): persisted with a preview.
   They are new text, so this never rewrites history the model has seen.
2. Over ``high_water`` x limit, seen results are cleared oldest first, outside the last
   ``keep_recent_turns`` turns, down to ``low_water`` x limit, and only when that frees at
   least ``clear_at_least`` tokens. High/low water means history changes in rare batches.
3. Still over ``low_water``: the oldest turns are archived and summarized (rolling: the
   previous summary is part of the next one's input), keeping the recent turns verbatim.

Markers are deterministic (content hashes, no clock or counter), so a view that did not
change is byte-identical to what was sent before, and the provider's prompt cache holds.
"""

from __future__ import annotations

import concurrent.futures
import copy
import operator
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .errors import CompactionFailed
from .events import CompactionEvent
from .invariants import InvalidHistory, check
from .messages import Message, block_type, blocks, is_request, result_text
from .policy import Policy
from .sizing import TokenCounter
from .store.base import Store
from .summarize import extractive_summary, focused, summary_message

Pos = tuple[int, int]
# Tokens we expect a summary message to take (the seed caps the summary call at 2,000).
SUMMARY_ALLOWANCE = 800


def persisted_preview(path: str, text: str, preview_chars: int) -> str:
    return (
        f"<persisted-output>\nFull output: {path}\nPreview:\n{text[:preview_chars]}\n"
        f"</persisted-output>\n[{len(text):,} chars in full; read_file the path above with "
        f"offset/limit to see the rest]"
    )


def cleared_marker(path: str, chars: int) -> str:
    return f"[Tool result cleared from context: {chars:,} chars, full text at {path}]"


def _same_prefix(messages: list[Any], prefix: list[Any]) -> bool:
    return len(messages) >= len(prefix) and all(map(operator.is_, messages, prefix))


class SessionView:
    def __init__(
        self,
        policy: Policy,
        store: Store,
        summarizer: Callable[..., str],
        counter: TokenCounter,
        emit: Callable[[CompactionEvent], None],
    ) -> None:
        self.policy = policy
        self.store = store
        self.summarizer = summarizer
        self.counter = counter
        self.emit = emit
        self.overhead = 0
        self.ratio = 1.0
        self._reset()

    def _reset(self) -> None:
        self.log: list[Message] = []
        self._inputs: list[Any] = []
        self.first_kept = 0
        self.prefix: list[Message] = []
        self.summary: Message | None = None
        self.repl: dict[Pos, dict[str, Any]] = {}
        self.full_copy: dict[Pos, str] = {}
        self.cleared: set[Pos] = set()
        self.view: list[Message] = []
        self._returned: list[Message] | None = None
        self._last_input: list[Any] | None = None
        self._returned_tokens = 0
        self._anchor: tuple[list[Message], int] | None = None
        self.summary_failures = 0
        self.over_limit = 0

    # -- sizing --------------------------------------------------------------------------
    @property
    def limit(self) -> int:
        return self.policy.context_limit

    def estimate(self) -> int:
        return self.counter.messages(self.view) + self.overhead

    def measure(self) -> int:
        """Tokens of the request as it would be sent.

        When the view still starts with the one the API last measured, that is the API's own
        count plus an estimate of what was appended since; otherwise the whole estimate. Either
        estimate is scaled by the last observed real/estimated ratio.
        """
        if self._anchor is not None:
            sent, real = self._anchor
            if _same_prefix(self.view, sent):
                return real + round(self.counter.messages(self.view[len(sent) :]) * self.ratio)
        return round(self.estimate() * self.ratio)

    def observe(self, prompt_tokens: int) -> None:
        """Real prompt tokens of the view returned last (system and tools included)."""
        if prompt_tokens > 0 and self._returned is not None and self._returned_tokens > 0:
            self.ratio = min(3.0, max(0.5, prompt_tokens / self._returned_tokens))
            self._anchor = (self._returned, prompt_tokens)

    # -- syncing with the caller ---------------------------------------------------------
    def sync(self, messages: Any) -> None:
        """Append what the caller added since the last call; validate it."""
        if not isinstance(messages, list):
            raise InvalidHistory(check(messages))
        if self._returned is not None and _same_prefix(messages, self._returned):
            new, base = messages[len(self._returned) :], self.view
        elif self._last_input is not None and _same_prefix(messages, self._last_input):
            # The same input again (or extended): what it held is already in the log.
            new, base = messages[len(self._last_input) :], self.view
        elif self._inputs and _same_prefix(messages, self._inputs):
            new, base = messages[len(self._inputs) :], self.view
        elif not self.log:
            new, base = messages, []
        elif self._returned is not None and messages[: len(self._returned)] == self._returned:
            new, base = messages[len(self._returned) :], self.view
        else:
            new, base = self._restart(messages), []
        violations = check(base + new)
        if violations:
            # Indices into what the caller passed, not into our view.
            offset = len(messages) - len(new) - len(base)
            raise InvalidHistory([replace(v, index=v.index + offset) for v in violations])
        self._last_input = list(messages)
        for message in new:
            self._inputs.append(message)
            self.log.append(copy.deepcopy(message))
            self.view.append(self._render(len(self.log) - 1))

    def _restart(self, messages: list[Any]) -> list[Any]:
        """The caller's history no longer extends ours: archive ours, start a new log."""
        path = self.store.save_messages(self.log)
        self.emit(
            CompactionEvent(
                "session_restart",
                len(self.log),
                0,
                "messages",
                (path,),
                "history replaced by the caller; previous log archived",
            )
        )
        self._reset()
        return messages

    def returned(self) -> list[Message]:
        out = list(self.view)
        self._returned = out
        self._returned_tokens = self.estimate()
        return out

    # -- rendering -----------------------------------------------------------------------
    def _render(self, li: int) -> Message:
        message = self.log[li]
        content = message.get("content")
        if not isinstance(content, list) or not any(
            (li, bi) in self.repl for bi in range(len(content))
        ):
            return copy.deepcopy(message)
        new_content = [
            dict(self.repl[(li, bi)]) if (li, bi) in self.repl else copy.deepcopy(block)
            for bi, block in enumerate(content)
        ]
        return {**message, "content": new_content}

    def _rebuild(self) -> None:
        self.view = self.prefix + [self._render(li) for li in range(self.first_kept, len(self.log))]

    def _rerender(self, indices: set[int]) -> None:
        start = len(self.prefix) - self.first_kept
        for li in indices:
            self.view[start + li] = self._render(li)

    # -- positions -----------------------------------------------------------------------
    def _last_assistant(self) -> int:
        for li in range(len(self.log) - 1, self.first_kept - 1, -1):
            if self.log[li].get("role") == "assistant":
                return li
        return self.first_kept - 1

    def _turn_starts(self) -> list[int]:
        return [
            li
            for li in range(self.first_kept, len(self.log))
            if self.log[li].get("role") == "assistant"
        ]

    def _results(self, start: int, stop: int) -> list[tuple[Pos, dict[str, Any]]]:
        return [
            ((li, bi), block)
            for li in range(start, stop)
            if self.log[li].get("role") == "user"
            for bi, block in enumerate(blocks(self.log[li]))
            if block_type(block) == "tool_result"
        ]

    def _current_text(self, pos: Pos, block: dict[str, Any]) -> str:
        return result_text(self.repl.get(pos, block))

    # -- 1. the newest batch -------------------------------------------------------------
    def budget_unseen(self) -> None:
        policy = self.policy
        unseen = [
            (pos, block)
            for pos, block in self._results(self._last_assistant() + 1, len(self.log))
            if pos not in self.repl
        ]
        if not unseen:
            return
        sizes = {pos: self.counter.text(result_text(block)) for pos, block in unseen}
        total = sum(sizes.values())
        batch_limit = int(policy.batch_budget * self.limit)
        result_cap = min(policy.large_result_limit, int(policy.large_result_share * self.limit))
        before, paths, touched = total, [], set()
        for pos, block in sorted(unseen, key=lambda item: sizes[item[0]], reverse=True):
            text = result_text(block)
            too_big = sizes[pos] > result_cap
            if not too_big and total <= batch_limit:
                continue
            if len(text) <= policy.preview_chars * 2:
                continue
            path = self.store.save_blob(text)
            replacement = persisted_preview(path, text, policy.preview_chars)
            self.repl[pos] = {**block, "content": replacement}
            self.full_copy[pos] = path
            paths.append(path)
            touched.add(pos[0])
            total += self.counter.text(replacement) - sizes[pos]
        if touched:
            self._rerender(touched)
            self.emit(
                CompactionEvent(
                    "persist_new_results",
                    before,
                    total,
                    "tokens",
                    tuple(paths),
                    f"{len(paths)} new results persisted with a preview",
                )
            )

    # -- 2. clearing seen results --------------------------------------------------------
    def clear_old_results(self, target: int, force: bool = False) -> None:
        starts = self._turn_starts()
        keep = self.policy.keep_recent_turns
        protect_from = (
            starts[-keep]
            if keep and len(starts) >= keep
            else (starts[0] if starts else len(self.log))
        )
        protect_from = min(protect_from, self._last_assistant() + 1)
        candidates = []
        for pos, block in self._results(self.first_kept, protect_from):
            if pos in self.cleared:
                continue
            text = self._current_text(pos, block)
            original = result_text(block)
            saving = self.counter.text(text) - 30
            if saving > 0:
                candidates.append((pos, block, original, saving))
        before = self.measure()
        excess = (before - target) / self.ratio
        chosen, freed = [], 0
        for item in candidates:
            if freed >= excess:
                break
            chosen.append(item)
            freed += item[3]
        if not chosen or (freed < self.policy.clear_at_least and not force):
            return
        paths, touched = [], set()
        for pos, block, original, _ in chosen:
            path = self.full_copy.get(pos) or self.store.save_blob(original)
            self.full_copy[pos] = path
            self.repl[pos] = {**block, "content": cleared_marker(path, len(original))}
            self.cleared.add(pos)
            paths.append(path)
            touched.add(pos[0])
        self._rerender(touched)
        self.emit(
            CompactionEvent(
                "clear_old_results",
                before,
                self.measure(),
                "tokens",
                tuple(dict.fromkeys(paths)),
                f"{len(chosen)} seen results cleared",
            )
        )

    # -- 3. summarizing old turns --------------------------------------------------------
    def summarize_old(
        self,
        target: int,
        request: str,
        keep_turns: int,
        instructions: str | None = None,
        stage: str = "summarize",
    ) -> bool:
        starts = self._turn_starts()
        # The newest turn (the model's latest call and its unseen results) is never summarized.
        candidates = starts[-keep_turns:] if keep_turns else starts[-1:]
        candidates = [c for c in candidates if c > self.first_kept]
        if not candidates:
            candidates = [c for c in starts[-1:] if c > self.first_kept]
        if not candidates:
            return False
        head = 1 if self.log and is_request(self.log[0]) else 0
        start = max(self.first_kept, head)
        offset = len(self.prefix) - self.first_kept

        def tokens(lo: int, hi: int) -> int:
            return self.counter.messages(self.view[offset + max(lo, self.first_kept) : offset + hi])

        latest = next(
            (li for li in range(len(self.log) - 1, -1, -1) if is_request(self.log[li])), None
        )
        first_tokens = self.counter.message(self.view[0]) if head else 0
        budget = target / self.ratio - self.overhead - SUMMARY_ALLOWANCE - first_tokens
        cut = candidates[0]
        for c in candidates:  # drop more only while what stays is still too big
            cut = c
            keeps_latest = latest is not None and head <= latest < c and latest != 0
            pinned_tokens = self.counter.message(self.log[latest]) if keeps_latest and latest else 0
            if tokens(c, len(self.log)) + pinned_tokens <= budget:
                break
        saving = tokens(start, cut) - SUMMARY_ALLOWANCE
        urgent = self.measure() > self.limit
        least = 1 if urgent else self.policy.clear_at_least
        if stage == "summarize" and saving < least:
            # Summarizing so little would not shrink the view: it would only churn the cache.
            return False
        dropped_view = [self._render(li) for li in range(start, cut)]
        rolling = [self.summary] if self.summary is not None else []
        archive = self.store.save_messages(rolling + self.log[start:cut])
        summary_text = self._summarize(rolling + dropped_view, request, instructions)
        before = self.measure()
        self.summary = summary_message("Compacted", request, summary_text, archive)
        first = [self._render(0)] if head else []
        pinned = (
            [self._render(latest)]
            if latest is not None and head <= latest < cut and latest != 0
            else []
        )
        self.prefix = first + [self.summary] + pinned
        self.first_kept = cut
        self._rebuild()
        self.emit(
            CompactionEvent(
                stage,
                before,
                self.measure(),
                "tokens",
                (archive,),
                f"{cut - start} messages summarized",
            )
        )
        return True

    def _summarize(self, messages: list[Message], request: str, instructions: str | None) -> str:
        summarizer = focused(self.summarizer, instructions)

        def call() -> str:
            return str(summarizer(messages))

        timeout = self.policy.summary_timeout
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            text = pool.submit(call).result(timeout=timeout)
            self.summary_failures = 0
            return text
        except Exception as error:
            self.summary_failures += 1
            if self.summary_failures >= self.policy.max_summary_failures:
                raise CompactionFailed(
                    f"the summarizer failed {self.summary_failures} times in a row "
                    f"(last: {type(error).__name__}: {error}); check the model/provider settings"
                ) from error
            note = f"summarizer failed ({type(error).__name__}); extractive summary used"
            self.emit(CompactionEvent("summary_fallback", 0, 0, "tokens", (), note))
            return extractive_summary(messages, request)
        finally:
            pool.shutdown(wait=False)

    # -- entry points --------------------------------------------------------------------
    def prepare(self, messages: Any, request: str) -> list[Message]:
        self.sync(messages)
        self.budget_unseen()
        if self.measure() > self.policy.high_water * self.limit:
            target = int(self.policy.low_water * self.limit)
            self.clear_old_results(target, force=self.measure() > self.limit)
            if self.measure() > target:
                self.summarize_old(target, request, self.policy.keep_recent_turns)
            self._check_limit()
        return self.returned()

    def compact(
        self, messages: Any, request: str, instructions: str | None = None
    ) -> list[Message]:
        """Summarize everything but the newest turn (the ``compact`` tool, ``/compact``)."""
        self.sync(messages)
        self.budget_unseen()
        self.summarize_old(0, request, 1, instructions, stage="compact_history")
        return self.returned()

    def reactive(self, messages: Any, request: str) -> list[Message]:
        """After a refusal: the request was at least as big as the limit, whatever we thought.

        The calibration ratio is raised so that the refused view measures at least the limit
        (the next real ``usage`` corrects it), then the view is compacted hard, down to the
        low-water mark and at least to half its size: a retry that resends the same request
        would be refused again.
        """
        self.sync(messages)
        self.budget_unseen()
        estimate = max(1, self.estimate())
        self._anchor = None  # the refusal says the last count no longer describes this view
        self.ratio = min(8.0, max(self.ratio, self.limit / estimate))
        target = min(int(self.policy.low_water * self.limit), self.measure() // 2)
        self.clear_old_results(target, force=True)
        if self.measure() > target:
            self.summarize_old(
                target, request, self.policy.keep_recent_turns, stage="reactive_compact"
            )
        return self.returned()

    def _check_limit(self) -> None:
        if self.measure() <= self.limit:
            self.over_limit = 0
            return
        self.over_limit += 1
        if self.over_limit >= self.policy.max_over_limit:
            raise CompactionFailed(
                f"the context is still over its limit ({self.measure():,} > {self.limit:,} tokens) "
                f"after {self.over_limit} compactions in a row; the newest turn alone is too big. "
                "Raise context_limit or lower batch_budget."
            )


__all__ = ["SessionView", "cleared_marker", "persisted_preview"]
