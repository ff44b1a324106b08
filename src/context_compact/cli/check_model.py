"""``context-compact check-model``: what to know before pointing an agent at a local server.

    context-compact check-model --base-url http://localhost:8080/v1 --model qwen2.5 [--json]

Four checks, in order, each reported whatever the others found:

1. **window**: the context window the server states and where (``providers.local``);
2. **refusal**: a prompt over that window (twice its size, ``max_tokens`` 1) is sent; the
   server's answer is either a refusal ``is_context_overflow`` recognizes (the agent loop
   then compacts and retries, and adopts the window it states), a refusal it does not (the
   loop would give up), or no refusal at all (the server cut the prompt: compaction must
   never reach the window);
3. **estimate**: our offline estimate against the server's own counts, on a few kinds of
   text (prose, code, JSON, a log), when the server has a tokenize endpoint;
4. **loop**: a short tool loop (``agent.drill``) with the model as agent and as summarizer
   under a policy that knows nothing of the model: model calls, refusals, compactions.

An unreachable server is one error line (exit 1), never a traceback. A server's value that
cannot be what it claims (a window of 0 or 10^19 tokens, ``num_ctx ²``, a count of 0 tokens
for a text) is not used: the report lists it under ``odd``, one line each.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import click

from ..agent.drill import run_drill
from ..compactor import Compactor
from ..policy import Policy
from ..providers.errors import is_context_overflow, overflow_figures
from ..providers.local import (
    ServerTokenizer,
    ServerWindow,
    asks_server,
    discover_window,
    find_tokenizer,
    server_root,
)
from ..session.policy import assumed_limit
from ..sizing import text_tokens
from ..store.files import FileStore
from ..summary.llm import LLMSummarizer
from .outcome import dumps

SAMPLES: dict[str, str] = {
    "prose": (
        "The agent read the configuration, found that the cache directory was not writable, "
        "and asked whether it should create a new one under the user's home instead. "
    )
    * 8,
    "code": (
        "def merge(left: list[int], right: list[int]) -> list[int]:\n"
        "    out, i, j = [], 0, 0\n"
        "    while i < len(left) and j < len(right):\n"
        "        if left[i] <= right[j]:\n            out.append(left[i]); i += 1\n"
        "        else:\n            out.append(right[j]); j += 1\n"
        "    return out + left[i:] + right[j:]\n"
    )
    * 4,
    "json": json.dumps(
        [
            {"id": i, "path": f"src/pkg/module_{i}.py", "size": 1024 * i, "ok": i % 3 != 0}
            for i in range(24)
        ]
    ),
    "log": "".join(
        f"2025-03-0{i % 9 + 1}T12:{i:02d}:07Z INFO worker[{i}] processed batch {i * 17} "
        f"in {i * 3 + 11}ms (queue depth {i % 5})\n"
        for i in range(24)
    ),
}


def reachable(base_url: str, key: str | None) -> str | None:
    """None when the server answers at all (any HTTP status), else why not."""
    request = urllib.request.Request(f"{base_url.rstrip('/')}/models")
    if key:
        request.add_header("authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=5):
            return None
    except urllib.error.HTTPError:
        return None
    except (OSError, ValueError) as error:
        return str(getattr(error, "reason", None) or error)


def check_refusal(provider: Any, window: ServerWindow | None) -> dict[str, Any]:
    """Send a prompt twice the window and read the answer (see the module docstring)."""
    if window is None:
        return {"tried": False, "why": "no window known: nothing to exceed"}
    text = "0 " * window.tokens  # one or two tokens each: at least twice the window
    try:
        provider.client.chat.completions.create(
            model=provider.model, messages=[{"role": "user", "content": text}], max_tokens=1
        )
    except Exception as error:
        figures = overflow_figures(error)
        return {
            "tried": True,
            "refused": True,
            "recognized": is_context_overflow(error),
            "window_stated": figures.window,
            "prompt_tokens_stated": figures.prompt_tokens,
            "status": getattr(error, "status_code", None),
            "message": str(getattr(error, "message", None) or error)[:300],
        }
    return {
        "tried": True,
        "refused": False,
        "recognized": False,
        "why": "the server answered a prompt over its window: it cuts prompts silently",
    }


def check_estimate(tokenizer: ServerTokenizer | None) -> dict[str, Any]:
    """The estimate's relative error against the server's counts, per kind of text."""
    if tokenizer is None:
        return {"server_counts": False, "why": "the server has no tokenize endpoint"}
    counts = tokenizer.count_many(list(SAMPLES.values()))
    if tokenizer.odd:
        return {"server_counts": False, "why": "the tokenize endpoint's counts are odd"}
    if tokenizer.fallbacks:
        return {"server_counts": False, "why": "the tokenize endpoint did not answer"}
    rows = {}
    for (kind, text), real in zip(SAMPLES.items(), counts, strict=True):
        guess = text_tokens(text)
        rows[kind] = {"server": real, "estimate": guess, "error": round(guess / real - 1, 3)}
    errors = [row["error"] for row in rows.values()]
    return {
        "server_counts": True,
        "endpoint": tokenizer.endpoint.style,
        "samples": rows,
        "median_error": round(statistics.median(errors), 3),
    }


def check_loop(provider: Any, model: str, turns: int, counter: Any) -> dict[str, Any]:
    """A short drill with the model as agent and summarizer, under a policy that knows
    nothing of the model (its default limit: the report says what it assumed, no warning)."""
    policy = Policy.default(model=model, context_limit=assumed_limit(model))
    with tempfile.TemporaryDirectory(prefix="cc-check-model-") as tmp:
        root = Path(tmp)
        summarizer = LLMSummarizer(provider, max_tokens=policy.summary_max_tokens)
        compactor = Compactor(policy, FileStore(root), summarizer, token_counter=counter)
        result = run_drill(provider, compactor, root, turns=turns)
        out = result.as_dict()
        out["summaries_by_model"] = summarizer.calls
        return out


def run_checks(base_url: str, model: str, turns: int, key: str | None) -> dict[str, Any]:
    from ..providers.openai_chat import OpenAIChatProvider

    provider = OpenAIChatProvider(model, api_key=key, base_url=base_url, timeout=120)
    odd: list[str] = []
    try:
        window = None
        if asks_server(base_url):
            window = discover_window(base_url, model, key=key, ask_refusal=True, odd=odd)
        endpoint = find_tokenizer(base_url, model, key=key)
        tokenizer = ServerTokenizer(endpoint, text_tokens, key=key) if endpoint else None
        report: dict[str, Any] = {
            "base_url": base_url,
            "server": server_root(base_url),
            "model": model,
            "window": None
            if window is None
            else {"tokens": window.tokens, "source": window.source},
            "refusal": check_refusal(provider, window),
            "estimate": check_estimate(tokenizer),
        }
        report["loop"] = check_loop(provider, model, turns, tokenizer) if turns else None
        report["odd"] = [*odd, *(tokenizer.odd if tokenizer is not None else [])]
        return report
    finally:
        provider.close()


def lines(report: dict[str, Any]) -> list[str]:
    """The report for a person, one fact a line."""
    out = [f"server {report['server']}, model {report['model']}"]
    out += [f"odd value: {line}" for line in report.get("odd", [])]
    window = report["window"]
    out.append(
        f"window: {window['tokens']:,} tokens ({window['source']})"
        if window
        else "window: not stated by the server (an agent adopts the one its first refusal states)"
    )
    refusal = report["refusal"]
    if not refusal["tried"]:
        out.append(f"refusal: not tried ({refusal['why']})")
    elif refusal["refused"]:
        seen = "recognized" if refusal["recognized"] else "NOT recognized"
        stated = refusal.get("window_stated")
        said = f", stating a window of {stated:,}" if stated else ", stating no window"
        out.append(f"refusal: {seen} (HTTP {refusal['status']}{said})")
    else:
        out.append(f"refusal: none ({refusal['why']})")
    estimate = report["estimate"]
    if estimate["server_counts"]:
        parts = ", ".join(f"{k} {v['error']:+.0%}" for k, v in estimate["samples"].items())
        out.append(
            f"estimate vs the server's counts: median {estimate['median_error']:+.0%} ({parts})"
        )
    else:
        out.append(f"estimate: not compared ({estimate['why']})")
    loop = report["loop"]
    if loop is not None:
        stages = ", ".join(f"{k} {v}" for k, v in loop["compactions"].items()) or "none"
        out.append(
            f"loop: {loop['model_calls']} model calls, {loop['refused']} refused, limit "
            f"{loop['limit']:,}, compactions: {stages}; {loop['summaries_by_model']} summaries "
            f"by the model; {loop['seconds']} s"
        )
    return out


def http_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--base-url`` as given when it is an http(s) URL naming a host (a usage error
    naming it otherwise: nothing else can be asked)."""
    parts = urllib.parse.urlsplit(value.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise click.BadParameter(
            f"{value!r} is not an http:// or https:// URL with a host "
            "(e.g. http://localhost:8080/v1)"
        )
    return value.strip()


@click.command("check-model")
@click.option(
    "--base-url",
    required=True,
    callback=http_url,
    help="The server's OpenAI-compatible URL (http(s)://HOST[:PORT]/v1).",
)
@click.option("--model", required=True, help="The model name the server answers to.")
@click.option("--turns", default=6, show_default=True, help="Tool turns of the loop (0: none).")
@click.option("--api-key", envvar="OPENAI_API_KEY", default=None, help="If the server wants one.")
@click.option("--json", "as_json", is_flag=True, help="The report as JSON.")
def check_model_command(
    base_url: str, model: str, turns: int, api_key: str | None, as_json: bool
) -> None:
    """Check a local model server: its window, its refusals, its counts, a compaction loop."""
    why = reachable(base_url, api_key)
    if why is not None:
        raise click.ClickException(f"cannot reach the server at {base_url}: {why}")
    if turns < 0:
        raise click.UsageError(f"--turns must be >= 0, got {turns}")
    report = run_checks(base_url, model, turns, api_key)
    if as_json:
        click.echo(dumps(report, indent=2))
        return
    for line in lines(report):
        click.echo(line)


__all__ = ["check_model_command", "run_checks"]
