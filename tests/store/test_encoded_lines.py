"""The archive's JSONL is the same bytes, and a journal batch the same records, whether or
not the contents' JSON was made before; a journal line written in pieces reaches the file
whole."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact.session.records import MessageRecord, as_json
from context_compact.sizing import TokenCounter, to_json
from context_compact.store.codec import EncodedMessages, dumps, dumps_records, jsonl
from context_compact.store.disk import append_bytes

# ASCII texts as often as any: a batch builds a record from its content's JSON only then.
text = st.text(st.characters(codec="utf-8"), max_size=30) | st.text(
    st.characters(codec="ascii"), max_size=30
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=10,
)
blocks = st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_result"]), "x": json_values})
contents = text | st.lists(blocks, max_size=3)
plain_messages = st.builds(
    lambda role, content: {"role": role, "content": content},
    st.sampled_from(["user", "assistant"]),
    contents,
)
other_layouts = st.one_of(
    st.builds(lambda c, r: {"content": c, "role": r}, contents, st.sampled_from(["user"])),
    st.builds(lambda r, c, n: {"role": r, "content": c, "name": n}, text, contents, text),
    st.builds(lambda r: {"role": r, "note": "no content"}, text),
)


@given(st.lists(st.one_of(plain_messages, other_layouts), max_size=6), st.data())
def test_jsonl_writes_the_same_bytes_with_or_without_the_contents_made_before(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    known = [
        to_json(m["content"]) if "content" in m and data.draw(st.booleans()) else None
        for m in messages
    ]
    assert jsonl(EncodedMessages(messages, known)) == jsonl(messages)


def test_a_count_gives_its_text_only_when_it_is_the_content_s_own_json() -> None:
    counter = TokenCounter()
    message = {"role": "user", "content": [{"type": "text", "text": "héllo  wörld 42"}]}
    tokens, own = counter.sized(message)
    assert tokens == counter.count(message)
    assert own == to_json(message["content"])
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "A" * 400},
    }
    with_media = {"role": "user", "content": [image]}
    assert counter.sized(with_media)[1] is None  # the count left the payload out


def test_a_line_written_in_pieces_reaches_the_file_whole_when_writev_writes_a_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.writev

    def short(fd: int, pieces: list[memoryview]) -> int:
        # The kernel may write less than asked: at most 7 bytes a call here.
        left, out = 7, []
        for piece in pieces:
            out.append(piece[:left])
            left -= len(out[-1])
            if not left:
                break
        return real(fd, out)

    monkeypatch.setattr(os, "writev", short)
    path = tmp_path / "journal.jsonl"
    pieces = (b'{"batch":', b"[" + b"1," * 50 + b"2]", b"", b',"link":"ab"}\n')
    append_bytes(path, pieces)
    append_bytes(path, b"tail\n")
    assert path.read_bytes() == b"".join(pieces) + b"tail\n"


@given(
    st.lists(st.one_of(plain_messages, other_layouts), max_size=5),
    st.integers(0, 10**6),
    st.data(),
)
def test_a_journal_batch_holds_the_same_records_with_or_without_contents_made_before(
    messages: list[dict[str, Any]], first: int, data: st.DataObject
) -> None:
    records = []
    for seq, message in enumerate(messages, start=first):
        made = (
            to_json(message["content"])
            if "content" in message and data.draw(st.booleans(), label="made")
            else None
        )
        record = MessageRecord(seq, f"id{seq}", f"parent{seq}", message, content_json=made)
        records.append(as_json(record))
    records.append({"kind": "event", "stage": "x"})
    batch = dumps_records(records)
    assert batch.isascii()
    assert json.loads(batch) == json.loads(dumps(records))
    # Key order too: a resumed session's messages are the ones logged, byte for byte.
    assert [json.dumps(r) for r in json.loads(batch)] == [json.dumps(r) for r in records]
