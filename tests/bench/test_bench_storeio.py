"""bench --store-io: its rows are measured, not made up (tiny sizes; no timing asserted)."""

from __future__ import annotations

from context_compact_bench.storeio import measure_store_io, table


def test_the_store_benchmark_measures_writes_commits_and_recall_on_both_stores() -> None:
    data = measure_store_io(write_turns=12, recall_turns=(40,), queries=4)
    writes = {(row["store"], row["page_size"], row["compressed"]): row for row in data["writes"]}
    assert set(writes) == {
        ("file", None, None),
        ("sqlite", 512, True),
        ("sqlite", 512, False),
        ("sqlite", 1024, True),
        ("sqlite", 4096, True),
        ("sqlite", 4096, False),
    }
    for row in writes.values():
        assert row["result_bytes"] > 0 and row["written_bytes"] > row["result_bytes"] / 10
    assert writes[("sqlite", 512, True)]["commits"] == 12  # one per turn
    assert writes[("file", None, None)]["commits"] is None
    assert {row["store"] for row in data["recall"]} == {"file", "sqlite"}
    assert all(row["turns"] == 40 and row["queries"] == 4 for row in data["recall"])
    shown = table(data)
    assert "| sqlite | 512 | zlib | 12 |" in shown and "| file | 40 |" in shown
