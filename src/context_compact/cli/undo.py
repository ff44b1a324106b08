"""``context-compact undo ID``: take back the newest compaction of a stored session.

The session is opened under the policy it was written with (its meta), and
``Compactor.undo`` appends an undo record to its journal: the view is what it would have been
without that compaction (a summary or a clearing), plus what came since. The undone
compaction stays in the log and in ``inspect``. Refused, changing nothing, when there is none
or when the view would be over the limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import UndoRefused
from .outcome import dumps
from .sessions import json_option, need_session, open_store, workdir_option
from .store_errors import guards_store

if TYPE_CHECKING:
    from ..store.meta import SessionMeta


def stored_policy(meta: SessionMeta) -> Any:
    """The default policy the session was written with, as its meta recorded it."""
    from ..policy import stored_policy as stored

    try:
        return stored(meta)
    except ValueError as error:
        raise click.ClickException(
            f"the session's stored policy is not usable here: {error}"
        ) from None


@click.command("undo")
@click.argument("session")
@workdir_option
@json_option
@guards_store
def undo_command(session: str, workdir: Path | None, as_json: bool) -> None:
    """Take back the newest compaction of SESSION (a summary or a clearing): the next view is
    as if it had not happened, plus what came since. The undone compaction stays in the log."""
    from ..compactor import Compactor

    store = open_store(workdir)
    try:
        meta = need_session(store, session)
        sid = meta.id
        compactor = Compactor(stored_policy(meta), store, session=sid)
        before = len(compactor.view())
        try:
            view = compactor.undo()
        except UndoRefused as error:
            raise click.ClickException(str(error)) from None
        event = compactor.events[-1]
    finally:
        store.close()
    if as_json:
        data = {"session": sid, "note": event.note, "view_messages": len(view)}
        data |= {"tokens_before": event.before, "tokens_after": event.after}
        click.echo(dumps(data, indent=1))
    else:
        click.echo(
            f"session {sid}: {event.note}; the view now holds {len(view)} messages "
            f"(was {before}), {event.after:,} tokens (was {event.before:,})"
        )


__all__ = ["stored_policy", "undo_command"]
