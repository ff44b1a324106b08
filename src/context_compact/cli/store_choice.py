"""The store one CLI invocation works on: ``--store``, else ``CC_STORE_URL``, else SQLite in
the work directory (``<workdir>/.context-compact/sessions.db``).

    select(url)               # the group's callback, or a command given its own --store
    store = cli_store(workdir)

The choice is held by the invocation's click context (``ctx.meta``, shared by the group and
its command), not by a module: two invocations in one process (tests, a program that calls
``main``) never see each other's store, and nothing outside a command has one. Outside a
click context ``selected()`` reads only the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..store.base import Store
from ..store.sqlite import workdir_store
from ..store.url import ENV, store_from_url

KEY = "context_compact.store_url"


def select(url: str | None) -> None:
    """This invocation's ``--store`` (None: ``CC_STORE_URL``, else the work directory's
    SQLite)."""
    click.get_current_context().meta[KEY] = url


def selected() -> str | None:
    """The store URL this invocation was given (``--store``, else ``CC_STORE_URL``), if any."""
    context = click.get_current_context(silent=True)
    url = context.meta.get(KEY) if context is not None else None
    return url or os.environ.get(ENV) or None


def cli_store(workdir: str | os.PathLike[str]) -> Store:
    """The agent CLI's store: ``--store``, else ``CC_STORE_URL``, else SQLite in
    ``<workdir>/.context-compact/sessions.db``; files under the work directory either way."""
    url = selected()
    if url:
        return store_from_url(url, root=Path(workdir))
    return workdir_store(workdir)


__all__ = ["KEY", "cli_store", "select", "selected"]
