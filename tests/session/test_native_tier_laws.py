"""The native tier's laws, with the provider's compaction as a plain function (no HTTP): the
newest block issued opens the view, unchanged; a failing compaction falls back to our own
summary; nothing is lost; an interrupted compaction leaves the state at the journal's."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_compact import Compactor, MemoryStore, Policy
from context_compact.messages import as_dicts
from context_compact.testing.reach import reach

TASK = "Port every module to the new API."
LIMIT = 6_000


class Provider:
    """A compaction that fails where ``fails`` says (by call number) with ``error``."""

    def __init__(self, fails: set[int], error: BaseException | None = None) -> None:
        self.fails, self.error = fails, error
        self.calls = 0
        self.issued: list[dict[str, Any]] = []

    def __call__(self, messages: list[Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls in self.fails:
            raise self.error or RuntimeError("overloaded")
        n = len(self.issued)
        block = {"type": "compaction", "content": f"summary {n} of {len(messages)} messages"}
        block["signature"] = f"sig-{n}"
        self.issued.append(block)
        return block


def result(step: int) -> str:
    return f"step {step}: module_{step}.py ported\n" * 40


def run(provider: Provider, steps: int, native: bool | str = True) -> tuple[Compactor, list[str]]:
    store = MemoryStore()
    compactor = Compactor(Policy.default(context_limit=LIMIT, native=native), store)
    compactor.engine.session.native = provider  # type: ignore[attr-defined]
    history: list[Any] = [{"role": "user", "content": TASK}]
    sent: list[str] = []
    for step in range(steps):
        use = {"type": "tool_use", "id": f"t{step}", "name": "bash", "input": {"n": step}}
        sent.append(result(step))
        history = [
            *history,
            {"role": "assistant", "content": [use]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{step}", "content": sent[-1]}
                ],
            },
        ]
        view = compactor.prepare(history, TASK)
        if provider.issued:
            assert view[0] == {"role": "assistant", "content": [provider.issued[-1]]}
        history = view
    return compactor, sent


@settings(max_examples=15, deadline=None)
@given(fails=st.sets(st.integers(min_value=1, max_value=12), max_size=6))
def test_whatever_compactions_fail_the_newest_block_opens_the_view_and_nothing_is_lost(
    fails: set[int],
) -> None:
    provider = Provider(fails)
    # 80 steps: two compactions at the default cadence (40 held one).
    compactor, sent = run(provider, 80)
    assert provider.calls >= 2
    stages = [e.stage for e in compactor.events]
    assert stages.count("native_fallback") == len(fails & set(range(1, provider.calls + 1)))
    store = compactor.store
    found = reach(as_dicts(compactor.view()), store, store.root, sent, max_reads=2)
    assert found.lost == 0, found.lost_items[:3]
    session = compactor.session_id
    again = Compactor(Policy.default(context_limit=LIMIT, native=True), store, session=session)
    assert again.view() == compactor.view()


def test_an_interrupted_compaction_leaves_the_session_as_its_journal_holds_it() -> None:
    # Ctrl-C during the second compaction request; the same call retried asks for it again,
    # and the session, reopened from its journal, sends the same view.
    store = MemoryStore()
    compactor = Compactor(Policy.default(context_limit=LIMIT, native=True), store)
    again = Provider({2}, KeyboardInterrupt())
    compactor.engine.session.native = again  # type: ignore[attr-defined]
    history: list[Any] = [{"role": "user", "content": TASK}]
    interrupted = False
    for step in range(80):
        use = {"type": "tool_use", "id": f"t{step}", "name": "bash", "input": {"n": step}}
        history = [
            *history,
            {"role": "assistant", "content": [use]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{step}", "content": result(step)}
                ],
            },
        ]
        try:
            history = compactor.prepare(history, TASK)
        except KeyboardInterrupt:
            interrupted = True
            history = compactor.prepare(history, TASK)  # the same call, retried
    assert interrupted and len(again.issued) >= 2
    session = compactor.session_id
    resumed = Compactor(Policy.default(context_limit=LIMIT, native=True), store, session=session)
    assert resumed.view() == compactor.view()
    assert resumed.view()[0]["content"][0] == again.issued[-1]


def test_under_auto_the_first_failure_turns_the_tier_off() -> None:
    provider = Provider({1})
    compactor, _ = run(provider, 40, native="auto")
    assert provider.calls == 1 and provider.issued == []
    assert [e.stage for e in compactor.events].count("native_fallback") == 1
    assert "off for this session" in next(
        e.note for e in compactor.events if e.stage == "native_fallback"
    )


def test_a_view_exported_for_chat_completions_reads_our_summary_in_place_of_the_block() -> None:
    from context_compact.history.transfer import export_session
    from context_compact.session.native_tier import READABLE

    provider = Provider(set())
    compactor, _ = run(provider, 40)
    session = compactor.session_id
    assert session is not None and provider.issued
    exported = export_session(compactor.store, session, "openai", view=True)
    assert READABLE in exported and "module_" in exported
    assert provider.issued[-1]["signature"] not in exported
    # The Anthropic export keeps the block itself, unchanged.
    assert provider.issued[-1]["signature"] in export_session(
        compactor.store, session, "anthropic", view=True
    )


def test_without_a_native_compaction_true_says_so_and_auto_stays_silent() -> None:
    for native, said in ((True, True), ("auto", False)):
        compactor = Compactor(Policy.default(context_limit=LIMIT, native=native), MemoryStore())
        history: list[Any] = [{"role": "user", "content": TASK}]
        for step in range(30):
            use = {"type": "tool_use", "id": f"t{step}", "name": "bash", "input": {}}
            result_block = {
                "type": "tool_result",
                "tool_use_id": f"t{step}",
                "content": result(step),
            }
            history = compactor.prepare(
                [
                    *history,
                    {"role": "assistant", "content": [use]},
                    {"role": "user", "content": [result_block]},
                ],
                TASK,
            )
        stages = [e.stage for e in compactor.events]
        assert "summarize" in stages
        assert ("native_fallback" in stages) is said
