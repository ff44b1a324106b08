"""The inspector's one write: take back the newest compaction of a session, as
``context-compact undo ID`` does.

The session is opened under the policy it was written with (``policy.stored_policy``) and
``Compactor.undo`` appends an undo record to its journal: nothing is deleted, the undone
compaction stays in the log and in the page (marked undone). Refused, changing nothing, when
there is no compaction left to undo, when the view would be over the limit, or when another
process holds the session (an agent writing it): one line, as an ``InspectorError``.

Who may ask is ``guard.post_refusal``'s business: the page's own origin, its header and the
server's token.
"""

from __future__ import annotations

from typing import Any

from ..errors import InspectorError, SessionLocked, UndoRefused
from ..store.base import Store
from ..store.meta import meta_of


def undo_newest(store: Store, session: str) -> dict[str, Any]:
    """Undo the newest compaction of ``session``: what was undone and the view's size."""
    from ..compactor import Compactor
    from ..policy import stored_policy

    meta = meta_of(store, session)
    if meta is None:
        raise InspectorError(f"no session {session!r} in this store")
    try:
        policy = stored_policy(meta)
    except ValueError as error:
        raise InspectorError(f"the session's stored policy is not usable here: {error}") from None
    try:
        compactor = Compactor(policy, store, session=meta.id)
        view = compactor.undo()
    except (UndoRefused, SessionLocked) as error:
        raise InspectorError(str(error)) from None
    event = compactor.events[-1]
    return {
        "session": session,
        "note": event.note,
        "tokens_before": event.before,
        "tokens_after": event.after,
        "view_messages": len(view),
    }


__all__ = ["undo_newest"]
