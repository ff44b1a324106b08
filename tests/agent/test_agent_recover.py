"""The agent's read_file: binary files described, not decoded; copies deleted behind our back
rebuilt from the session log, for the paths the compaction store issued and no others."""

from __future__ import annotations

import base64
import json
import re
import struct
from pathlib import Path
from typing import Any

import stub_api as s
from context_compact import Compactor, MemoryStore, Policy
from context_compact.agent.loop import Agent
from context_compact.agent.tools import REBUILT, Workspace
from context_compact.providers.anthropic import AnthropicProvider
from context_compact.store import FileStore
from histories import call, user
from stub_api import Reply, StubAPI


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + bytes(range(256)) * 8


def test_read_file_of_a_png_says_what_it_is_instead_of_decoding_it(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png(800, 600))
    out = Workspace(tmp_path).run("read_file", {"path": "shot.png"})
    assert not out.is_error
    size = len(png(800, 600))
    assert out.text.startswith(f"Binary file shot.png: image/png, 800x600, {size:,} bytes.")
    assert "\ufffd" not in out.text and "IHDR" not in out.text


def test_read_file_of_a_pdf_counts_its_pages(tmp_path: Path) -> None:
    pdf = b"%PDF-1.4\n<< /Type /Page >>\n<< /Type /Page >>\n<< /Type /Pages >>\n%%EOF\n"
    (tmp_path / "spec.pdf").write_bytes(pdf)
    text = Workspace(tmp_path).run("read_file", {"path": "spec.pdf"}).text
    assert text.startswith(f"Binary file spec.pdf: application/pdf, 2 pages, {len(pdf)} bytes.")


def test_a_file_with_a_nul_byte_is_binary_and_invalid_utf8_alone_is_still_text(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.out").write_bytes(b"\x7fELF\x02\x01\x00\x00rest")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9\nline two\n")
    w = Workspace(tmp_path)
    assert w.run("read_file", {"path": "a.out"}).text.startswith(
        "Binary file a.out: application/octet-stream, 12 bytes."
    )
    assert w.run("read_file", {"path": "latin1.txt"}).text == "caf\ufffd\nline two"


BIG = "".join(f"line {i:05d}: the build log of a long run\n" for i in range(600))


def persisted(tmp_path: Path) -> tuple[Compactor, str]:
    """A compactor whose store saved BIG as a file the view names."""
    c = Compactor(Policy.default(context_limit=20_000), FileStore(tmp_path))
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "a", "content": BIG}],
    }
    view = c.prepare([user("build it"), call("a"), result], "build it")
    found = re.search(r"Full output: ([^\s\\\"]+)", json.dumps(view))
    assert found is not None
    return c, found.group(1)


def test_read_file_of_a_deleted_copy_rebuilds_it_from_the_log_and_pages_it(
    tmp_path: Path,
) -> None:
    c, path = persisted(tmp_path)
    Path(path).unlink()
    w = Workspace(tmp_path, recover=c.recover_file)
    out = w.run("read_file", {"path": path, "offset": 3, "limit": 2})
    assert not out.is_error
    assert out.text.splitlines()[:3] == [REBUILT, BIG.splitlines()[2], BIG.splitlines()[3]]
    assert "continue with offset=5" in out.text
    assert not Path(path).exists()  # read, not written back: the store's files are its own


def test_a_missing_file_the_store_did_not_issue_is_still_not_found(tmp_path: Path) -> None:
    c, path = persisted(tmp_path)
    forged = path.replace("sha256-", "sha256-0")
    out = Workspace(tmp_path, recover=c.recover_file).run("read_file", {"path": forged})
    assert out.is_error and out.text == f"Error: file not found: {forged}"


def test_without_recover_a_deleted_copy_is_not_found(tmp_path: Path) -> None:
    _, path = persisted(tmp_path)
    Path(path).unlink()
    assert Workspace(tmp_path).run("read_file", {"path": path}).is_error


def test_a_deleted_image_file_is_rebuilt_from_the_logged_base64(tmp_path: Path) -> None:
    shot = png(640, 480)
    image = {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(shot).decode(),
        },
    }
    c = Compactor(Policy.default(context_limit=8_000), FileStore(tmp_path))
    messages: list[Any] = [user("fix it"), call("shot")]
    messages.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "shot", "content": [image]}],
        }
    )
    view: list[Any] = []
    for i in range(40):
        messages += [
            call(f"t{i}"),
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i} " * 600}
                ],
            },
        ]
    for message in messages:
        view = c.prepare([*view, message], "fix it")
        if any(e.stage == "summarize" for e in c.events):
            break
    found = re.search(r"([^\s\\\"]+\.png)", json.dumps(view))
    assert found is not None
    path = found.group(1)
    assert Path(path).read_bytes() == shot
    Path(path).unlink()
    assert c.recover_file(path) == shot
    out = Workspace(tmp_path, recover=c.recover_file).run("read_file", {"path": path})
    assert (
        out.text
        == f"{REBUILT}\nBinary file {path}: image/png, 640x480, {len(shot):,} bytes. "
        + ("It is an image, not text: read_file shows text only, so its content is not shown here.")
    )


def test_the_agent_loop_reads_a_copy_deleted_between_two_model_calls(
    tmp_path: Path, stub_api: StubAPI
) -> None:
    (tmp_path / "build.log").write_text(BIG, encoding="utf-8")
    store = FileStore(tmp_path)
    compactor = Compactor(Policy.default(context_limit=20_000), store)
    provider = AnthropicProvider(
        "claude-test", api_key="sk-ant-test", base_url=stub_api.url, timeout=5
    )
    deleted: list[str] = []

    def follow_the_marker(body: Any) -> Reply:
        # The model follows the marker in its last result; someone deleted the copy just before.
        found = re.search(r"Full output: ([^\s\\\"]+)", json.dumps(body["messages"][-1]))
        assert found is not None
        Path(found.group(1)).unlink()
        deleted.append(found.group(1))
        return Reply(tool_calls=(s.ToolCall("read_file", {"path": found.group(1), "limit": 5}),))

    stub_api.enqueue(
        Reply(tool_calls=(s.ToolCall("read_file", {"path": "build.log"}),)),
        follow_the_marker,
        Reply(text="done"),
    )
    try:
        agent = Agent(provider, compactor, Workspace(tmp_path, read_roots=(store.root_path,)))
        assert agent.run([], "summarize the build log").text == "done"
    finally:
        provider.close()
    answer = stub_api.bodies[-1]["messages"][-1]["content"][0]
    assert deleted and answer["type"] == "tool_result" and not answer.get("is_error")
    assert answer["content"].splitlines()[:6] == [REBUILT, *BIG.splitlines()[:5]]


def test_the_agent_loop_leaves_a_workspace_recover_it_was_given(tmp_path: Path) -> None:
    from context_compact.testing.model import ScriptedProvider

    def mine(path: str) -> str | None:
        return None

    w = Workspace(tmp_path, recover=mine)
    Agent(ScriptedProvider([]), Compactor(Policy.default(), MemoryStore()), w)
    assert w.recover is mine
