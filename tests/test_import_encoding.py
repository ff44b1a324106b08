"""Logs whose bytes are not UTF-8: refused where the bad byte is, or read in the encoding the
user names and reported so; never decoded with U+FFFD in place of what was there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from context_compact.cli import main
from context_compact.loaders import Limits, Undecodable, load_file

# An accented log as an editor on Windows or an old terminal writes it: Latin-1 bytes.
CHAT = [
    {"role": "user", "content": "Résumé the café's crème brûlée notes"},
    {"role": "assistant", "content": "Voilà: à la carte, déjà vu."},
]


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def latin_jsonl(folder: Path) -> Path:
    path = folder / "latin.jsonl"
    lines = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in CHAT)
    path.write_bytes(lines.encode("latin-1"))
    return path


def test_a_latin1_log_is_refused_naming_the_file_byte_and_line_not_replaced(
    tmp_path: Path,
) -> None:
    path = latin_jsonl(tmp_path)
    result = cli("import", str(path), "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 1
    assert "\ufffd" not in result.output and "imported" not in result.output
    (line,) = result.output.splitlines()
    at = path.read_bytes().index(b"\xe9")
    assert line.startswith(f"Error: cannot import {path}: not utf-8 text at byte offset {at} ")
    assert "(line 1): 0xe9: invalid continuation byte" in line and "--encoding" in line
    listed = cli("sessions", "--workdir", str(tmp_path / "work"), "--json")
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []


@pytest.mark.parametrize("name", ["log.json", "log.jsonl", ".aider.chat.history.md"])
def test_every_reader_refuses_undecodable_bytes_where_they_are(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    if name.endswith(".md"):
        text = "# aider chat started at 2024-08-21 16:02:08\n\n#### fix it\n\nDéjà fait.\n"
    elif name.endswith(".jsonl"):  # the bad byte on line 2, after a plain first line
        lines = [{"role": "system", "content": "plain"}, *CHAT]
        text = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines)
    else:
        text = json.dumps(CHAT, ensure_ascii=False, indent=1)
    raw = text.encode("latin-1")
    path.write_bytes(raw)
    with pytest.raises(Undecodable) as refused:
        load_file(path)
    at = raw.index(b"\xe9")
    assert refused.value.offset == at and refused.value.line == text[:at].count("\n") + 1
    assert str(refused.value).startswith(f"{path}: not utf-8 text at byte offset ")
    (session,) = load_file(path, Limits(encoding="latin-1"))
    assert session.encoding == "latin-1"
    texts = [b["text"] for m in session.messages for b in m["content"] if b["type"] == "text"]
    assert "\ufffd" not in "".join(texts) and any("é" in t for t in texts)


def test_an_openhands_events_folder_with_a_latin1_event_is_refused_naming_the_event(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "conv" / "events"
    folder.mkdir(parents=True)
    event = {
        "id": "e1",
        "kind": "MessageEvent",
        "source": "user",
        "llm_message": {"role": "user", "content": [{"type": "text", "text": "café"}]},
    }
    bad = folder / "event-00000-e1.json"
    bad.write_bytes(json.dumps(event, ensure_ascii=False).encode("latin-1"))
    with pytest.raises(Undecodable) as refused:
        load_file(folder)
    assert refused.value.path == str(bad)


def test_a_latin1_log_imports_with_the_named_encoding_and_says_so(tmp_path: Path) -> None:
    path, work = latin_jsonl(tmp_path), str(tmp_path / "work")
    result = cli("import", str(path), "--workdir", work, "--encoding", "latin-1")
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("; decoded as latin-1")
    sid = result.output.split()[1].rstrip(":")
    exported = cli("export", sid, "--workdir", work)
    texts = [json.loads(line)["content"][0]["text"] for line in exported.stdout.splitlines()]
    assert texts == [m["content"] for m in CHAT]
    again = cli("import", str(path), "--workdir", work, "--encoding", "latin-1", "--json")
    (reported,) = json.loads(again.stdout)["sessions"]
    assert reported["encoding"] == "latin-1" and reported["skipped"] == 0
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps(CHAT[0]) + "\n", encoding="utf-8")
    (utf8,) = json.loads(cli("import", str(plain), "--workdir", work, "--json").stdout)["sessions"]
    assert utf8["encoding"] == "utf-8"


@pytest.mark.parametrize(
    ("encoding", "why"),
    [("utf-16", "does not write ASCII as ASCII"), ("no-such", "unknown text encoding")],
)
def test_an_encoding_the_loaders_cannot_read_is_a_usage_error(
    tmp_path: Path, encoding: str, why: str
) -> None:
    path = latin_jsonl(tmp_path)
    result = cli("import", str(path), "--workdir", str(tmp_path), "--encoding", encoding)
    assert result.exit_code == 2 and why in result.output and "Traceback" not in result.output
    with pytest.raises(ValueError, match=why):
        Limits(encoding=encoding)
