"""A file we persisted, read back whole: shown in pages the view can hold, never persisted
again as a marker of itself.

A result too large for the view is saved under its content address and replaced by a preview
naming the file (``passes.persist``). A model that opens that file with a read tool that
returns whole files (no offset, no limit) gets the same text back, which the same pass would
save under the same address and replace by the same preview: a loop that never shows what
was elided. So a new result whose text *is* a file the store issued (recognized by its content
address, before anything is saved, and named in the view before it) becomes one page instead:

* the start of the text, as much as the view holds for one result (cut at a line end);
* the rest saved as a file of its own (content-addressed too), named as the next page: reading
  it whole gives the next page the same way, and the last page, small enough, comes back whole;
* the text's last lines, so its end is seen on the first read back.

Invariants: a page only ever names paths the store returned; the text shown is the file's own
(quoted, so it cannot forge our lines); nothing is lost (the whole stays at its address, the
rest at its own).
"""

from __future__ import annotations

import os

from .. import markers
from ..messages import Message
from ..store.base import Store
from ..store.codec import blob_rel, encode, sha256


def persisted_path(store: Store, text: str) -> str | None:
    """The path of the file the store holds with exactly ``text`` (None: it holds none)."""
    path = os.path.join(store.root, blob_rel(sha256(encode(text))))
    return path if store.issued(path) else None


def named_before(view: list[Message], upto: int, path: str) -> bool:
    """Whether the model was shown ``path`` before position ``upto`` of its ``view`` (by a
    marker, a page, an index it read, or its own call that asked for it). Only then is a
    result with that file's text a read-back: a copy saved by an attempt that failed before
    its edit was journaled names nothing in the view, and its retry persists as the first
    attempt would have."""
    return any(path in repr(message) for message in view[:upto])


def line_cut(text: str, at: int) -> int:
    """Where a page of at most ``at`` characters of ``text`` ends: after the last line end
    in its second half, else at ``at`` itself."""
    end = text.rfind("\n", at // 2, at)
    return at if end < 0 else end + 1


def tail_lines(text: str, chars: int) -> str:
    """The last whole lines of ``text`` within ``chars`` (at least its last line, cut to
    ``chars`` from its end when that line alone is longer)."""
    body = text.rstrip("\n")
    start = body.rfind("\n", 0, max(0, len(body) - chars))
    tail = body[start + 1 :]
    return tail if len(tail) <= chars else tail[-chars:]


def page(store: Store, path: str, text: str, page_chars: int, tail_chars: int) -> str:
    """The view of ``text`` (the file at ``path``) read back whole: its first page, the file
    holding the rest, its last lines."""
    end = line_cut(text, max(1, page_chars))
    rest = store.save_blob(text[end:])
    return markers.persisted_page(path, text[:end], len(text), rest, tail_lines(text, tail_chars))


__all__ = ["line_cut", "named_before", "page", "persisted_path", "tail_lines"]
