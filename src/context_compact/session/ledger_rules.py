"""``LedgerRules``: which tools read files, write them, edit them, run commands or apply
patches, and under which argument names, for the ledger (``ledger.py``) to recognize.

The defaults cover our CLI agent (``read_file``, ``write_file``, ``edit_file``, ``bash``), the
SDK tool runner's text editor and bash tools, Claude Code (``Read``, ``Write``, ``Edit``,
``MultiEdit``, ``Bash``), Codex (``shell``, ``exec_command``, ``apply_patch``), SWE-agent
(``open``, ``create``, ``edit``, ``insert`` and its shell commands) and OpenHands
(``execute_bash``, ``str_replace_editor``, ``terminal``, ``file_editor``). Another agent's
tools are added by name: ``Policy.default(ledger=LedgerRules(shell=(*SHELL, "run_cmd")))``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

READ = ("read_file", "Read", "NotebookRead", "open", "read")
WRITE = ("write_file", "Write", "create", "write")
EDIT = ("edit_file", "Edit", "MultiEdit", "NotebookEdit", "edit", "insert", "str_replace")
SHELL = (
    "bash",
    "Bash",
    "shell",
    "local_shell",
    "shell_command",
    "exec_command",
    "execute_bash",
    "terminal",
    "run",
    "run_command",
)
PATCH = ("apply_patch",)
EDITOR = ("str_replace_editor", "str_replace_based_edit_tool", "text_editor", "file_editor")
PATH_KEYS = ("path", "file_path", "filename", "notebook_path", "file")
COMMAND_KEYS = ("command", "cmd")
CONTENT_KEYS = ("content", "file_text")


@dataclass(frozen=True)
class LedgerRules:
    """Tool names by what they do, and the argument names that hold a path, a command or a
    file's whole new content. An editor tool (``EDITOR``) says what it does in its
    ``command`` argument: ``view`` reads, ``create`` writes, the others edit."""

    read: tuple[str, ...] = READ
    write: tuple[str, ...] = WRITE
    edit: tuple[str, ...] = EDIT
    shell: tuple[str, ...] = SHELL
    patch: tuple[str, ...] = PATCH
    editor: tuple[str, ...] = EDITOR
    path_keys: tuple[str, ...] = PATH_KEYS
    command_keys: tuple[str, ...] = COMMAND_KEYS
    content_keys: tuple[str, ...] = CONTENT_KEYS

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, str) or not isinstance(value, tuple | list):
                raise ValueError(f"ledger rules: {item.name} must be names (a tuple of str)")
            if not all(isinstance(name, str) for name in value):
                raise ValueError(f"ledger rules: {item.name} holds a name that is not a str")
            object.__setattr__(self, item.name, tuple(value))

    def kind(self, name: str) -> str | None:
        """What the tool ``name`` does (``read``, ``write``, ``edit``, ``shell``, ``patch``,
        ``editor``), or None for a tool the ledger does not follow."""
        for kind in ("editor", "read", "write", "edit", "shell", "patch"):
            if name in getattr(self, kind):
                return kind
        return None


def ledger_rules(value: Any) -> LedgerRules:
    """``value`` as rules: rules as they are, a mapping (a policy read back from a session's
    meta) field by field; ``ValueError`` naming what is wrong otherwise."""
    if isinstance(value, LedgerRules):
        return value
    if isinstance(value, dict):
        known = {item.name for item in fields(LedgerRules)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"ledger rules: unknown field(s) {', '.join(unknown)}")
        return LedgerRules(**{k: tuple(v) for k, v in value.items()})
    raise ValueError(f"ledger must be LedgerRules, got {type(value).__name__}")


def stored_rules(policy: Any) -> LedgerRules | None:
    """The rules a session's meta records (its policy's ``ledger``), or None (the defaults)
    when it records none this version can use: a reader of an old session goes on."""
    raw = policy.get("ledger") if isinstance(policy, Mapping) else None
    try:
        return ledger_rules(raw) if raw is not None else None
    except (ValueError, TypeError):
        return None


__all__ = [
    "COMMAND_KEYS",
    "CONTENT_KEYS",
    "EDIT",
    "EDITOR",
    "PATCH",
    "PATH_KEYS",
    "READ",
    "SHELL",
    "WRITE",
    "LedgerRules",
    "ledger_rules",
    "stored_rules",
]
