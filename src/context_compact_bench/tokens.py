"""``bench --tokens``: how far the token estimate is from an exact tokenizer, per message.

Every message of the recorded sessions (``tests/data/trajectories``) of at least
``MIN_CHARS`` characters of JSON is sized three ways, as ``TokenCounter`` sizes it (its
content's JSON text, framing and media):

* **exact**: o200k through ``sizing.exact_counter`` (bpe-openai, or a cached tiktoken);
* **before**: the plain estimate, every factor 1.0 (what the default counts with no usage);
* **after**: the estimate calibrated online, as an agent loop calibrates it: the session is
  replayed message by message, a request is sent before every assistant message, its
  ``usage`` is the exact count of everything so far, and the counter observes what was
  appended since the previous request (what the engine passes to ``TokenCounter.observe``).
  Each message is estimated when it arrives, with the factors learned before it: no
  message is ever scored by factors fitted on itself.

The **requests** rows size every request as the default engine does before it is sent (the
last usage plus the estimate of what was appended since, ``durable.measure()``) against its
exact count, with a Claude model (so the estimate counts) and a window large enough that
nothing is compacted: with the overall ratio alone, and with the factors per kind as well.

The error of a message is ``estimate / exact - 1``; the report gives p5, p50 and p95 of it,
the shares of messages under- and over-counted by more than 10%, the total over all
messages, and the factors per kind at the end of each session (min .. max). The API's real
counts are o200k's for OpenAI's current models; Anthropic publishes no tokenizer, so for
Claude this shows how calibration tracks *a* tokenizer it does not know, not Claude's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from context_compact.loaders import load_all
from context_compact.sizing import KINDS, TokenCounter, exact_counter, to_json
from context_compact.sizing.counter import FRAMING

MIN_CHARS = 50
ENCODING = "o200k_base"
UNDER = -0.10
OVER = 0.10


def _exact_message(count: Any, message: Any) -> int:
    from context_compact.media import without_media
    from context_compact.messages import model_visible

    content = message.get("content", "") if isinstance(message, dict) else message
    content, media = without_media(content)
    return int(count(to_json(model_visible(content)))) + media + FRAMING


def _session_errors(messages: list[Any], count: Any) -> tuple[list[tuple[int, int, int]], Any]:
    """``(exact, before, after)`` per message of ``messages``, and the counter's factors."""
    plain = TokenCounter()
    calibrated = TokenCounter()
    rows: list[tuple[int, int, int]] = []
    sent = 0  # messages the last request held
    total = 0  # exact tokens of everything so far
    last_real: int | None = None
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "assistant" and index > 0:
            # A request of messages[:index]: its usage is the exact count so far.
            if last_real is not None and index > sent:
                calibrated.observe(total - last_real, messages[sent:index])
            sent, last_real = index, total
        exact = _exact_message(count, message)
        total += exact
        if len(to_json(message.get("content", "") if isinstance(message, dict) else "")) >= (
            MIN_CHARS
        ):
            rows.append((exact, plain.count(message), calibrated.count(message)))
    return rows, dict(calibrated.calibration.factors)


def _request_errors(messages: list[Any], count: Any, per_kind: bool) -> list[tuple[int, int]]:
    """``(exact, measured)`` of every request after the first, replayed through a Compactor."""
    from context_compact.compactor import Compactor
    from context_compact.policy import Policy
    from context_compact.store.memory import MemoryStore

    policy = Policy.default(model="claude-sonnet-4-5", context_limit=10**9)
    compactor = Compactor(policy, MemoryStore())
    compactor.tokens.calibrates = per_kind
    rows: list[tuple[int, int]] = []
    observed = False
    for index, message in enumerate(messages):
        if not (isinstance(message, dict) and message.get("role") == "assistant" and index):
            continue
        try:
            view = compactor.prepare(messages[:index], "the recorded task")
        except ValueError:
            return rows  # a log that does not replay as a request (its check() fails)
        real = sum(_exact_message(count, m) for m in view)
        if observed:  # the first request has no usage before it: the plain estimate
            rows.append((real, compactor.durable.measure()))
        compactor.observe(real)
        observed = True
    return rows


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _summary(rows: list[tuple[int, int]]) -> dict[str, float]:
    errors = [estimate / exact - 1 for exact, estimate in rows if exact > 0]
    exact_total = sum(exact for exact, _ in rows)
    return {
        "p5": _quantile(errors, 0.05),
        "p50": _quantile(errors, 0.50),
        "p95": _quantile(errors, 0.95),
        "under_10": sum(e < UNDER for e in errors) / max(1, len(errors)),
        "over_10": sum(e > OVER for e in errors) / max(1, len(errors)),
        "total": sum(estimate for _, estimate in rows) / max(1, exact_total) - 1,
    }


def run_tokens(trajectories: Path) -> dict[str, Any] | None:
    """The error report, or None when no exact tokenizer is installed."""
    found = exact_counter(ENCODING)
    if found is None:
        return None
    backend, count = found
    sessions = load_all(trajectories)
    rows: list[tuple[int, int, int]] = []
    requests: dict[bool, list[tuple[int, int]]] = {False: [], True: []}
    factors: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for session in sessions:
        session_rows, learned = _session_errors(list(session.messages), count)
        rows.extend(session_rows)
        for per_kind in requests:
            requests[per_kind].extend(_request_errors(list(session.messages), count, per_kind))
        for kind in KINDS:
            factors[kind].append(learned[kind])
    return {
        "exact": f"{ENCODING} ({backend})",
        "trajectories": str(trajectories),
        "sessions": len(sessions),
        "messages": len(rows),
        "before": _summary([(exact, before) for exact, before, _ in rows]),
        "after": _summary([(exact, after) for exact, _, after in rows]),
        "requests": len(requests[True]),
        "requests_ratio": _summary(requests[False]),
        "requests_kinds": _summary(requests[True]),
        "factors": {k: [min(v), max(v)] if v else [1.0, 1.0] for k, v in factors.items()},
    }


def render_tokens(data: dict[str, Any], console: Any) -> None:
    from rich import box
    from rich.table import Table

    table = Table(
        title=(
            f"token estimate vs {data['exact']}: {data['messages']:,} messages and "
            f"{data['requests']:,} requests of {data['sessions']} sessions"
        ),
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("estimate")
    for column in ("p5", "p50", "p95", "under >10%", "over >10%", "total"):
        table.add_column(column, justify="right")
    rows = (
        ("before", "message"),
        ("after", "message, kinds"),
        ("requests_ratio", "request"),
        ("requests_kinds", "request, kinds"),
    )
    for key, label in rows:
        row = data[key]
        table.add_row(
            label,
            *(f"{row[q]:+.1%}" for q in ("p5", "p50", "p95")),
            f"{row['under_10']:.1%}",
            f"{row['over_10']:.1%}",
            f"{row['total']:+.1%}",
        )
    console.print(table)
    console.print(
        "message: the estimate of one message (kinds: with the factors learned before it); "
        "request: as the engine measures it, the last usage plus the estimate since"
    )
    learned = ", ".join(f"{k} {lo:.2f} .. {hi:.2f}" for k, (lo, hi) in data["factors"].items())
    console.print(f"factors per kind at the end of each session: {learned}")
