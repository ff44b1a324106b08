"""The session engine's edge with its caller: what it adds, the view it gets back, the sizes.

``WindowedSession`` logs what the caller's list adds (``sync``, a new conversation as a
``Restart``), hands out the view (a copy, or the engine's own messages ``lent`` to the
format edge), and keeps the sizes the passes work against: the real prompt tokens of the
view returned last (``observe``), the window the server states (``use_window``, capping the
limit), the request's overhead, the summary's budget, and what is said when the view stays
over the limit (``_check_limit``) or cannot get under it at all (``_fixed_part``).

Invariant: every change here is a record (``_record``) or an event (``_emit``); one made
between calls (a calibration, a window, the overhead) is journaled with the next call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..engine import Message
from ..errors import CompactionFailed, SessionLocked
from ..keys import chain_id
from . import limits, thinking
from .journaled import JournaledSession
from .records import Calibrate, MessageRecord, Overhead, Restart, Setting, Window
from .state import clone

SUMMARY_SHARE = 0.15


class WindowedSession(JournaledSession):
    """The caller's side of the engine and the sizes it works against (``windowed.py``)."""

    # -- syncing with the caller -----------------------------------------------------------
    def sync(self, messages: Any) -> None:
        """Log what the caller added since the last call (``syncing.py``); validate only that."""
        self._say_window()
        self._binding(None)
        state = self.state
        for message, key in self.syncer.added(state, messages, self._restart):
            record = MessageRecord(state.n, chain_id(state.head, key), state.head, clone(message))
            state.add_message(record, key)
            # The content's JSON as counted, when the view shows the logged message itself
            # (not one rendered with a note: ``SessionState.add_message``).
            same = state.shown.messages[-1] is record.message
            text = state.shown.texts[-1] if same else None
            # Made directly: ``dataclasses.replace`` costs more than the record's own work.
            self.journal.add(
                MessageRecord(record.seq, record.id, record.parent, record.message, text)
            )
        self.syncer.accepted()

    def _binding(self, model: str | None) -> None:
        """Journal whether the model checks thinking blocks' prefixes, when the policy says
        it outright or the model's name tells it (``thinking.py``) and the session does not
        know yet; a session that learned it from the API keeps what it learned."""
        knob, known = self.policy.preserved_thinking, self.state.settings.get(thinking.SETTING)
        if isinstance(knob, bool):
            if (known is True) is not knob:
                self._record(Setting(thinking.SETTING, knob, "policy"))
            return
        if known is not None:
            return
        for name in (self.policy.model, model):
            if thinking.checks_prefix(name):
                self._record(Setting(thinking.SETTING, True, f"model {name}"))
                return

    def _restart(self) -> None:
        """The caller's list extends neither our view nor our log: a new conversation. The
        old one stays in the journal (nothing is lost); the view starts again. Not after
        another writer continued the session behind a failed call of ours: the caller's
        list is then a stale copy of that session, not a new conversation."""
        if self.state.conversation_len() == 0:
            return
        if self._moved:
            raise SessionLocked(
                f"session {self.session_id!r} was continued by another writer while this "
                "one's call failed, and the list given does not extend what it wrote; "
                "resume the session (Compactor(..., session=ID)) and continue from its view"
            )
        before = self.state.measure()
        self._record(Restart())
        self._emit(
            "session_restart", before, 0, (), "the caller's history no longer extends this one"
        )

    def view(self) -> list[Message]:
        """The request as it stands (after a resume: what the stopped process would send).
        It is the caller's: no object in it is the engine's, so editing it in place (moving
        a ``cache_control`` marker) changes neither the state nor the next view."""
        self._current()
        shown = self.state.shown.owned()
        out = list(shown) if self._lent else self._handout.copies(shown)
        self.recognizer.remember_view(out, self.state.shown.keys)
        self._returned = (len(out), self.state.estimate())
        return out

    def measure(self) -> int:
        return self.state.measure()

    # -- calibration -----------------------------------------------------------------------
    @property
    def limit(self) -> int:
        return self.policy.context_limit

    @contextmanager
    def lent(self) -> Iterator[None]:
        """Calls whose views the format edge converts (and copies) before the caller sees
        them: the engine lends its own messages, so the edge's memo of what it converted
        holds across calls."""
        self._lent = True
        try:
            yield
        finally:
            self._lent = False

    def observe(self, prompt_tokens: int) -> None:
        """Real prompt tokens of the view returned last (system and tools included)."""
        self._current()
        if prompt_tokens <= 0 or self._returned is None or self._returned[1] <= 0:
            return
        length, estimate = self._returned
        ratio = min(3.0, max(0.5, prompt_tokens / estimate))
        kinds = self.state.learn_kinds(length, prompt_tokens)
        # Journaled with the next call's records: a process killed before then has not sent
        # another request, and its caller observes the same usage again when it resends.
        self._record(Calibrate(ratio, (length, prompt_tokens), kinds))

    def use_window(self, tokens: int, source: str) -> None:
        """The model's window as the server states it (its own report, or a refusal's "maximum
        context length is N"): journaled (with the next call, as ``observe``'s calibration),
        it caps the limit from now on, here and in a resumed session; the next call says so
        (a ``window`` event, a warning when an explicit ``context_limit`` was above it)."""
        self._current()
        known = self.state.window
        if tokens < limits.MIN_WINDOW or (known is not None and known.tokens == tokens):
            return
        before = self.limit
        self._record(Window(tokens, source))
        self._window_said = (before, limits.window_note(self.given, self.state.window))

    def _say_window(self) -> None:
        said, self._window_said = self._window_said, None
        if said is not None:
            self._emit("window", said[0], self.limit, (), said[1])

    def overhead(self, tokens: int) -> None:
        self._current()
        if tokens != self.state.overhead:
            self._record(Overhead(tokens))

    @property
    def summary_budget(self) -> int:
        """Tokens a summary may take: ``summary_max_tokens``, and at most ``SUMMARY_SHARE``
        of the limit, so that in a small window the summary cannot fill what the
        summarizing was meant to free."""
        return max(100, min(self.policy.summary_max_tokens, int(SUMMARY_SHARE * self.limit)))

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
        return limits.too_big(self.state, size, self.limit, self.over_limit)

    def _fixed_part(self) -> None:
        error = limits.fixed_part_error(self.state, self.limit)
        if error is not None:
            raise CompactionFailed(error)
