"""A store that refuses a write in the middle of a call: skip the rest, keep everything in view.

A pass writes its copies before it returns its edit, so a write the store refuses (disk
full, read-only) leaves no edit behind: what the pass would have removed stays in the view.
The call's later passes are skipped and a ``store_error`` event says so. At the end of the
call the view is returned while it fits the limit; over it (and always for a call that was
asked to compact) ``StoreUnavailable`` names the error and the size.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import StoreUnavailable
from ..store.base import NOT_REFUSED, STORE_ERRORS
from .durable import describe


class Faults:
    def __init__(self) -> None:
        self.error: BaseException | None = None

    def guarded(
        self,
        run: Callable[[], None],
        stage: str,
        size: Callable[[], int],
        warn: Callable[[int, str], None],
    ) -> None:
        """Run a pass unless the store already refused a write in this call."""
        if self.error is not None:
            return
        try:
            run()
        except NOT_REFUSED:
            raise
        except STORE_ERRORS as error:
            self.error = error
            note = (
                f"{stage} skipped: the store refused a write ({describe(error)}); "
                "everything stays in view"
            )
            warn(size(), note)

    def check(self, doing: str, always: bool, size: int, limit: int) -> None:
        """After a refused write: fine while the view fits (the warning event was sent), else
        (or when the call was asked to compact) a clear error."""
        error = self.error
        if error is None or not (always or size > limit):
            return
        raise StoreUnavailable(
            f"could not {doing}: the store refused a write ({describe(error)}); nothing "
            f"left the context, which holds {size:,} tokens (limit {limit:,}). Free "
            "space or fix the store's permissions, then retry."
        ) from error


__all__ = ["Faults"]
