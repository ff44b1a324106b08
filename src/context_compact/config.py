"""Policy settings from a work directory's config file and the command line.

``<workdir>/.context-compact/config.toml`` may hold one table, ``[policy]``, whose keys are
fields of the policy in force (``policy.py`` documents each one):

    [policy]
    context_limit = 100_000
    high_water = 0.80
    low_water = 0.35

Command-line options win over the file, the file over the policy's defaults. Anything the
policy does not have, a value of the wrong type, or a combination the policy refuses
(``low_water >= high_water``) is a ``ConfigError`` naming the key and where it came from;
nothing is ignored or guessed.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from .errors import ConfigError

CONFIG_FILE = Path(".context-compact") / "config.toml"
TABLES = ("policy",)


def read_config(workdir: Path) -> tuple[dict[str, Any], str]:
    """``([policy] settings, file name)`` of ``workdir``'s config file ({} when there is none)."""
    path = workdir / CONFIG_FILE
    if not path.is_file():
        return {}, str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from error
    for key in data:
        if key not in TABLES:
            raise ConfigError(f"{path}: unknown key {key!r} (expected a [policy] table)")
    settings = data.get("policy", {})
    if not isinstance(settings, dict):
        raise ConfigError(f"{path}: 'policy' must be a table ([policy])")
    return settings, str(path)


def apply_settings(policy: Any, settings: dict[str, Any], source: str) -> Any:
    """``policy`` with ``settings`` (field -> value) applied; ``source`` names where they
    came from in errors (a file, or the options)."""
    if not settings:
        return policy
    fields = {f.name for f in dataclasses.fields(policy) if f.init}
    values = {}
    for key, value in settings.items():
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise ConfigError(
                f"{source}: unknown key {key!r} for the {policy.engine!r} policy (known: {known})"
            )
        values[key] = _typed(key, value, getattr(policy, key), source)
    try:
        return dataclasses.replace(policy, **values)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{source}: {error}") from error


def _typed(key: str, value: Any, current: Any, source: str) -> Any:
    def wrong(expected: str) -> ConfigError:
        got = type(value).__name__
        return ConfigError(f"{source}: {key} must be {expected}, got {value!r} ({got})")

    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if isinstance(current, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong("an integer")
        return value
    if isinstance(current, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong("a number")
        return float(value)
    if current is None or isinstance(current, str):
        if not isinstance(value, str):
            raise wrong("a string")
        return value
    raise wrong(type(current).__name__)


__all__ = ["CONFIG_FILE", "ConfigError", "apply_settings", "read_config"]
