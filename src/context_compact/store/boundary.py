"""Where a store backend's driver errors become ours: once, in an explicit block.

``map_errors(translate)`` is a context manager: an exception leaving its block that
``translate(error)`` recognizes as its driver's (``sqlite3.Error``, ``psycopg.Error``) leaves
as the one ``translate`` returns (``StoreRefused``, ``ServerUnavailable``, ``CorruptStore``),
chained to it (``__cause__``); anything else (our own errors, ``OSError`` of the files under
root, ``KeyboardInterrupt``, a bug) leaves as it is. A backend makes one per database, its
translation bound to the file or server it names, and every method of its parts that reaches
the driver runs inside it (``with self.db.mapped:``). Blocks nest: an inner one has translated
already, an outer one passes ours through. Inside a block the driver's exceptions stay what
they are: the backend may catch and handle them (a lock to wait on, a damaged index to
rebuild) before they reach its end.

The block is a plain ``try``/``except`` (no generator): a few hundred nanoseconds of a turn's
append. What a method returns is passed as it is: the stores' ``records`` and ``search`` read
everything inside their block, so no driver call is left to happen in an iterator.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

Translate = Callable[[BaseException], BaseException | None]
"""``translate(error)``: ours for a driver's ``error`` (None: not the driver's)."""


class map_errors:
    """The block (see the module docstring); one object serves any number of blocks, nested
    or in several threads."""

    __slots__ = ("translate",)

    def __init__(self, translate: Translate) -> None:
        self.translate = translate

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if error is None or not isinstance(error, Exception):
            return
        ours = self.translate(error)
        if ours is not None:
            raise ours from error


__all__ = ["Translate", "map_errors"]
