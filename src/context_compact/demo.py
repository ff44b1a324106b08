"""An offline run of the real agent loop that shows every kind of compaction.

``run_demo(root)`` writes a small invoicing project into ``root`` (sixteen Python modules
of a few KB, a ~150 KB server log, a README), then runs the real ``Agent`` with the real
tools, a real ``SqliteStore`` (as the CLI uses) and the DEFAULT policy at a deliberately
small context limit, so that within eight turns the loop:

- persists big new results with a preview (source files, the log dumped by ``cat``),
- reads a persisted output back through ``read_file`` with offset/limit,
- clears older results and summarizes old turns when the view crosses the high-water mark,
- is refused once by the "API" (prompt too long) and recovers by reactive compaction,
- runs ``compact`` in one batch with another tool (the batch runs first),
- edits a file and answers with a summary.

The model is a ``ScriptedProvider`` whose steps are functions of what was actually sent,
so the script follows the loop rather than assuming it: it reads the files the ``glob``
returned and pages the path named in the ``Full output:`` line. The summarizer is
``extractive_summary``; nothing leaves the machine. The run is deterministic apart from
temporary paths.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .agent.loop import Agent, LoopEvent, Refusal, RunResult
from .agent.tools import Workspace
from .compactor import Compactor
from .messages import Message
from .policy import Policy
from .session.records import logged_messages
from .store import workdir_store
from .summary.extract import extractive_summary
from .testing.model import (
    FakeContextOverflow,
    ScriptedProvider,
    Step,
    estimate_tokens,
    text_reply,
    tool_call,
    tool_calls,
)

DEMO_CONTEXT_LIMIT = 6_000
DEMO_TASK = (
    "The nightly invoice job reports tax totals that are off by a cent. Find the cause in "
    "logs/server.log and fix it."
)


# -- the sample project ------------------------------------------------------------------

_MODULES: dict[str, tuple[str, list[str]]] = {
    "app/__init__.py": ("Invoicer: billing for small subscription businesses.", []),
    "app/config.py": ("Settings read from the environment.", ["load", "database_url", "smtp"]),
    "app/models.py": (
        "Domain objects: customers, plans, invoices and their lines.",
        ["customer", "plan", "invoice", "invoice_line", "credit_note", "payment"],
    ),
    "app/db.py": (
        "Thin persistence layer over sqlite3.",
        ["connect", "migrate", "fetch_invoice", "save_invoice", "list_due", "close"],
    ),
    "app/currency.py": (
        "Money amounts as integer cents, conversions between currencies.",
        ["to_cents", "from_cents", "convert", "format_amount"],
    ),
    "app/billing.py": (
        "Turns subscriptions into invoices once per billing period.",
        ["run_cycle", "invoice_for", "add_usage_lines", "apply_credits", "finalize", "void"],
    ),
    "app/reports.py": (
        "Monthly revenue and tax reports.",
        ["revenue_by_month", "tax_by_region", "outstanding", "export_csv", "aging"],
    ),
    "app/api.py": (
        "HTTP handlers for the admin dashboard.",
        ["list_invoices", "get_invoice", "create_credit", "refund", "health", "metrics"],
    ),
    "app/auth.py": ("Session tokens for the dashboard.", ["issue", "verify", "revoke"]),
    "app/notifications.py": (
        "Invoice e-mails and payment reminders.",
        ["send_invoice", "remind_overdue", "render_template", "queue"],
    ),
    "app/utils.py": ("Small helpers shared across modules.", ["chunks", "retry", "slugify"]),
    "app/jobs.py": (
        "The nightly job runner.",
        ["nightly", "reconcile_payments", "close_period", "lock", "unlock"],
    ),
    "tests/test_billing.py": ("Billing cycle tests.", ["test_cycle", "test_credit", "test_void"]),
    "tests/test_tax.py": ("Tax computation tests.", ["test_line_tax", "test_invoice_tax"]),
    "tests/test_api.py": ("Dashboard API tests.", ["test_list", "test_refund", "test_health"]),
}

TAX_BUG = "    return round(amount * rate, 2)\n"
TAX_FIX = (
    "    exact = Decimal(str(amount)) * Decimal(str(rate))\n"
    '    return float(exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))\n'
)

_TAX_MODULE = '''"""Sales tax per region; amounts are floats in major units (legacy)."""

from decimal import ROUND_HALF_UP, Decimal

RATES = {"EU-DE": 0.19, "EU-FR": 0.20, "US-CA": 0.0725, "US-NY": 0.08875, "UK": 0.20}


def rate_for(region: str) -> float:
    """The tax rate of a region; unknown regions pay no tax."""
    return RATES.get(region, 0.0)


def line_tax(amount: float, rate: float) -> float:
    """Tax of one invoice line, rounded to the cent (half up, as the tax office does)."""
TAX_BUG


def invoice_tax(lines: list[tuple[float, str]]) -> float:
    """Sum of the line taxes of an invoice: (amount, region) pairs."""
    return sum(line_tax(amount, rate_for(region)) for amount, region in lines)
'''


def _function(module: str, name: str, index: int) -> str:
    noun = name.split("_")[-1]
    return f'''

def {name}(record: dict, *, strict: bool = True, limit: int = {10 * (index + 1)}) -> dict:
    """{name.replace("_", " ").capitalize()} for the {module} module.

    Validates ``record`` first; with ``strict`` an unknown key is an error rather than
    being ignored, because silently dropped fields were the cause of bug #{311 + index}.
    """
    if strict:
        unknown = sorted(set(record) - {{"id", "customer", "amount", "region", "period"}})
        if unknown:
            raise ValueError(f"{name}: unknown field(s) {{unknown}}")
    items = [dict(record, position=i) for i in range(min(limit, len(record) + {index}))]
    total = sum(float(item.get("amount", 0)) for item in items)
    summary = {{"{noun}": record.get("id"), "items": len(items), "total": round(total, 2)}}
    if total < 0:
        # Negative totals happen with credit notes; they are kept for the audit trail.
        summary["credit"] = True
    return summary
'''


def _module_text(path: str, doc: str, functions: list[str]) -> str:
    module = Path(path).stem
    header = f'"""{doc}"""\n\nfrom __future__ import annotations\n'
    if path.startswith("tests/"):
        body = "".join(
            f"\n\ndef {name}() -> None:\n    # Regression cases from production incidents.\n"
            + "".join(
                f"    assert round({c + 1} * 0.{19 + c}, 2) == {(c + 1) * (19 + c) / 100}\n"
                for c in range(12)
            )
            for name in functions
        )
        return header + body
    return header + "".join(_function(module, name, i) for i, name in enumerate(functions))


def _log_text(lines: int = 1_500) -> str:
    out = []
    for i in range(lines):
        minute, second = divmod(i, 60)
        stamp = f"2025-03-14T02:{minute % 60:02d}:{second:02d}.{(i * 37) % 1000:03d}Z"
        invoice = 10_000 + i
        if i % 97 == 41:
            out.append(
                f"{stamp} ERROR tax invoice=INV-{invoice} TaxMismatch: line_tax(0.625, 0.2)"
                f" = 0.12, ledger expects 0.13 (round() on a float, half-even)"
            )
        else:
            total = (i * 7919) % 50_000 / 100
            out.append(
                f"{stamp} INFO  worker[{i % 4}] invoice=INV-{invoice} customer=C-{i % 311:04d}"
                f" total={total:.2f} region={('EU-DE', 'US-CA', 'UK')[i % 3]} status=ok"
            )
    return "\n".join(out) + "\n"


def build_project(root: Path) -> None:
    """Write the sample project into ``root`` (created if missing)."""
    for path, (doc, functions) in _MODULES.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_module_text(path, doc, functions), encoding="utf-8")
    (root / "app" / "tax.py").write_text(_TAX_MODULE.replace("TAX_BUG\n", TAX_BUG))
    (root / "logs").mkdir(exist_ok=True)
    (root / "logs" / "server.log").write_text(_log_text(), encoding="utf-8")
    (root / "README.md").write_text(
        "# invoicer\n\nBilling for small subscription businesses. `app/` holds the code, "
        "`tests/` the tests, `logs/` the nightly job's logs.\n\nMoney is stored in floats "
        "for historical reasons; tax must be rounded half up to the cent.\n",
        encoding="utf-8",
    )


# -- the scripted model ------------------------------------------------------------------


def _last_results(messages: list[Message]) -> list[str]:
    content = messages[-1].get("content") if messages else None
    if not isinstance(content, list):
        return []
    return [str(b.get("content", "")) for b in content if b.get("type") == "tool_result"]


def _read_found_files(messages: list[Message], system: str, tools: list[Any]) -> Message:
    listed = "\n".join(_last_results(messages)).splitlines()
    wanted = [p for p in listed if p in ("app/billing.py", "app/tax.py", "app/currency.py")]
    return tool_calls(
        [("read_file", {"path": p}) for p in wanted],
        text="The tax code lives in app/tax.py; reading it with billing and currency.",
    )


def _page_persisted_log(messages: list[Message], system: str, tools: list[Any]) -> Message:
    found = re.search(r"^Full output: (.+)$", "\n".join(_last_results(messages)), re.M)
    if found is None:
        return tool_call("bash", {"command": "grep -n TaxMismatch logs/server.log | head -5"})
    return tool_calls(
        [
            ("read_file", {"path": found.group(1), "offset": 40, "limit": 5}),
            ("bash", {"command": "grep -c TaxMismatch logs/server.log"}),
        ],
        text="The log was saved in full; paging the saved copy around the first mismatch.",
    )


# The demo's model window: the limit and a quarter more for the reply, so the limit the demo
# sets fits in what the server takes (the refusal is the tokenizer's surprise, not a mistake).
DEMO_WINDOW = DEMO_CONTEXT_LIMIT * 4 // 3


def _refuse(messages: list[Message], system: str, tools: list[Any]) -> Exception:
    # A real tokenizer counts more than our estimate: this is the refusal that follows.
    sent = estimate_tokens(len(str(messages)) + len(system) + len(str(tools)))
    return FakeContextOverflow(max(sent * 2, DEMO_WINDOW + 1), DEMO_WINDOW)


def demo_script() -> list[Step]:
    """The model's side of the demo, one step per model call."""
    return [
        tool_calls(
            [("glob", {"pattern": "**/*.py"}), ("read_file", {"path": "README.md"})],
            text="Let me look at the project layout first.",
        ),
        _read_found_files,
        tool_call("bash", {"command": "cat logs/server.log"}, text="Now the nightly log."),
        _page_persisted_log,
        tool_calls(
            [
                ("read_file", {"path": p})
                for p in ("app/models.py", "app/db.py", "app/reports.py", "app/jobs.py")
            ],
            text="Checking every caller of line_tax before changing it.",
        ),
        _refuse,
        tool_call(
            "edit_file",
            {"path": "app/tax.py", "old_text": TAX_BUG, "new_text": TAX_FIX},
            text="round() on a float rounds 0.125 half-to-even; switching to Decimal half-up.",
        ),
        tool_calls(
            [
                ("read_file", {"path": p})
                for p in (
                    "tests/test_tax.py",
                    "tests/test_billing.py",
                    "app/api.py",
                    "app/notifications.py",
                    "app/auth.py",
                )
            ],
            text="Now the tests and the remaining callers, to be sure nothing else rounds.",
        ),
        tool_calls(
            [("bash", {"command": "grep -n quantize app/tax.py"}), ("compact", {})],
            text="Fix in place. This investigation phase is over, so I compact.",
        ),
        text_reply(
            "Fixed. `app/tax.py:line_tax` rounded with `round(amount * rate, 2)`, which "
            "works on binary floats and rounds half to even, so 0.625 x 0.20 = 0.125 became "
            "0.12 while the ledger expects 0.13 (the `TaxMismatch` errors in "
            "logs/server.log). It now multiplies Decimals and quantizes half up to the cent."
        ),
    ]


# -- the run -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoRun:
    result: RunResult
    root: Path
    transcripts: list[Path]
    tool_results: list[Path]
    session: str
    logged: int
    in_view: int
    recalled: tuple[str, int]
    model_calls: int
    refusals: int
    fixed: bool


RECALL_EXAMPLE = "TaxMismatch"


def run_demo(root: Path, on_event: Callable[[LoopEvent], None] | None = None) -> DemoRun:
    """Build the project in ``root`` and run the scripted agent over it."""
    root = Path(root)
    build_project(root)
    store = workdir_store(root)
    policy = Policy.default(context_limit=DEMO_CONTEXT_LIMIT)
    compactor = Compactor(policy, store, lambda messages: extractive_summary(messages))
    provider = ScriptedProvider(demo_script(), name="demo-model", model="scripted")
    workspace = Workspace(root, bash_timeout=30, read_roots=(store.root_path,))
    refusals = 0

    def count(event: LoopEvent) -> None:
        nonlocal refusals
        refusals += isinstance(event, Refusal)
        if on_event is not None:
            on_event(event)

    agent = Agent(provider, compactor, workspace, on_event=count)
    try:
        result = agent.run([], DEMO_TASK)
        session = compactor.session_id or ""
        logged = sum(1 for _ in logged_messages(store.records(session)))
        recalled = (RECALL_EXAMPLE, compactor.recall(RECALL_EXAMPLE).hits)
        in_view = len(compactor.view())
    finally:
        store.close()
    return DemoRun(
        result=result,
        root=root,
        transcripts=sorted(store.transcripts_dir.glob("*.jsonl")),
        tool_results=sorted(store.results_dir.glob("*.txt")),
        session=session,
        logged=logged,
        in_view=in_view,
        recalled=recalled,
        model_calls=len(provider.calls),
        refusals=refusals,
        fixed="quantize" in (root / "app" / "tax.py").read_text(encoding="utf-8"),
    )
