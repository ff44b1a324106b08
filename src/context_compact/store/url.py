"""A store chosen by URL: ``store_from_url``, and what the CLI's ``--store`` /
``CC_STORE_URL`` may name (``check``; the CLI holds its choice itself, ``cli/store_choice.py``).

Forms (the first two as SQLAlchemy writes them):

    sqlite:///relative/sessions.db   sqlite:////absolute/sessions.db   SqliteStore
    file:///absolute/dir             file:relative/dir                  FileStore
    memory:                                                             MemoryStore
    postgresql://user@host:5432/db?schema=name   (or postgres://)       PostgresStore

``root`` is where the files the view names go (the work directory for the CLI); for
``sqlite`` it defaults to the database's folder, for ``postgresql`` to the current directory.
A ``file`` store keeps everything under its one folder, the URL's: ``root`` does not move it
(the CLI gives the agent's tools that folder to read).
``schema`` is ours, taken off the URL before psycopg sees it (default ``context_compact``).
Anything else is a ``ValueError`` listing these forms.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from .base import Store
from .files import FileStore
from .memory import MemoryStore
from .sqlite import SqliteStore

ENV = "CC_STORE_URL"
FORMS = (
    "sqlite:///PATH (relative) or sqlite:////PATH (absolute), file:///DIR, memory:, "
    "postgresql://[USER@]HOST[:PORT]/DB[?schema=NAME]"
)


def store_from_url(url: str, root: str | os.PathLike[str] | None = None, **options: Any) -> Store:
    """The store ``url`` names (see the module docstring); ``options`` go to its class."""
    if not isinstance(url, str):
        raise TypeError(f"a store URL is a string, not {type(url).__name__}")
    scheme, _, rest = url.partition(":")
    scheme = scheme.lower()
    if scheme == "memory" and rest in ("", "//"):
        return MemoryStore(str(root)) if root is not None else MemoryStore()
    if scheme == "sqlite" and rest.startswith("///") and len(rest) > 3:
        return SqliteStore(rest[3:], root=root, **options)
    if scheme == "file" and rest:
        path = urlsplit(url).path if rest.startswith("//") else rest
        if path:
            return FileStore(path, **options)
    if scheme in ("postgresql", "postgres") and rest.startswith("//"):
        from .postgres import PostgresStore

        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schema = [value for key, value in query if key == "schema"]
        if schema:
            options.setdefault("schema", schema[-1])
        kept = urlencode([(key, value) for key, value in query if key != "schema"])
        return PostgresStore(parts._replace(query=kept).geturl(), root=root, **options)
    raise ValueError(f"not a store URL: {url!r} (one of: {FORMS})")


def check(url: str) -> None:
    """``ValueError`` (as ``store_from_url`` says it) unless ``url`` has one of the forms;
    nothing is opened."""
    scheme, _, rest = url.partition(":")
    scheme = scheme.lower()
    ok = (
        (scheme == "memory" and rest in ("", "//"))
        or (scheme == "sqlite" and rest.startswith("///") and len(rest) > 3)
        or (scheme == "file" and bool(urlsplit(url).path if rest.startswith("//") else rest))
        or (scheme in ("postgresql", "postgres") and rest.startswith("//"))
    )
    if not ok:
        raise ValueError(f"not a store URL: {url!r} (one of: {FORMS})")
    if scheme in ("postgresql", "postgres"):
        from .postgres.base import url_refusal
        from .postgres.schema import check_schema

        query = parse_qsl(urlsplit(url).query, keep_blank_values=True)
        for key, value in query:
            if key == "schema":
                check_schema(value)
        kept = urlencode([(key, value) for key, value in query if key != "schema"])
        wrong = url_refusal(urlsplit(url)._replace(query=kept).geturl())
        if wrong is not None:
            raise ValueError(wrong)


def sqlite_file(url: str | None) -> Path | None:
    """The database file an ``sqlite:///`` URL names (relative to the current directory, as
    ``store_from_url`` opens it), else None."""
    if not url or not url.lower().startswith("sqlite:"):
        return None
    rest = url.partition(":")[2]
    return Path(rest[3:]).resolve() if rest.startswith("///") and len(rest) > 3 else None


__all__ = ["ENV", "check", "sqlite_file", "store_from_url"]
