"""The session engine (our default): a durable append-only log and a view derived from it.

Each call, in this order:

1. **sync**: recognize the caller's list by content (``keys.Recognizer``), validate only what
   is new against the view's last message, and log it (a private copy, an id chained to its
   parent's).
2. **persist** the newest, unseen results that do not fit (``passes.persist``).
3. Over ``high_water`` x limit: **clear** seen results down to ``low_water`` x limit, then, if
   still over, **summarize** the oldest turns (``passes.clear``, ``passes.summarize``).
4. **journal** every record of the call (messages, edits, events) in one store append, then
   return the view.

Store faults: a pass writes its copies before it returns its edit, so a write the store
refuses (disk full, read-only) leaves no edit behind. The call's other passes are skipped, a
``store_error`` event says so, and the view keeps everything: the call succeeds while that
view fits the limit, else (and always for ``compact``/``reactive``) raises
``StoreUnavailable``. A journal append that fails keeps its records, in order, for the next
call, and raises ``StoreUnavailable``: the journal is always a whole prefix of the session.

Sizes are tokens of the request as sent: the API's last count of the view's head plus an
estimate of what came after (``observe``), the system prompt and tools included
(``overhead``). Per call the work is O(new messages): validation, hashing, sizing and the
journal touch only what is new; the identity checks that recognize the caller's list are a
pass of ``is`` over it.

Resume: ``Env.session`` names a session in the store; its journal is replayed through the
same ``SessionState.apply`` the live engine uses, so the next view is the one the process
that stopped would have sent. The caller continues with ``view()`` (or its own full history,
or the last view it kept, all recognized).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import Any

from .. import markers
from ..engine import Env, Message
from ..errors import CompactionFailed, StoreUnavailable
from ..events import CompactionEvent
from ..invariants import InvalidHistory, check, check_appended
from ..keys import Match, Recognizer, chain_id, content_key
from ..messages import as_dicts
from ..store import holders
from ..store.base import STORE_ERRORS
from ..summarize import call_summarizer, extractive_summary
from . import knobs, passes, summary
from .policy import SessionPolicy
from .recall import SearchableLog
from .state import Record, SessionState, clone

NEVER = -(10**12)
SUMMARY_SHARE = 0.15


class EmptySummary(ValueError):
    """The summarizer answered without text (an empty string, None, not a string)."""


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class SessionEngine(SearchableLog):
    """The Engine protocol and the DurableSession capability (``engine.py``)."""

    name = "default"

    def __init__(self, policy: SessionPolicy, env: Env) -> None:
        self.policy = policy
        self.env = env
        self.store = env.store
        self.state = SessionState(env.counter)
        self.recognizer = Recognizer()
        self.session_id: str | None = None
        self._pending: list[Record] = []
        self._returned: tuple[int, int] | None = None
        self.summary_failures = 0
        self.over_limit = 0
        self._fault: BaseException | None = None
        # The tool_use ids of the list the caller passed last (a retry is checked against them).
        self._input_ids: set[str] = set()
        self._generation = 0  # appends to the session through this store object (holders.py)
        if env.session is not None:
            self._open(env.session)

    # -- the durable session ---------------------------------------------------------------
    def _open(self, session: str) -> None:
        meta = self.store.session_meta(session)
        self.session_id = session
        self._generation = holders.seen(self.store, session)
        if meta is None:
            self.store.create_session({**self._meta(), "id": session})
            return
        state = self.state
        for record in self.store.records(session):
            kind = record.get("kind")
            if kind == "message":
                state.add_message(record, content_key(record["message"]))
            elif kind != "event":
                state.apply(record)

    def _meta(self) -> dict[str, Any]:
        return {"engine": self.name, "policy": asdict(self.policy)}

    def sid(self) -> str:
        if self.session_id is None:
            self.session_id = self.store.create_session(self._meta())
            self._generation = holders.seen(self.store, self.session_id)
        return self.session_id

    def session(self) -> str:
        return self.sid()

    def _record(self, record: Record) -> None:
        if record["kind"] != "message":
            self.state.apply(record)
        self._pending.append(record)

    @contextmanager
    def _journaled(self) -> Iterator[None]:
        """Journal the call's records at its end, also when it fails; a journal that cannot be
        written then does not hide the call's own error."""
        self._fault = None
        try:
            yield
        except BaseException:
            self._flush(quiet=True)
            raise
        self._flush()

    def _flush(self, quiet: bool = False) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            try:
                sid = self.sid()
                # Of two compactors on one session and store object, a stale one is refused.
                self._generation = holders.write(self.store, sid, self._generation)
                self.store.append(sid, pending)
            except STORE_ERRORS as error:
                # Kept, in order, for the next call's append: the journal stays a prefix of
                # what happened (never torn), and the view already holds what it says.
                self._pending = pending + self._pending
                if quiet:
                    return
                raise StoreUnavailable(
                    f"the session journal could not be written ({_describe(error)}); "
                    f"{len(pending)} records are kept in memory and written by the next call "
                    "that succeeds. Free space or fix the store's permissions."
                ) from error

    def _emit(
        self,
        stage: str,
        before: int,
        after: int,
        paths: tuple[str, ...],
        note: str,
        score: dict[str, float | None] | None = None,
    ) -> None:
        event = CompactionEvent(stage, before, after, "tokens", paths, note, score)
        self._pending.append({"kind": "event", **asdict(event), "paths": list(paths)})
        self.env.emit(event)

    def _io(self) -> passes.PassIO:
        return passes.PassIO(self.store, f"sessions/{self.sid()}.index.md", self._summarize)

    # -- syncing with the caller -----------------------------------------------------------
    def sync(self, messages: Any) -> None:
        """Log what the caller added since the last call; validate only that."""
        if not isinstance(messages, list):
            raise InvalidHistory(check(messages))
        state = self.state
        try:
            match = self.recognizer.match(
                messages, state.view_keys, state.conversation_len(), state.head
            )
        except RecursionError:
            # Hashing met a message nested too deep for the JSON encoder: check() names it.
            raise InvalidHistory(check(as_dicts(messages))) from None
        if match is None:
            # An invalid history is refused before the session is touched.
            violations = check(as_dicts(messages))
            if violations:
                raise InvalidHistory(violations)
            self._restart()
            match = Match(0, "view")
        # New messages may not reuse a tool_use id of the caller's list: the view's ids for a
        # list built on our view, every id of the conversation for the caller's own full
        # history, the ids of the list it passed last for a retry of that list.
        ids = {"view": state.use_ids, "log": state.log_use_ids}.get(match.via, self._input_ids)
        new = as_dicts(messages[match.start :])
        if not new:
            self.recognizer.accept(messages)
            self._input_ids = ids
            return
        prev = state.view[-1] if state.view else None
        violations = check_appended(prev, new, ids)
        if violations:
            offset = len(messages) - len(new)
            raise InvalidHistory([replace(v, index=v.index + offset) for v in violations])
        keys = self.recognizer.last_keys()[match.start :]
        for message, key in zip(new, keys, strict=True):
            record = {
                "kind": "message",
                "seq": state.n,
                "id": chain_id(state.head, key),
                "parent": state.head,
                "message": clone(message),
            }
            state.add_message(record, key)
            self._pending.append(record)
        self.recognizer.accept(messages)
        # The set itself, not a copy: new ids were just added to it, and a summary replaces
        # the view's set rather than editing it, so this stays the ids of ``messages``.
        self._input_ids = ids

    def _restart(self) -> None:
        """The caller's list extends neither our view nor our log: a new conversation. The
        old one stays in the journal (nothing is lost); the view starts again."""
        if self.state.conversation_len() == 0:
            return
        before = self.state.measure()
        self._record({"kind": "restart"})
        self._emit(
            "session_restart", before, 0, (), "the caller's history no longer extends this one"
        )

    def view(self) -> list[Message]:
        """The request as it stands (after a resume: what the stopped process would send)."""
        out = list(self.state.view)
        self.recognizer.prime(out, self.state.view_keys)
        self._returned = (len(out), self.state.estimate())
        return out

    def measure(self) -> int:
        return self.state.measure()

    # -- calibration -----------------------------------------------------------------------
    @property
    def limit(self) -> int:
        return self.policy.context_limit

    def observe(self, prompt_tokens: int) -> None:
        """Real prompt tokens of the view returned last (system and tools included)."""
        if prompt_tokens <= 0 or self._returned is None or self._returned[1] <= 0:
            return
        length, estimate = self._returned
        ratio = min(3.0, max(0.5, prompt_tokens / estimate))
        record = {"kind": "calibrate", "ratio": ratio, "anchor": [length, prompt_tokens]}
        # The factors per kind of text, from the messages sent since the last usage.
        anchor = self.state.anchor
        if anchor is not None and anchor[0] < length and prompt_tokens > anchor[1]:
            counter = self.state.counter
            counter.observe(prompt_tokens - anchor[1], self.state.view[anchor[0] : length])
            if counter.calibrates:
                record["kinds"] = dict(counter.calibration.factors)
        # Journaled with the next call's records: a process killed before then has not sent
        # another request, and its caller observes the same usage again when it resends.
        self._record(record)

    def overhead(self, tokens: int) -> None:
        if tokens != self.state.overhead:
            self._record({"kind": "overhead", "tokens": tokens})

    @property
    def summary_budget(self) -> int:
        """Tokens a summary may take: ``summary_max_tokens``, and at most ``SUMMARY_SHARE``
        of the limit, so that in a small window the summary cannot fill what the
        summarizing was meant to free."""
        return max(100, min(self.policy.summary_max_tokens, int(SUMMARY_SHARE * self.limit)))

    # -- passes ----------------------------------------------------------------------------
    def _guarded(self, run: Callable[[], None], stage: str) -> None:
        """Run a pass unless the store already refused a write in this call. A pass writes its
        copies before it returns its edit, so a refused write leaves no edit: what it would
        have removed stays in the view, and a ``store_error`` event says so."""
        if self._fault is not None:
            return
        try:
            run()
        except STORE_ERRORS as error:
            self._fault = error
            size = self.state.measure()
            note = (
                f"{stage} skipped: the store refused a write ({_describe(error)}); "
                "everything stays in view"
            )
            self._emit("store_error", size, size, (), note)

    def _fault_check(self, doing: str, always: bool) -> None:
        """After a refused write: fine while the view fits (the warning event was sent), else
        (or when the call was asked to compact) a clear error."""
        error = self._fault
        if error is None:
            return
        size = self.state.measure()
        if always or size > self.limit:
            raise StoreUnavailable(
                f"could not {doing}: the store refused a write ({_describe(error)}); nothing "
                f"left the context, which holds {size:,} tokens (limit {self.limit:,}). Free "
                "space or fix the store's permissions, then retry."
            ) from error

    def _persist(self) -> None:
        state = self.state
        before = state.measure()
        edit = passes.persist(state, self.policy, self._io(), self.limit)
        if edit is not None:
            self._record(edit)
            paths = tuple(b[2] for b in edit["blocks"])
            note = f"{len(paths)} new results persisted with a preview"
            self._emit("persist_new_results", before, state.measure(), paths, note)

    def _clear(
        self, target: int, force: bool, futile_below: int | None = None, last_resort: bool = False
    ) -> None:
        state = self.state
        before = state.measure()
        edit = passes.clear(
            state, self.policy, self._io(), target, force, futile_below, last_resort
        )
        if edit is not None:
            self._record(edit)
            paths = tuple(dict.fromkeys(b[2] for b in edit["blocks"]))
            note = f"{len(edit['blocks'])} seen results cleared"
            self._emit("clear_old_results", before, state.measure(), paths, note)

    def _summarize_old(
        self,
        target: int,
        request: str,
        keep_turns: int,
        *,
        least: int,
        instructions: str | None = None,
        stage: str = "summarize",
    ) -> None:
        state = self.state
        before = state.measure()
        ask = summary.SummaryAsk(
            target=target,
            least=least,
            request=request,
            keep_turns=keep_turns,
            limit=self.limit,
            pin_budget=self.policy.user_words_share * self.limit / state.ratio,
            answered_chars=self.policy.answered_chars,
            allowance=min(summary.SUMMARY_ALLOWANCE, self.summary_budget),
            instructions=instructions,
        )
        edit = passes.summarize(state, self._io(), ask, self.policy.summary_input_limit // 4)
        if edit is not None:
            self._record(edit)
            folded = len(edit["folded"]) + edit["folded_more"]
            closed = "; the turn closed, recent steps carried" if edit.get("closes") else ""
            note = (
                f"{edit['cut'] - edit['start']} messages summarized; user messages: "
                f"{len(edit['pins'])} pinned, {folded} folded{closed}"
            )
            self._emit(stage, before, state.measure(), (edit["archive"],), note, edit["score"])

    def _summarize(
        self,
        messages: list[Message],
        request: str,
        instructions: str | None,
        previous: str | None,
    ) -> str:
        """The summarizer's text, or the extractive summary if it raised, timed out or gave
        no text (each a failure; ``max_summary_failures`` in a row raise), cut to the
        policy's length budget if longer."""
        budget = self.summary_budget

        def call() -> Any:
            return call_summarizer(
                self.env.summarizer,
                messages,
                previous=previous,
                instructions=instructions,
                max_tokens=budget,
                prompt=self.policy.summary_prompt,
            )

        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            text = pool.submit(call).result(timeout=self.policy.summary_timeout)
            if not isinstance(text, str) or not text.strip():
                got = "no text" if isinstance(text, str) else type(text).__name__
                raise EmptySummary(f"the summarizer returned {got}")
            self.summary_failures = 0
        except Exception as error:
            self.summary_failures += 1
            if self.summary_failures >= self.policy.max_summary_failures:
                raise CompactionFailed(
                    f"the summarizer failed {self.summary_failures} times in a row "
                    f"(last: {type(error).__name__}: {error}); check the model/provider settings"
                ) from error
            note = f"summarizer failed ({type(error).__name__}); extractive summary used"
            self._emit("summary_fallback", 0, 0, (), note)
            # The summary message states the request in full: the summary need not repeat it.
            text = extractive_summary(messages, limit=min(4_000, 3 * budget), previous=previous)
        finally:
            pool.shutdown(wait=False)
        return self._capped(text.strip(), budget)

    def _capped(self, text: str, budget: int) -> str:
        """``text`` cut at a line end to ``budget`` tokens, saying so, if it is longer."""
        counter = self.state.counter
        size = counter.text(text)
        if size <= budget:
            return text
        note = markers.SUMMARY_CUT.format(tokens=budget)
        keep = max(0, len(text) * budget // size - len(note) - 1)
        while keep and counter.text(text[:keep]) + counter.text(note) > budget:
            keep = keep * 9 // 10
        line = text.rfind("\n", 0, keep)
        cut = f"{text[: line if line > keep // 2 else keep].rstrip()}\n{note}"
        self._emit(
            "summary_capped", size, counter.text(cut), (), f"summary cut to {budget:,} tokens"
        )
        return cut

    def _check_limit(self) -> None:
        size = self.state.measure()
        if size <= self.limit:
            self.over_limit = 0
            return
        self.over_limit += 1
        if self.over_limit >= self.policy.max_over_limit:
            raise CompactionFailed(self._too_big(size))
        # Never silently: the caller sees what is too big before the API refuses it.
        self._emit("over_limit", size, size, (), self._too_big(size))

    def _too_big(self, size: int) -> str:
        """What alone keeps the request over the limit, by name and size."""
        state = self.state
        ratio = state.ratio
        first = state.first_request
        last = state.last_assistant()
        step = [seq for seq in range(max(last, state.first_kept), state.n)]
        step_tokens = round(sum(state.tokens[state.view_index(seq)] for seq in step) * ratio)
        parts = [f"the system prompt and tools take {round(state.overhead * ratio):,}"]
        if first is not None:
            first_tokens = round(state.counter.count(state.msgs[first]) * ratio)
            parts.append(f"the first request (message {first}) {first_tokens:,}")
        if step:
            parts.append(f"the newest step (messages {step[0]}-{step[-1]}) {step_tokens:,}")
        return (
            f"the context is still over its limit ({size:,} > {self.limit:,} tokens) after "
            f"{self.over_limit} compactions in a row: {'; '.join(parts)} tokens, and none of "
            "these can leave the view. Raise context_limit, shorten what is too big, or lower "
            "batch_budget so that new results are saved with a preview."
        )

    def _fixed_part(self) -> None:
        """The system prompt and tools alone over the limit: no request can be sent."""
        state = self.state
        overhead = round(state.overhead * state.ratio)
        if overhead >= self.limit:
            raise CompactionFailed(
                f"the system prompt and tools take {overhead:,} tokens, more than the context "
                f"limit of {self.limit:,} tokens: no request fits. Raise context_limit or "
                "shorten the system prompt or the tool schemas."
            )

    # -- entry points ----------------------------------------------------------------------
    def record(self, messages: Any) -> None:
        """Log what the caller appended (the model's last answer) without compacting."""
        with self._journaled():
            self.sync(messages)

    def prepare(self, messages: Any, request: str) -> list[Message]:
        self._fixed_part()
        with self._journaled():
            self.sync(messages)
            self._guarded(self._persist, "persist")
            policy, state = self.policy, self.state
            high = policy.high_water * self.limit
            fire, target = knobs.trigger(state, policy, self.limit, self.env.should_compact)
            if fire:
                urgent = state.measure() > self.limit
                # A clearing that cannot even get under the high-water mark is skipped: the
                # summary that must follow would archive what it cleared (a cold start on a
                # long history); clearing runs after the summary if still needed.
                self._guarded(
                    lambda: self._clear(target, force=urgent, futile_below=int(high)), "clear"
                )
                # Clearing is lossless and cheaper than a summary: when it brought the request
                # well under the high-water mark (half-way down to the low-water one), that is
                # enough; a long turn's recent results may keep it above the low-water mark.
                # (A trigger by message count has no token target: it always summarizes.)
                if not target or state.measure() > (high + target) / 2:
                    least = 1 if state.measure() > self.limit else policy.clear_floor
                    self._guarded(
                        lambda: self._summarize_old(
                            target, request, policy.keep_recent_turns, least=least
                        ),
                        "summarize",
                    )
                if state.measure() > high:
                    force = state.measure() > self.limit
                    self._guarded(lambda: self._clear(target, force=force), "clear")
                if state.measure() > self.limit:
                    # Still over: the recent turns' seen results go too (each keeps its copy),
                    # before the call gives up (a long turn that no summary may cut).
                    self._guarded(
                        lambda: self._clear(target, force=True, last_resort=True), "clear"
                    )
                if state.measure() > self.limit:
                    # Still over: everything but what the model has not seen yet goes into
                    # the summary (the summary closes the turn).
                    self._guarded(
                        lambda: self._summarize_old(target, request, 0, least=1), "summarize"
                    )
                self._fault_check("bring the context under its limit", always=False)
                self._check_limit()
            self._fault_check("save new results", always=False)
            return self.view()

    def compact(
        self,
        messages: Any,
        request: str,
        instructions: str | None = None,
        keep_recent_turns: int = 1,
    ) -> list[Message]:
        """Summarize everything but the newest ``keep_recent_turns`` turns (the ``compact``
        tool, ``/compact``); 0 summarizes all: only the first request, the pinned user
        messages and the summary stay (with the results the model has not seen yet, carried
        in the closing message)."""
        if keep_recent_turns < 0:
            raise ValueError(f"keep_recent_turns must be >= 0, got {keep_recent_turns}")
        with self._journaled():
            self.sync(messages)
            self._guarded(self._persist, "persist")
            self._guarded(
                lambda: self._summarize_old(
                    0,
                    request,
                    keep_recent_turns,
                    least=NEVER,
                    instructions=instructions,
                    stage="compact_history",
                ),
                "compact_history",
            )
            self._fault_check("compact", always=True)
            return self.view()

    def reactive(self, messages: Any, request: str) -> list[Message]:
        """After a refusal: the request was at least as big as the limit, whatever we thought.

        The calibration ratio is raised so that the refused view measures at least the limit
        (the next real ``usage`` corrects it), then the view is compacted hard, down to the
        low-water mark and at least to half its size: a retry that resends the same request
        would be refused again.
        """
        with self._journaled():
            self.sync(messages)
            self._guarded(self._persist, "persist")
            state = self.state
            estimate = max(1, state.estimate())
            ratio = min(8.0, max(state.ratio, self.limit / estimate))
            self._record({"kind": "calibrate", "ratio": ratio, "anchor": None})
            target = min(int(self.policy.low_water * self.limit), state.measure() // 2)
            self._guarded(lambda: self._clear(target, force=True), "clear")
            if state.measure() > target:
                self._guarded(
                    lambda: self._summarize_old(
                        target,
                        request,
                        self.policy.keep_recent_turns,
                        least=NEVER,
                        stage="reactive_compact",
                    ),
                    "reactive_compact",
                )
            # The API refused this request as too long: resending it unchanged cannot help.
            self._fault_check("compact after the refusal", always=True)
            return self.view()


__all__ = ["SessionEngine"]
