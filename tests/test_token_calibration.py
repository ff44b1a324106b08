"""Token counts by model family and calibration per kind of text from the API's usage: exact
where a tokenizer ships offline, never a download, bounded and convergent factors elsewhere."""

from __future__ import annotations

import json
import random
import socket
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_compact import Compactor, Policy
from context_compact.sizing import (
    KINDS,
    Calibration,
    TokenCounter,
    encoding_for_model,
    exact_counter,
    profile,
    text_tokens,
)
from context_compact.sizing.calibrate import HIGH, LOW
from context_compact.store.memory import MemoryStore

HAS_BPE = (exact_counter() or ("estimate",))[0] == "bpe-openai"
needs_bpe = pytest.mark.skipif(not HAS_BPE, reason="bpe-openai is not installed")
TEXTS = (
    "def add(a: int, b: int) -> int:\n    return a + b\n",
    "drwxr-xr-x  7 kaito staff 224  9  3 09:54 .\n-rw-r--r--  1 kaito staff 480  9  3 .env\n",
    "The parser returns None when the header is empty; the caller expects a dict.",
    "日本語のテキストと emoji 🙂 and <|endoftext|> as plain text",
)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def hide_tokenizers(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes import and find_spec both say "not installed".
    for name in ("bpe_openai", "bpe_openai._bindings", "tiktoken", "tiktoken.load"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-5-codex", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("openai/o4-mini", "o200k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        (None, "o200k_base"),
        ("claude-sonnet-4-5", None),
        ("llama-3.1-70b", None),
    ],
)
def test_the_encoding_follows_the_model_family(model: str | None, encoding: str | None) -> None:
    assert encoding_for_model(model) == encoding


@needs_bpe
@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_the_exact_counter_counts_as_the_tokenizer_itself(
    encoding: str, no_network: list[Any]
) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        library = bpe_openai.get_encoding(encoding)
    model = "gpt-4o" if encoding == "o200k_base" else "gpt-4"
    counter = TokenCounter(exact=True, model=model)
    assert (counter.backend, counter.encoding) == ("bpe-openai", encoding)
    for text in TEXTS:
        tokens = library.encode(text, disallowed_special=())
        assert library.decode(tokens) == text  # the library's own round trip
        assert counter.text(text) == len(tokens)
    # The two encodings are really different tables.
    o200k, cl100k = (TokenCounter(exact=True, model=m) for m in ("gpt-4o", "gpt-4"))
    assert any(o200k.text(t) != cl100k.text(t) for t in TEXTS)
    assert not no_network


def test_claude_is_estimated_and_calibrated_even_with_a_tokenizer_installed() -> None:
    counter = TokenCounter(exact=True, model="claude-sonnet-4-5")
    assert (counter.backend, counter.exact, counter.calibrates) == ("estimate", False, True)
    compactor = Compactor(Policy.default(model="claude-sonnet-4-5"), MemoryStore())
    assert compactor.tokens.backend == "estimate"


@needs_bpe
def test_the_compactor_counts_exactly_for_an_openai_model() -> None:
    compactor = Compactor(Policy.default(model="gpt-4.1"), MemoryStore())
    assert (compactor.tokens.backend, compactor.tokens.encoding) == ("bpe-openai", "o200k_base")
    assert not compactor.tokens.calibrates


def test_without_the_extra_the_counter_estimates_and_never_downloads(
    monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    hide_tokenizers(monkeypatch)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    for model in ("gpt-4o", "gpt-4", None):
        counter = TokenCounter(exact=True, model=model)
        assert (counter.backend, counter.exact) == ("estimate", False)
        assert [counter.text(t) for t in TEXTS] == [text_tokens(t) for t in TEXTS]
    assert not no_network


def test_an_uncalibrated_counter_counts_as_the_plain_estimate() -> None:
    counter = TokenCounter()
    message = {"role": "user", "content": [{"type": "text", "text": TEXTS[1]}]}
    raw, _ = profile(json.dumps(message["content"], ensure_ascii=False))
    assert counter.calibration.neutral and counter.count(message) == raw + 4


def test_each_text_has_the_kind_its_digits_and_columns_give_it() -> None:
    assert profile("the parser returns an empty dictionary now")[1] == "plain"
    assert profile(TEXTS[1])[1] == "tabular"
    assert profile("result = compute(alpha, beta, gamma) + offset[12] * scaling_ratio")[1] == (
        "mixed"
    )


@given(
    st.dictionaries(st.sampled_from(KINDS), st.floats(0.6, 1.8), min_size=3, max_size=3),
    st.integers(0, 2**32 - 1),
)
def test_calibration_converges_on_a_stream_of_usage(truth: dict[str, float], seed: int) -> None:
    rng = random.Random(seed)
    calibration = Calibration()
    for _ in range(150):
        raw = {kind: rng.randint(50, 5_000) for kind in rng.sample(KINDS, rng.randint(1, 2))}
        fixed = rng.randint(0, 40)
        calibration.observe(round(fixed + sum(truth[k] * n for k, n in raw.items())), raw, fixed)
    for kind in KINDS:
        assert calibration.factors[kind] == pytest.approx(truth[kind], rel=0.02)


@given(
    st.lists(
        st.tuples(
            st.integers(-(10**9), 10**9),
            st.dictionaries(st.sampled_from(KINDS), st.integers(-(10**6), 10**9)),
            st.integers(-(10**6), 10**6),
        ),
        max_size=40,
    )
)
def test_calibration_stays_bounded_whatever_the_usage_says(
    stream: list[tuple[int, dict[str, int], int]],
) -> None:
    calibration = Calibration()
    for real, raw, fixed in stream:
        before = dict(calibration.factors)
        calibration.observe(real, raw, fixed)
        for kind in KINDS:
            assert LOW <= calibration.factors[kind] <= HIGH
            # One observation moves a factor by less than 2x: smoothed, never a jump.
            assert calibration.factors[kind] / before[kind] < 2.0
            assert before[kind] / calibration.factors[kind] < 2.0


def test_an_implausible_usage_teaches_nothing() -> None:
    """A refusal's count (200k for a 600-token step) or a usage of half the estimate's tenth
    is about something else than the tokenizer."""
    calibration = Calibration()
    for real in (207_067, 60, 0, -5):
        calibration.observe(real, {"mixed": 648}, 8)
    assert calibration.neutral
    calibration.observe(579, {"mixed": 648}, 8)
    assert calibration.factors["mixed"] < 1.0


def tabular_result(i: int) -> str:
    return "\n".join(
        f"-rw-r--r--  1 dev  staff  {i * 37 + n:>6}  9  3 09:{n:02} f{n}.py" for n in range(40)
    )


def test_a_session_learns_its_kinds_from_usage_and_resumes_with_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An 'API' that counts tabular text 1.5x the estimate and the rest as estimated: the
    tabular factor rises towards 1.5, the others stay near 1, and a resumed session counts
    with the same factors."""
    hide_tokenizers(monkeypatch)
    store = MemoryStore()
    compactor = Compactor(Policy.default(model="claude-sonnet-4-5"), store)
    plain = TokenCounter()

    def api_count(view: list[Any]) -> int:
        total = 0
        for message in view:
            _, kind = profile(json.dumps(message["content"], ensure_ascii=False))
            total += round((plain.count(message) - 4) * (1.5 if kind == "tabular" else 1.0)) + 4
        return total

    messages: list[Any] = [{"role": "user", "content": "list the files, step by step"}]
    for i in range(12):
        view = compactor.prepare(messages, "list the files")
        compactor.observe(api_count(view))
        use = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": "ls -l"}}
        messages = [
            *messages,
            {"role": "assistant", "content": [{"type": "text", "text": "Next one."}, use]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": tabular_result(i)}
                ],
            },
        ]
    compactor.prepare(
        messages, "list the files"
    )  # journals the last calibration with this call's records
    factors = compactor.tokens.calibration.factors
    assert factors["tabular"] == pytest.approx(1.5, rel=0.05)
    assert factors["plain"] == pytest.approx(1.0, rel=0.1)
    resumed = Compactor(
        Policy.default(model="claude-sonnet-4-5"), store, session=compactor.session_id
    )
    resumed.view()
    assert resumed.tokens.calibration.factors == factors
    assert resumed.durable.measure() == compactor.durable.measure()


def test_a_calibrate_record_keeps_its_factors_through_the_journal() -> None:
    from context_compact.session.records import Calibrate, as_json, read

    raw = {"kind": "calibrate", "ratio": 1.1, "anchor": [3, 900], "kinds": {"plain": 0.9}}
    record = read(raw)
    assert isinstance(record, Calibrate) and record.kinds == {"plain": 0.9}
    assert as_json(record) == raw
    old = {"kind": "calibrate", "ratio": 1.1, "anchor": None}  # journals written before
    assert as_json(read(old)) == old
