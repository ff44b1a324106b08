"""A history the slow fuzz profile found (tests/test_fuzz.py): a summary whose cut moved back
to a thinking turn's start kept the user pins it had chosen for the later cut, and failed
with an IndexError. Replayed here call by call, as the fuzz drove it."""

from __future__ import annotations

from typing import Any

from context_compact import check
from test_fuzz import COUNTER, call, compactor

HISTORY: list[dict[str, Any]] = [
    {"content": "request r0: fix it", "role": "user"},
    {
        "content": [
            {"data": "enc0.0", "type": "redacted_thinking"},
            {"id": "srvtoolu_0_0", "input": {}, "name": "web_search", "type": "server_tool_use"},
            {
                "content": [
                    {
                        "encrypted_content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "title": "t",
                        "type": "web_search_result",
                        "url": "https://example.com",
                    }
                ],
                "tool_use_id": "srvtoolu_0_0",
                "type": "web_search_tool_result",
            },
        ],
        "role": "assistant",
    },
    {"content": "request r1: fix it", "role": "user"},
    {
        "content": [
            {"id": "srvtoolu_1_0", "input": {}, "name": "web_search", "type": "server_tool_use"},
            {
                "content": [
                    {
                        "encrypted_content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "title": "t",
                        "type": "web_search_result",
                        "url": "https://example.com",
                    }
                ],
                "tool_use_id": "srvtoolu_1_0",
                "type": "web_search_tool_result",
            },
            {"id": "toolu_000", "input": {"command": "ls"}, "name": "bash", "type": "tool_use"},
        ],
        "role": "assistant",
    },
    {
        "content": [
            {"content": "<r2>", "is_error": True, "tool_use_id": "toolu_000", "type": "tool_result"}
        ],
        "role": "user",
    },
    {"content": "also: keep the tests green", "role": "user"},
    {
        "content": [
            {"id": "srvtoolu_1_1", "input": {}, "name": "web_search", "type": "server_tool_use"},
            {
                "content": [
                    {
                        "encrypted_content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "title": "t",
                        "type": "web_search_result",
                        "url": "https://example.com",
                    }
                ],
                "tool_use_id": "srvtoolu_1_1",
                "type": "web_search_tool_result",
            },
            {"id": "toolu_001", "input": {"command": "ls"}, "name": "bash", "type": "tool_use"},
            {"id": "toolu_002", "input": {"command": "ls"}, "name": "bash", "type": "tool_use"},
        ],
        "role": "assistant",
    },
    {
        "content": [
            {
                "content": "<r3>",
                "is_error": True,
                "tool_use_id": "toolu_001",
                "type": "tool_result",
            },
            {"content": "<r4>", "tool_use_id": "toolu_002", "type": "tool_result"},
        ],
        "role": "user",
    },
    {
        "content": [
            {"id": "srvtoolu_1_2", "input": {}, "name": "web_search", "type": "server_tool_use"},
            {
                "content": [
                    {
                        "encrypted_content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "title": "t",
                        "type": "web_search_result",
                        "url": "https://example.com",
                    }
                ],
                "tool_use_id": "srvtoolu_1_2",
                "type": "web_search_tool_result",
            },
            {"id": "toolu_003", "input": {"command": "ls"}, "name": "bash", "type": "tool_use"},
        ],
        "role": "assistant",
    },
    {
        "content": [
            {"content": "<r5>", "is_error": True, "tool_use_id": "toolu_003", "type": "tool_result"}
        ],
        "role": "user",
    },
    {"content": "request r6: fix it", "role": "user"},
    {
        "content": [
            {"data": "enc2.0", "type": "redacted_thinking"},
            {"id": "srvtoolu_2_0", "input": {}, "name": "web_search", "type": "server_tool_use"},
            {
                "content": [
                    {
                        "encrypted_content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "title": "t",
                        "type": "web_search_result",
                        "url": "https://example.com",
                    }
                ],
                "tool_use_id": "srvtoolu_2_0",
                "type": "web_search_tool_result",
            },
            {"id": "toolu_004", "input": {"command": "ls"}, "name": "bash", "type": "tool_use"},
        ],
        "role": "assistant",
    },
    {
        "content": [
            {"content": "<r7>", "is_error": True, "tool_use_id": "toolu_004", "type": "tool_result"}
        ],
        "role": "user",
    },
    {"content": "also: keep the tests green", "role": "user"},
    {
        "content": [
            {"id": "srvtoolu_2_1", "input": {}, "name": "web_search", "type": "server_tool_use"},
            {
                "content": [
                    {
                        "encrypted_content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "title": "t",
                        "type": "web_search_result",
                        "url": "https://example.com",
                    }
                ],
                "tool_use_id": "srvtoolu_2_1",
                "type": "web_search_tool_result",
            },
            {"id": "toolu_005", "input": {"command": "ls"}, "name": "bash", "type": "tool_use"},
        ],
        "role": "assistant",
    },
    {
        "content": [
            {"content": "<r8>", "is_error": True, "tool_use_id": "toolu_005", "type": "tool_result"}
        ],
        "role": "user",
    },
    {
        "content": [
            {"data": "enc2.2", "type": "redacted_thinking"},
            {"id": "srvtoolu_2_2", "input": {}, "name": "web_search", "type": "server_tool_use"},
            {
                "content": [
                    {
                        "encrypted_content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "title": "t",
                        "type": "web_search_result",
                        "url": "https://example.com",
                    }
                ],
                "tool_use_id": "srvtoolu_2_2",
                "type": "web_search_tool_result",
            },
            {"id": "toolu_006", "input": {"command": "ls"}, "name": "bash", "type": "tool_use"},
        ],
        "role": "assistant",
    },
    {
        "content": [
            {"content": "<r9>", "is_error": True, "tool_use_id": "toolu_006", "type": "tool_result"}
        ],
        "role": "user",
    },
    {"content": "also: keep the tests green", "role": "user"},
    {
        "content": [
            {"id": "srvtoolu_2_3", "input": {}, "name": "web_search", "type": "server_tool_use"},
            {
                "content": [
                    {
                        "encrypted_content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "title": "t",
                        "type": "web_search_result",
                        "url": "https://example.com",
                    }
                ],
                "tool_use_id": "srvtoolu_2_3",
                "type": "web_search_tool_result",
            },
        ],
        "role": "assistant",
    },
]


def test_a_summary_whose_cut_moves_back_to_a_thinking_turn_pins_again_and_stays_valid() -> None:
    c, _ = compactor("default")
    for upto, entry in (
        (3, "prepare"),
        (8, "prepare"),
        (13, "compact_history"),
        (16, "prepare"),
        (20, "compact_history"),
    ):
        out = call(c, entry, HISTORY[:upto], False)
        assert out is not None and check(out) == []
        c.observe(COUNTER.messages(out))
    assert "compact_history" in [e.stage for e in c.events]
