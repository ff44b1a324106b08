"""How the agent CLI is configured: the environment (the work directory's ``.env`` overlaid by
the process's own variables), the model provider, and the policy at the model's context limit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..config import ConfigError, apply_settings, read_config
from ..engine import PolicyLike
from ..providers.base import Provider
from ..providers.openai_chat import is_local_url
from ..registry import entry, policy_at
from ..session.policy import unknown_window_note
from ..sizing import known_window

LOCAL_ANTHROPIC_KEY = "sk-ant-local-no-key"


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of a ``.env`` file; comments, blanks and ``export`` are allowed."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.removeprefix("export ").strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if key:
            values[key] = value
    return values


def environment(workdir: Path) -> dict[str, str]:
    """The settings in force: ``<workdir>/.env`` overlaid by the real environment."""
    return {**read_dotenv(workdir / ".env"), **os.environ}


def make_provider(kind: str, model: str, env: dict[str, str], max_retries: int = 2) -> Provider:
    if kind == "anthropic":
        from ..providers.anthropic import AnthropicProvider

        key, base = env.get("ANTHROPIC_API_KEY"), env.get("ANTHROPIC_BASE_URL") or None
        if not key:
            if not (base and is_local_url(base)):
                raise click.UsageError(
                    "ANTHROPIC_API_KEY is not set; export it or put it in .env in the work "
                    "directory"
                )
            key = LOCAL_ANTHROPIC_KEY
        return AnthropicProvider(
            model, api_key=key, base_url=base, max_retries=max_retries, cache=True
        )
    from ..providers.openai_chat import OpenAIChatProvider

    key, base = env.get("OPENAI_API_KEY") or None, env.get("OPENAI_BASE_URL") or None
    if key is None and not (base and is_local_url(base)):
        raise click.UsageError(
            "OPENAI_API_KEY is not set; export it or put it in .env in the work directory "
            "(a local OPENAI_BASE_URL needs no key)"
        )
    return OpenAIChatProvider(model, api_key=key, base_url=base, max_retries=max_retries)


# Below this a request holds little more than the agent's own system prompt and tools.
MIN_CONTEXT_LIMIT = 1_024


def make_policy(name: str, model: str | None, context_limit: int | None) -> PolicyLike:
    """The policy ``--policy NAME`` names in the registry, at ``--context-limit`` if given
    (a usage error below ``MIN_CONTEXT_LIMIT``)."""
    if context_limit is not None and context_limit < MIN_CONTEXT_LIMIT:
        unit = "characters" if entry(name).unit == "chars" else "tokens"
        raise click.BadParameter(
            f"{context_limit:,} {unit} is below the minimum of {MIN_CONTEXT_LIMIT:,} for the "
            f"{name} policy: the agent's system prompt and tools alone take most of that. "
            "Local models start at 4,096.",
            param_hint="'--context-limit'",
        )
    try:
        return policy_at(name, context_limit, model=model)
    except (ValueError, TypeError) as error:
        raise click.UsageError(str(error)) from error


def configured_policy(
    options: dict[str, Any],
    model: str | None,
    workdir: Path,
    note: Callable[[str], None] | None = None,
) -> Any:
    """The ``--policy`` in force with ``.context-compact/config.toml``'s ``[policy]`` settings,
    then the threshold options, applied over its defaults. ``note`` is told, in one line, when
    the limit rests on a window assumed for a model we do not know."""
    policy = make_policy(options["policy"], model, options["context_limit"])
    try:
        settings, source = read_config(workdir)
        if options["context_limit"] is not None:
            settings.pop("context_limit", None)
        assumed = "context_limit" not in settings and options["context_limit"] is None
        unknown = model and known_window(model) is None and entry(options["policy"]).unit
        if note and model and assumed and unknown == "tokens":
            how = "--context-limit N, or context_limit in .context-compact/config.toml"
            note(unknown_window_note(model, how))
        policy = apply_settings(policy, settings, source)
        flags = {
            key: options[key] for key in ("high_water", "low_water") if options[key] is not None
        }
        return apply_settings(policy, flags, "--high-water/--low-water")
    except ConfigError as error:
        raise click.UsageError(str(error)) from error
