"""recall: search a whole session log and get the original content back, paged, in one call.

    page = recall(store, session_id, "TypeError")            # text search, case-insensitive
    page = recall(store, session_id, "/work/.task_outputs/tool-results/sha256-...txt")
    page = recall(store, session_id, "message 412")          # one logged message by position
    page = recall(store, session_id, "TypeError", offset=page.next_offset)

The query is, in this order: a path the store issued (its text), ``message N`` or ``#N`` (the
original message at position N of the session), or text, found in every logged message (text
blocks, tool inputs as written, tool results, whatever their size or whether they are still in
view); a matched tool call comes back with its result (the newest ``PAIRED_CALLS``; an older
one names its id, which recalls the result). When the page cannot hold every hit whole, a
text hit in a message longer than a window shows the match, not the message's start:
``WINDOW`` characters either side of each match (overlapping windows merged, the first
``WINDOWS`` of a message), each under a header naming
the message, the characters it shows and how to read the whole message from there
(``recall("message N", offset=K)``, K the window's first character in that answer). A file the
store issued but someone deleted is rebuilt from the log's originals (the results an edit saved
there, the messages a summary archived there), else the error says what happened. The answer is
the original content, never a preview, cut into pages of ``limit`` characters; ``next_offset``
continues. Only the session's own journal and its own files are read: a path that appears
inside some tool output is not a reference, and a file the store issued for another session
(its index, the results and archives that index lists) is not this session's, even when its
path is known (``own_paths``: a store shared by conversations is shared storage, never shared
reading). Every header of an answer (a file, a
message, a call's result) ends with the answer's boundary token (``quoting.boundary`` of all
the content it shows), so text inside a logged message cannot forge one.

``Session.recall`` and ``Session.recover`` (``session.py``) are both over its own session.

``recover(store, session, path)`` is the same rebuilding for a file tool (the agent's
``read_file``): the content of a path the store issued, as bytes for a media file (an image
saved when it left the view is found again among the logged messages by its content
address), as text otherwise; None for a path the store did not issue.
"""

from __future__ import annotations

import os
import re

from ..engine import PAGE, RecallPage
from ..media import decoded, describe
from ..messages import Block, Message, block_type, blocks, readable_text
from ..quoting import boundary, name_of
from ..sizing import to_json
from ..store.base import Store, search
from ..store.codec import media_digest, message_text, sha256
from .exports import media_blocks
from .records import (
    BlockEdit,
    EventRecord,
    MessageRecord,
    NativeEdit,
    SummaryEdit,
    found_messages,
    journal,
    logged_messages,
)

PAIRED_CALLS = 16
"""Matched tool calls, the newest, that a text recall returns with their results."""
WINDOW = 400
"""Characters a text hit shows on each side of its match."""
WINDOWS = 3
"""Windows a text hit shows of one message; more matches are counted, one recall away."""
_POSITION = re.compile(r"^\s*(?:message\s+|#)(\d+)\s*$", re.IGNORECASE)
_INDEX_LINE = re.compile(r"^- [a-z_-]+: (.*?)(?: lines \d+-\d+)? :: ", re.MULTILINE)
"""The path on a line of a session's index file (``markers.index_line``; the text after
`` :: `` may hold a tool's words, so only the path before it is read)."""
_TOPS = ("/.task_outputs/", "/.transcripts/")


def index_name(session: str) -> str:
    """The ``append_file`` name of a session's index of everything that left its view."""
    return f"sessions/{session}.index.md"


def _tail(path: str) -> str | None:
    """The part of ``path`` the store's layout names (``.transcripts/...``), whatever root
    it is under (a PostgreSQL store's worker roots differ): how two spellings of one issued
    file compare."""
    full = os.path.normpath("/" + path.replace(os.sep, "/")) if isinstance(path, str) else ""
    at = max(full.rfind(top) for top in _TOPS)
    return None if at < 0 else full[at + 1 :]


def own_paths(store: Store, session: str) -> set[str]:
    """The files of ``session`` (as ``_tail`` forms): its index file, every path its edits
    and events name, and every path its index lists. Never a path read from a message or a
    summary's text, which a model or a tool's output may have written."""
    index = os.path.join(store.root, ".transcripts", index_name(session))
    named: set[str] = {index}
    for record in journal(store.records(session), f"session {session}"):
        if isinstance(record, BlockEdit):
            named.update(record.paths)
        elif isinstance(record, SummaryEdit):
            named.add(record.archive)
            named.update(path for _, path in record.folded)
        elif isinstance(record, NativeEdit):
            named.update(p for p in (record.archive, record.index) if p)
        elif isinstance(record, EventRecord):
            named.update(record.paths)
    try:
        listed = store.read_text(index) if store.issued(index) else ""
    except (FileNotFoundError, KeyError, ValueError):
        listed = ""
    named.update(_INDEX_LINE.findall(listed))
    return {tail for tail in map(_tail, named) if tail is not None}


def owned(store: Store, session: str, path: str) -> bool:
    """Whether ``path`` is a file the store issued for ``session`` (see ``own_paths``)."""
    tail = _tail(path)
    return tail is not None and store.issued(path) and tail in own_paths(store, session)


class Header:
    """A header line of an answer, given the answer's token when the answer is written."""

    def __init__(self, rule: str, label: str) -> None:
        self.rule, self.label = rule, label

    def line(self, token: str) -> str:
        return f"{self.rule} {self.label} · {token} {self.rule}"


Piece = Header | str
"""One line-run of an answer: a header of ours, or content shown as it is."""


def written(hits: list[list[Piece]], between: str) -> str:
    """The answer's text: its pieces a line apart, its hits ``between`` apart, every header
    carrying the token that none of the content holds."""
    token = boundary(*(p for hit in hits for p in hit if isinstance(p, str)))
    return between.join(
        "\n".join(p.line(token) if isinstance(p, Header) else p for p in hit) for hit in hits
    )


def _message_header(rule: str, seq: int, message: Message) -> Header:
    return Header(rule, f"message {seq} ({name_of(message.get('role'))})")


def _rebuilt(store: Store, session: str, path: str) -> list[Piece] | None:
    """What the session's log holds of a file it wrote: the originals of the results an edit
    saved at ``path``, or of the messages a summary archived there; None if none did."""
    blocks_at: set[tuple[int, int]] = set()
    ranges: list[tuple[int, int]] = []
    records = list(journal(store.records(session), f"session {session}"))
    for record in records:
        if isinstance(record, SummaryEdit | NativeEdit) and record.archive == path:
            ranges.append((record.start, record.cut))
        elif isinstance(record, BlockEdit):
            blocks_at.update((b.seq, b.block) for b in record.blocks if b.path == path)
    if not blocks_at and not ranges:
        return None
    parts: list[Piece] = []
    for record in records:
        if not isinstance(record, MessageRecord):
            continue
        seq, message = record.seq, record.message
        if any(lo <= seq < hi for lo, hi in ranges):
            parts += [_message_header("---", seq, message), message_text(message)]
        for bi, block in enumerate(blocks(message)):
            if (seq, bi) in blocks_at:
                text = readable_text(block)
                parts.append(text if text is not None else to_json(block.get("content")))
    return parts


def _media(store: Store, session: str, path: str, digest: str) -> bytes | None:
    """The bytes of a media file the store issued, from the log's messages if it is gone."""
    try:
        return store.read_bytes(path)
    except FileNotFoundError:
        pass
    # The store names a media file by the sha256 of its bytes: find the logged block.
    for record in logged_messages(store.records(session)):
        for _, block in media_blocks(record.message):
            source = block.get("source")
            data = decoded(source.get("data")) if isinstance(source, dict) else None
            if data is not None and sha256(data).startswith(digest):
                return data
    return None


def recover(store: Store, session: str, path: str) -> str | bytes | None:
    """What ``path`` holds, rebuilt from the session's log if the file is gone (see above);
    None when the store did not issue it or the log does not hold it."""
    if not owned(store, session, path):
        return None
    digest = media_digest(path)
    if digest is not None:
        return _media(store, session, path, digest)
    try:
        return store.read_text(path)
    except FileNotFoundError:
        rebuilt = _rebuilt(store, session, path)
        return None if rebuilt is None else written([rebuilt], "")


def _file(store: Store, session: str, path: str) -> list[Piece]:
    digest = media_digest(path)
    if digest is not None:
        data = _media(store, session, path, digest)
        if data is None:
            raise FileNotFoundError(f"{path} is gone and this session's log does not hold it")
        return [Header("===", path), f"[media file: {describe(data)}; read_file shows text only]"]
    try:
        return [Header("===", path), store.read_text(path)]
    except FileNotFoundError:
        # Deleted behind our back: the log still holds the originals the file was made of.
        rebuilt = _rebuilt(store, session, path)
        if rebuilt is None:
            raise FileNotFoundError(
                f"{path} was written by this store but is gone (deleted outside "
                "context-compact), and this session's log does not hold its content; "
                "search the log by text instead"
            ) from None
        return [Header("===", f"{path} (file missing; rebuilt from this session's log)"), *rebuilt]


def _matches(store: Store, session: str, query: str) -> tuple[list[list[Piece]], list[list[Piece]]]:
    """The hits, with text hits as whole messages and as windows round their matches (one
    search serves both)."""
    if owned(store, session, query.strip()):
        found = [_file(store, session, query.strip())]
        return found, found
    position = _POSITION.match(query)
    if position is not None:
        for record in logged_messages(store.records(session)):
            if record.seq == int(position.group(1)):
                found = [_hit(record.seq, record.message)]
                return found, found
        return [], []
    # Text: the store's search (an index where it has one; the same answer as a scan).
    hits = list(found_messages(search(store, session, query)))
    extras: list[list[Piece]] = [[] for _ in hits]
    matched = {seq for seq, _ in hits}
    calls = [i for i, (_, message) in enumerate(hits) if _uses(message)]
    # A matched call's result comes back with it: asked what a command gave, the answer is
    # the result, which seldom repeats the command. Each result is one more search, so only
    # the newest PAIRED_CALLS calls get theirs; an older one names its id, one recall away.
    for i in calls[-PAIRED_CALLS:]:
        seq, message = hits[i]
        for use in _uses(message):
            result = _result_of(store, session, str(use.get("id")), seq, matched)
            if result is not None:
                extras[i] += result
    for i in calls[:-PAIRED_CALLS]:
        ids = ", ".join(name_of(use.get("id")) for use in _uses(hits[i][1]))
        extras[i].append(Header("---", f"its result: recall {ids}"))
    whole = [_hit(seq, m) + extra for (seq, m), extra in zip(hits, extras, strict=True)]
    windows = [
        _text_hit(seq, m, query) + extra for (seq, m), extra in zip(hits, extras, strict=True)
    ]
    return whole, windows


def _hit(seq: int, message: Message) -> list[Piece]:
    return [_message_header("===", seq, message), message_text(message)]


def _windows(text: str, query: str) -> list[tuple[int, int]]:
    """The spans of ``text`` a hit shows: ``WINDOW`` characters round each match of
    ``query`` (case-insensitive), overlapping ones merged; none when the match is only in a
    call's arguments as written (``message_text`` shows them escaped)."""
    spans: list[tuple[int, int]] = []
    for match in re.finditer(re.escape(query), text, re.IGNORECASE):
        lo, hi = max(0, match.start() - WINDOW), min(len(text), match.end() + WINDOW)
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], hi)
        else:
            spans.append((lo, hi))
    return spans


def _text_hit(seq: int, message: Message, query: str) -> list[Piece]:
    """A text hit: the whole message when it is short, else the windows round its matches."""
    text = message_text(message)
    if len(text) <= 2 * WINDOW + len(query):
        return _hit(seq, message)
    spans = _windows(text, query) or [(0, 2 * WINDOW)]
    # Where character 0 of the message is in the answer to "message N": after its header.
    whole = _message_header("===", seq, message).line(boundary(text))
    role = name_of(message.get("role"))
    pieces: list[Piece] = []
    for lo, hi in spans[:WINDOWS]:
        label = (
            f"message {seq} ({role}), characters {lo}-{hi} of {len(text)}; whole message: "
            f'recall("message {seq}", offset={len(whole) + 1 + lo})'
        )
        pieces += [Header("===", label), text[lo:hi]]
    if len(spans) > WINDOWS:
        more = len(spans) - WINDOWS
        pieces.append(
            Header("---", f'{more} more match(es) in message {seq}: recall("message {seq}")')
        )
    return pieces


def _result_of(
    store: Store, session: str, use_id: str, after: int, matched: set[int]
) -> list[Piece] | None:
    """The result of call ``use_id`` (made at message ``after``), found by its id, unless its
    message is itself a hit."""
    for seq, message in found_messages(search(store, session, use_id)):
        if seq <= after:
            continue
        for block in blocks(message):
            if block_type(block) == "tool_result" and str(block.get("tool_use_id")) == use_id:
                if seq in matched:
                    return None
                shown = readable_text(block)
                shown = shown if shown is not None else to_json(block.get("content"))
                return [Header("---", f"its result, message {seq}"), shown]
    return None


def _uses(message: Message) -> list[Block]:
    return [b for b in blocks(message) if block_type(b) == "tool_use"]


def recall(
    store: Store, session: str, query: str, *, offset: int = 0, limit: int = PAGE
) -> RecallPage:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("recall needs a non-empty query: text, a path, or 'message N'")
    if offset < 0 or limit <= 0:
        raise ValueError(f"recall: offset must be >= 0 and limit > 0, got {offset}, {limit}")
    # Whole messages when the page holds them all (one recall gives the originals back);
    # else windows round the matches, so a needle deep in a long result is on the first page.
    hits, windows = _matches(store, session, query)
    whole = written(hits, "\n\n")
    if offset + limit < len(whole):
        whole = written(windows, "\n\n")
    return RecallPage(query, len(hits), whole[offset : offset + limit], offset, len(whole))


__all__ = ["PAGE", "RecallPage", "message_text", "recall", "recover"]
