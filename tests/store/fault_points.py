"""Faults at every point of a journal commit: a tracer that raises at the k-th line the
commit runs (its own and the store's, down to each write and each commit), in the calling
thread only. Used by ``test_commit_point.py``; kept free of pytest."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import context_compact.session.durable as durable
import context_compact.store as store_package

STORE_DIR = str(Path(store_package.__file__).parent)
ENGINE_DIRS = (STORE_DIR, str(Path(durable.__file__).parent))
COMMIT: CodeType = durable.SessionJournal.commit.__code__


class Points:
    """Counts the lines (or bytecodes) run inside a commit; with ``at``, raises ``error()``
    at that one."""

    def __init__(
        self,
        at: int | None = None,
        error: Callable[[], BaseException] | None = None,
        whole_call: bool = False,
        opcodes: bool = False,
    ):
        self.at, self.error = at, error
        # Every line the call runs in the engine and the stores, not only the commit's.
        self.whole_call = whole_call
        # Every bytecode instead of every line: where a signal's handler can also run (a
        # line may be cut between its call and the store of its result).
        self.step = "opcode" if opcodes else "line"
        self.count = 0
        self.fired = False
        self.first: dict[tuple[str, int], int] = {}  # each line run: when it first ran
        self._depth = 0  # frames of the commit on the stack
        # The line count when the store's ``append`` (called by the commit) returned.
        self.after_append: int | None = None

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == self.step:
            self.count += 1
            self.first.setdefault((frame.f_code.co_filename, frame.f_lineno), self.count)
            if self.at is not None and self.count == self.at and self.error is not None:
                self.fired = True
                raise self.error()
        elif event == "return" and frame.f_code is COMMIT:
            self._depth -= 1
        elif event == "return" and frame.f_code.co_filename.startswith(STORE_DIR):
            # The one store method the commit calls itself is the append (or its wrapper).
            caller = frame.f_back
            if caller is not None and caller.f_code is COMMIT:
                self.after_append = self.count
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        frame.f_trace_opcodes = self.step == "opcode"
        code = frame.f_code
        if code is COMMIT:
            self._depth += 1
            return self._local
        if self._depth and code.co_filename.startswith(STORE_DIR):
            return self._local
        if self.whole_call and code.co_filename.startswith(ENGINE_DIRS):
            return self._local
        return None

    def arm(self) -> None:
        """Trace this thread from now on (until ``disarm``, or the fault fires)."""
        sys.settrace(self._global)

    @staticmethod
    def disarm() -> None:
        sys.settrace(None)
