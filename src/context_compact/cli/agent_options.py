"""The options every command that runs the agent takes (``run``, ``chat``): provider, model,
policy, context limit and water marks, work directory, turns, retries, resume, debug, quiet,
declared once as ``agent_options``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .policies import PolicyName, PolicyOption


def agent_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--provider",
            type=click.Choice(["anthropic", "openai"]),
            default="anthropic",
            show_default=True,
            help="Which API to talk to.",
        ),
        click.option("--model", default=None, help="Model id (default: env MODEL_ID)."),
        # --policy offers every engine of the registry, the bench's peers included.
        click.option(
            "--policy",
            cls=PolicyOption,
            type=PolicyName(),
            default="default",
            show_default=True,
        ),
        click.option(
            "--context-limit",
            type=click.IntRange(min=1),
            default=None,
            help="Compaction limit: tokens (characters for seed), at least 1,024. "
            "Default: the model's window.",
        ),
        click.option(
            "--high-water",
            type=click.FloatRange(0, 1, min_open=True),
            default=None,
            help="Compact when the request passes this share of the limit (default policy).",
        ),
        click.option(
            "--low-water",
            type=click.FloatRange(0, 1, min_open=True),
            default=None,
            help="Compact down to this share of the limit (default policy).",
        ),
        click.option(
            "--workdir",
            type=click.Path(exists=True, file_okay=False, path_type=Path),
            default=None,
            help="Work directory of the tools (default: current directory).",
        ),
        click.option(
            "--max-turns",
            type=click.IntRange(min=1),
            default=50,
            show_default=True,
            help="Model calls one request may take before it stops without an answer.",
        ),
        click.option(
            "--max-retries",
            type=click.IntRange(min=0),
            default=2,
            show_default=True,
            help="Retries of a rate-limited, overloaded, failed (5xx) or dropped model call, "
            "with the SDK's backoff (it honors the API's retry-after).",
        ),
        click.option(
            "--resume",
            metavar="ID",
            default=None,
            help="Continue session ID (from .context-compact/sessions.db in the work directory).",
        ),
        click.option("--debug", is_flag=True, help="Show tracebacks and per-turn token counts."),
        click.option(
            "--quiet",
            "-q",
            is_flag=True,
            help="No progress on stderr (tool calls, compactions); errors are still shown.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command
