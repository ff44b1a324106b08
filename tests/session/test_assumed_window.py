"""A model whose window we do not know, without ``context_limit``, is said where the user sees
it: an ``UnknownModelWarning`` (once per process per model, naming the window assumed and how
to set it, at the caller's line), the first event of the session, and ``inspect``'s limit; a
known model, a given limit or a window the server stated says nothing of it.

Each test names a model of its own: the warning is said once per process per model, so a
name another test used would already have been said."""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_compact import Compactor, MemoryStore, Policy
from context_compact.cli import main
from context_compact.errors import UnknownModelWarning
from context_compact.history.inspect import timeline
from context_compact.policy import SessionPolicy
from context_compact.sizing import DEFAULT_WINDOW
from context_compact.store import WORKDIR_DB, SqliteStore

ASSUMED = DEFAULT_WINDOW - Policy.default().reserve_tokens


def a_model() -> str:
    """A model name no table knows, never used before in this process."""
    return f"house-model-{uuid.uuid4().hex[:12]}"


def unknown(model: str, **overrides: object) -> SessionPolicy:
    with pytest.warns(UnknownModelWarning):
        return Policy.default(model=model, **overrides)


def history(turns: int) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "user", "content": "Read every log."}]
    for n in range(turns):
        call = {"type": "tool_use", "id": f"t{n}", "name": "read_log", "input": {"n": n}}
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"line {n}\n" * 200}
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    return messages


def test_an_unknown_model_is_warned_of_once_naming_the_window_assumed_and_how_to_set_it() -> None:
    model = a_model()
    with pytest.warns(UnknownModelWarning) as said:
        Policy.default(model=model)
        Policy.default(model=model, high_water=0.9)
    (warning,) = said
    message = str(warning.message)
    assert model in message and f"assuming {DEFAULT_WINDOW:,} tokens" in message
    assert "context_limit=" in message
    assert isinstance(warning.message, UnknownModelWarning) and warning.message.model == model
    assert warning.filename == __file__  # the caller's line, not the library's


def test_each_unknown_model_is_warned_of() -> None:
    first, second = a_model(), a_model()
    with pytest.warns(UnknownModelWarning) as said:
        Policy.default(model=first)
        Policy.default(model=second)
        Policy.named("default", model=first)
    assert [w.message.model for w in said] == [first, second]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "overrides",
    [
        {"model": "claude-sonnet-4-5"},
        {"model": "gpt-4o-mini"},
        {"context_limit": 30_000},
        {},
    ],
)
def test_a_known_model_a_given_limit_or_no_model_warns_of_nothing(
    overrides: dict[str, object],
) -> None:
    if "context_limit" in overrides:
        overrides = {**overrides, "model": a_model()}
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        Policy.default(**overrides)
    assert [w for w in said if issubclass(w.category, UnknownModelWarning)] == []


def test_a_policy_that_fails_its_checks_raises_its_error_not_the_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="high_water"):
            Policy.default(model=a_model(), high_water=2.0)


def test_the_first_event_says_the_limit_rests_on_an_assumed_window() -> None:
    model = a_model()
    compactor = Compactor(unknown(model), MemoryStore())
    messages = history(8)
    view = compactor.compact_history(messages, "Read every log.")
    compactor.compact_history([*view, *history(12)[len(messages) :]], "Read every log.")
    notes = [event.note for event in compactor.events]
    assert len(notes) >= 2
    assert model in notes[0] and f"{ASSUMED:,}" in notes[0] and "context_limit" in notes[0]
    assert all(model not in note for note in notes[1:])


def test_no_event_says_it_once_the_server_stated_its_window() -> None:
    model = a_model()
    compactor = Compactor(unknown(model), MemoryStore())
    compactor.use_window(12_000, "the server's refusal")
    compactor.compact_history(history(8), "Read every log.")
    assert compactor.events and all(model not in event.note for event in compactor.events)


def test_inspect_says_the_limit_rests_on_an_assumed_window(tmp_path: Path) -> None:
    model = a_model()
    store = SqliteStore(tmp_path / WORKDIR_DB, root=tmp_path)
    compactor = Compactor(unknown(model), store)
    compactor.prepare(history(3), "Read every log.")
    session = str(compactor.session_id)
    assert timeline(store, session).assumed == model
    store.close()
    result = CliRunner().invoke(main, ["inspect", session, "--workdir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    header = " ".join(result.output.split("\n\n")[0].split())
    assert f"limit {ASSUMED:,}" in header and model in header and "context_limit" in header


@pytest.mark.parametrize("known", ["a limit", "the server's window"])
def test_inspect_says_nothing_of_it_with_a_limit_or_the_servers_window(
    tmp_path: Path, known: str
) -> None:
    model = a_model()
    store = MemoryStore()
    if known == "a limit":
        compactor = Compactor(Policy.default(model=model, context_limit=30_000), store)
    else:
        compactor = Compactor(unknown(model), store)
        compactor.use_window(12_000, "the server's refusal")
    compactor.prepare(history(3), "Read every log.")
    assert timeline(store, str(compactor.session_id)).assumed is None
