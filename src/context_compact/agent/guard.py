"""A guard for the agent's ``bash`` tool and its outputs. A guard, not a sandbox.

Three things, each a cheap check against an honest mistake of the model, none a security
boundary:

* ``refused(command)``: the reason to refuse an obviously destructive command, or None.
  The deny-list names commands at a command position (start of line, after ``;``, ``&``,
  ``|``, ``(``, ``$(``, a backtick, or behind ``sudo``/``exec``/``env``/``nohup``): ``rm``
  with both ``-r`` and ``-f`` on ``/``, ``/*``, ``~`` or ``$HOME``; ``--no-preserve-root``;
  ``mkfs``/``mke2fs``/``wipefs``; ``dd`` or a redirection writing to a disk device; the
  classic fork bomb; ``shutdown``/``reboot``/``halt``/``poweroff``/``init 0|6``/
  ``systemctl poweroff|reboot|halt``; ``kill -9 -1``; ``chmod``/``chown -R`` on ``/``.
  ``grep shutdown`` or ``echo rm -rf /`` are not refused: they name the words as data.
  Anything indirect (``sh -c "$(echo ...)"``, a script, ``python -c``) passes; a real
  boundary is a container or a VM around the agent.
* ``Redactor``: replaces each secret value (API keys and tokens from the environment) in a
  tool's output with ``[redacted NAME]``, so no key reaches the history, the session log,
  transcripts or the CLI's lines through ``env``, ``cat .env`` or an error message.
  Values shorter than 8 characters are not treated as secrets (they would match anywhere).
* ``child_environment(env, hidden)``: the environment ``bash`` runs with, without the
  variables that hold the agent's own API keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Names of environment variables whose values are secrets: FOO_API_KEY, GITHUB_TOKEN, ...
SECRET_NAME = re.compile(r"(?:API_KEY|_TOKEN|_SECRET|_PASSWORD|SECRET_KEY)$", re.IGNORECASE)
MIN_SECRET_CHARS = 8
PROVIDER_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")

# A command position, and the wrappers that may stand before the command itself.
_AT = (
    r"(?:^|[;&|(`\n]|\$\()\s*"
    r"(?:(?:sudo|exec|nohup|command|time)\s+(?:-\S+\s+)*|env\s+(?:\S+=\S*\s+)*)*"
)
_ROOTISH = r"(?:/|/\*|~|~/|~/\*|\$HOME|\$\{HOME\}|\$HOME/\*?)(?=\s|$|[;&|)])"
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, re.compile(pattern, re.MULTILINE))
    for reason, pattern in (
        (
            "rm -rf of / or the home directory",
            _AT + r"rm\s+(?=(?:\S+\s+)*-\w*[rR])(?=(?:\S+\s+)*-\w*f)(?:-\S+\s+)*" + _ROOTISH,
        ),
        ("rm --no-preserve-root", _AT + r"rm\s+.*--no-preserve-root"),
        ("making or wiping a filesystem", _AT + r"(?:mkfs(?:\.\w+)?|mke2fs|wipefs)\b"),
        ("dd onto a device", _AT + r"dd\s+.*\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b)"),
        (
            "writing onto a disk device",
            r">\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)\w*",
        ),
        ("a fork bomb", r"(\w+|:)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&"),
        ("shutting the machine down", _AT + r"(?:shutdown|reboot|halt|poweroff)\b"),
        ("shutting the machine down", _AT + r"(?:init|telinit)\s+[06]\b"),
        (
            "shutting the machine down",
            _AT + r"systemctl\s+(?:-\S+\s+)*(?:poweroff|reboot|halt|kexec)\b",
        ),
        ("killing every process", _AT + r"kill\s+(?:-\S+\s+)*-1\b"),
        (
            "changing the owner or mode of /",
            _AT + r"ch(?:mod|own)\s+(?:\S+\s+)*?-\w*R\w*\s+(?:\S+\s+)*?/(?=\s|$|[;&|)])",
        ),
    )
)


def refused(command: str) -> str | None:
    """Why ``command`` is refused (an obviously destructive command), or None to run it."""
    for reason, pattern in _RULES:
        if pattern.search(command):
            return reason
    return None


class Redactor:
    """Replaces secret values with ``[redacted NAME]``; longest first, so no key is left
    half-replaced when one secret contains another."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        kept = {
            value: name
            for name, value in (secrets or {}).items()
            if isinstance(value, str) and len(value) >= MIN_SECRET_CHARS
        }
        self._secrets = sorted(kept.items(), key=lambda item: -len(item[0]))

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __call__(self, text: str) -> str:
        for value, name in self._secrets:
            if value in text:
                text = text.replace(value, f"[redacted {name}]")
        return text


def secrets_in(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` whose names say they hold a secret (``SECRET_NAME``)."""
    return {name: value for name, value in env.items() if SECRET_NAME.search(name) and value}


def child_environment(env: Mapping[str, str], hidden: Iterable[str]) -> dict[str, str]:
    """``env`` without the ``hidden`` variables."""
    drop = set(hidden)
    return {name: value for name, value in env.items() if name not in drop}


__all__ = [
    "PROVIDER_KEYS",
    "Redactor",
    "child_environment",
    "refused",
    "secrets_in",
]
