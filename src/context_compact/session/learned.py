"""What a session learns about its model and its client, journaled so a resume keeps it.

A session keeps per-session decisions as ``Setting`` records (``state.settings``): whether
the model checks thinking blocks' prefixes (``thinking.py``), what the drop-in client asks
of the API when a prefix changed, the caller's system items, native compaction turned off.
These functions read and write them on a ``Session`` (``session.py``).

Invariant: a setting is written only when it differs from the session's, by type and value
(a ``True`` is not a ``1``), so reading a journal back yields what was decided, in order,
and an unchanged decision costs no record. A refusal or a drop the API reports is not a
setting: it leaves a pending strip that the next call makes (``engine.py``), when the
caller's list is still recognized.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from . import thinking
from .policy import SessionPolicy
from .records import Record, Setting
from .state import SessionState

Value = str | int | float | bool | None


class Session(Protocol):
    """What these functions need of a session (``session.Session`` has it)."""

    state: SessionState
    pending_strip: tuple[tuple[int, int] | None, str] | None

    @property
    def policy(self) -> SessionPolicy: ...

    def current(self) -> None: ...

    def record(self, record: Record) -> None: ...

    def call(self) -> AbstractContextManager[None]: ...


_UNSET = object()


def bind_thinking(session: Session, model: str | None) -> None:
    """Journal whether the model checks thinking blocks' prefixes, when the policy says it
    outright or the model's name tells it (``thinking.py``) and the session does not know
    yet; a session that learned it from the API keeps what it learned."""
    policy = session.policy
    knob, known = policy.preserved_thinking, session.state.settings.get(thinking.SETTING)
    if isinstance(knob, bool):
        if (known is True) is not knob:
            session.record(Setting(thinking.SETTING, knob, "policy"))
        return
    if known is not None:
        return
    for name in (policy.model, model):
        if thinking.checks_prefix(name):
            session.record(Setting(thinking.SETTING, True, f"model {name}"))
            return


def learn_model(session: Session, model: str | None) -> None:
    """The model a request names: under ``preserved_thinking="auto"`` a model known to check
    thinking blocks' prefixes turns the check on (journaled with the next call)."""
    session.current()
    bind_thinking(session, model)


def thinking_refused(session: Session, at: tuple[int, int] | None) -> None:
    """The API refused the view handed out last for a thinking block whose prefix changed
    (at ``(message, block)`` of that view, or somewhere: None): with the next call (the
    retry), every thinking block from there on leaves the view, for good; under ``"auto"``
    the session learns that its model checks."""
    session.current()
    session.pending_strip = (at, "refusal")


def thinking_dropped(session: Session, paths: list[tuple[int, int]]) -> None:
    """The API dropped thinking blocks of the view handed out last (a response's
    ``input_transformations``): the next view leaves them out at the same point, so the
    prefix the provider caches does not move again."""
    session.current()
    if paths:
        session.pending_strip = (min(paths), "dropped")


def keep_setting(session: Session, name: str, value: Value, source: str) -> None:
    """Journal a per-session setting, in a call of its own, when it differs from the
    session's (the same type and value), so a resume reads it back."""
    session.current()
    known = session.state.settings.get(name, _UNSET)
    if type(known) is not type(value) or known != value:
        with session.call():
            session.record(Setting(name, value, source))


def setting(session: Session, name: str) -> Value:
    """The session's newest value of setting ``name`` (None when it has none)."""
    session.current()
    return session.state.settings.get(name)


def set_prefix_mismatch(session: Session, behavior: str | None) -> None:
    """Journal what the drop-in client asks of the API when a thinking block's prefix
    changed (``"drop_block"``, or None for the API's default), so a resume keeps it. None
    is the API's default: a session that never set it needs no record of it."""
    session.current()
    if session.state.settings.get(thinking.DROP_SETTING) != behavior:
        with session.call():
            session.record(Setting(thinking.DROP_SETTING, behavior, "client"))


def prefix_mismatch(session: Session) -> str | None:
    value = setting(session, thinking.DROP_SETTING)
    return value if isinstance(value, str) else None
