"""Which messages of the caller's list are new: recognized by content, validated, decided as data.

The caller may pass the list ``prepare`` returned plus what it appended, its own full
history, the same list again after a failed call, or a copy of any of these
(``keys.Recognizer``). Only what is new is validated, against the view's last message, and
may not reuse a tool_use id of the list it extends: the view's ids for a list built on our
view, every id of the conversation for the caller's own full history, the ids of the list
it passed last for a retry of that list. A list that extends neither view nor log is a new
conversation (``restart``), after the whole of it is checked: an invalid history is refused
before the session is touched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..invariants import InvalidHistory, check, check_appended
from ..keys import Match, Recognizer
from ..messages import Message, as_dicts
from .state import SessionState


class Sync:
    def __init__(self) -> None:
        self.recognizer = Recognizer()
        # The tool_use ids of the list the caller passed last (a retry is checked against them).
        self._input_ids: set[str] = set()
        self._taken: set[str] | None = None
        self.settled = False  # the last list given was logged whole (``accepted``)

    def added(
        self, state: SessionState, messages: list[Message], restart: Callable[[], None]
    ) -> list[tuple[Message, str]]:
        """The messages ``messages`` adds to ``state``'s log, with their content keys
        (``restart()`` first when it starts a new conversation); ``InvalidHistory`` names
        what is wrong. Call ``accepted`` once they are logged."""
        self.settled = False
        if not isinstance(messages, list):
            raise InvalidHistory(check(messages))
        try:
            return self._added(state, messages, restart)
        except BaseException:
            self.recognizer.refused()
            raise

    def _added(
        self, state: SessionState, messages: list[Message], restart: Callable[[], None]
    ) -> list[tuple[Message, str]]:
        recognizer = self.recognizer
        try:
            match = recognizer.match(
                messages, state.shown.keys, state.conversation_len(), state.head
            )
            keys = recognizer.keys(match.start if match is not None else 0)
        except (RecursionError, ValueError, TypeError):
            # Hashing met a value the JSON encoder cannot write (nested too deep for its stack,
            # an int longer than Python writes as text, a cycle, keys of mixed types that its
            # sort_keys cannot order): check() names it.
            violations = check(as_dicts(messages))
            if not violations:
                raise
            raise InvalidHistory(violations) from None
        if match is None:
            violations = check(as_dicts(messages))
            if violations:
                raise InvalidHistory(violations)
            restart()
            match = Match(0, "view")
        if match.via == "view":
            ids = state.shown.use_ids
        elif match.via == "log":
            ids = state.log_ids(as_dicts(messages[: match.start]))
        else:
            ids = self._input_ids
        new = as_dicts(messages[match.start :])
        if new:
            prev = state.view[-1] if state.view else None
            violations = check_appended(prev, new, ids)
            if violations:
                offset = len(messages) - len(new)
                raise InvalidHistory([replace(v, index=v.index + offset) for v in violations])
        # The set itself, not a copy: the new ids are added to it as they are logged, and a
        # summary replaces the view's set rather than editing it, so it stays the list's ids.
        self._taken = ids
        return list(zip(new, keys, strict=True))

    def keep_input(self, other: Sync) -> None:
        """Remember the list ``other`` was given last, when its call logged the whole of it
        (``settled``) and that call's records are in the journal: a retry repeats it. A
        call cut short while logging leaves nothing to remember: the log places the retry."""
        if other.settled:
            self._input_ids = other._input_ids
            self.recognizer.input = other.recognizer.input

    def accepted(self) -> None:
        """The new messages are logged: the list is the one to recognize next time."""
        if self._taken is not None:
            self._input_ids = self._taken
            self.recognizer.accept(keyed=True)
            self.settled = True
            self._taken = None


__all__ = ["Sync"]
