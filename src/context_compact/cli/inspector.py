"""The click side of the inspector: ``inspect ID --serve|--html FILE`` and ``ui``.

The inspector itself (``http.server`` among its imports) loads only when one of them runs.
Bad input is one line, no traceback: no store in the work directory or an unknown session id
(usage errors, exit 2), a store that cannot be read or a port already taken (exit 1).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ..store.base import STORE_ERRORS
from .compact import replay_policy
from .sessions import need_session, open_store, workdir_option

DEFAULT_PORT = 8765
port_option = click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port on 127.0.0.1 for --serve and ui (0: any free port).",
)


@contextmanager
def readable_store(workdir: Path | None) -> Iterator[Any]:
    """The work directory's store, with its read failures as one line."""
    from ..inspector import InspectorError

    try:
        store = open_store(workdir)
    except STORE_ERRORS as error:
        raise click.ClickException(f"cannot read the sessions store: {error}") from None
    try:
        yield store
    except STORE_ERRORS as error:
        raise click.ClickException(f"cannot read the sessions store: {error}") from None
    except InspectorError as error:
        raise click.ClickException(str(error)) from None
    finally:
        store.close()


def inspect_page(
    workdir: Path | None, session: str, serve: bool, port: int, html: Path | None
) -> None:
    """``inspect SESSION --html FILE`` and/or ``--serve``."""
    from ..inspector import Inspector, write_report

    with readable_store(workdir) as store:
        session = need_session(store, session).id
        if html is not None:
            try:
                size = write_report(store, session, html, replay_policy)
            except OSError as error:
                raise click.ClickException(f"cannot write {html}: {error.strerror}") from None
            click.echo(f"wrote {html} ({size:,} bytes): one file, opens offline")
        if serve:
            inspector = Inspector(store, session, compare=replay_policy)
            inspector.inspection(session)  # replayed once, before the page asks
            _serve(inspector, port, f"session {session}")


def _serve(inspector: Any, port: int, what: str) -> None:
    from ..inspector import InspectorServer

    try:
        server = InspectorServer(inspector, port)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {port} on 127.0.0.1 is in use: pick another with --port (0: any free one)"
            ) from None
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {error}") from None
    click.echo(f"inspector for {what} at {server.url} (Ctrl-C stops it)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@click.command("ui")
@workdir_option
@port_option
def ui_command(workdir: Path | None, port: int) -> None:
    """A page on 127.0.0.1 showing every session of the work directory: view tokens per
    request, each request's view, search, events, two policies side by side."""
    from ..inspector import Inspector

    with readable_store(workdir) as store:
        store.list_sessions()
        _serve(Inspector(store, compare=replay_policy), port, f"the sessions of {store.root}")


__all__ = ["DEFAULT_PORT", "inspect_page", "port_option", "ui_command"]
