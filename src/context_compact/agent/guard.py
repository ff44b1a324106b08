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

# Where one simple command ends and the next begins (quotes are not parsed: a guard).
_SEPARATORS = re.compile(r"\$\(|&&|\|\||[;&|()`{}\n]")
_WRAPPERS = frozenset({"sudo", "exec", "nohup", "command", "time", "builtin", "doas"})
_ROOTISH = frozenset({"/", "/*", "~", "~/", "~/*", "$HOME", "${HOME}", "$HOME/", "$HOME/*"})
_HARMLESS_DEVICES = frozenset({"null", "zero", "stdout", "stderr", "random", "urandom"})
_DISK_WRITE = re.compile(r">\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)\w*")
_FORK_BOMB = re.compile(r"(?<![\w:.-])([\w:.-]{1,64})\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&")
_SUDO_ARGUMENT = frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"})
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})


def refused(command: str) -> str | None:
    """Why ``command`` is refused (an obviously destructive command), or None to run it.

    Linear in the length of the command: it is split into simple commands, each judged by
    its name and arguments."""
    if _FORK_BOMB.search(command):
        return "a fork bomb"
    if _DISK_WRITE.search(command):
        return "writing onto a disk device"
    for segment in _SEPARATORS.split(command):
        reason = _judge(_command_words(segment.split()))
        if reason is not None:
            return reason
    return None


def _command_words(words: list[str]) -> list[str]:
    """The words from the command name on, past ``sudo -u x``, ``env A=1`` and the like."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in _WRAPPERS or word == "env":
            i += 1
            while i < len(words) and (words[i].startswith("-") or "=" in words[i]):
                i += 2 if words[i] in _SUDO_ARGUMENT else 1
            continue
        if "=" in word and not word.startswith("="):  # VAR=value before the command
            i += 1
            continue
        break
    return words[i:]


def _flags(args: list[str]) -> str:
    """Every single-letter flag in ``args`` (``-rf -v`` gives ``rfv``), long ones spelled."""
    letters = []
    for arg in args:
        if arg == "--recursive":
            letters.append("r")
        elif arg == "--force":
            letters.append("f")
        elif arg.startswith("-") and not arg.startswith("--"):
            letters.append(arg[1:])
    return "".join(letters)


def _judge(words: list[str]) -> str | None:
    if not words:
        return None
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    flags = _flags(args)
    operands = {a for a in args if not a.startswith("-")}
    if name == "rm":
        if "--no-preserve-root" in args:
            return "rm --no-preserve-root"
        if "f" in flags and ("r" in flags or "R" in flags) and operands & _ROOTISH:
            return "rm -rf of / or the home directory"
    if name.startswith("mkfs") or name in ("mke2fs", "wipefs"):
        return "making or wiping a filesystem"
    if name == "dd":
        for arg in args:
            if arg.startswith("of=/dev/") and arg[len("of=/dev/") :] not in _HARMLESS_DEVICES:
                return "dd onto a device"
    if name in _POWER:
        return "shutting the machine down"
    if name in ("init", "telinit") and operands & {"0", "6"}:
        return "shutting the machine down"
    if name == "systemctl" and operands & {"poweroff", "reboot", "halt", "kexec"}:
        return "shutting the machine down"
    if name == "kill" and "-1" in args:
        return "killing every process"
    if name in ("chmod", "chown") and "R" in flags and "/" in operands:
        return "changing the owner or mode of /"
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
