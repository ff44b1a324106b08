"""``--policy NAME`` and ``bench``: the engines of installed packages, and the bench, loaded
when they are read, shown or run, not when the CLI is imported.

``--policy`` offers every engine of the registry, those of installed packages included (the
bench's peers, through the registry's entry points); they register the first time the
option's choices or help are needed (``PolicyName``, ``PolicyOption``). The ``bench`` command
comes from the bench's own distribution (``context_compact_bench``), imported the first time
the group looks it up (``Commands``), so ``context-compact run`` never loads it; without that
distribution, ``bench`` is one line saying what to install (exit status 1).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import click

from ..errors import MissingExtra
from ..registry import ENGINES, NAMES, load_plugins

BENCH = "context_compact_bench"
"""The bench's top-level package, a distribution of its own (the ``bench`` extra)."""


def policy_names() -> list[str]:
    """Every name of the registry, the engines of installed packages registered first."""
    load_plugins()
    return list(NAMES)


def policy_help() -> str:
    policy_names()
    return "; ".join(f"{name}: {entry.about}" for name, entry in ENGINES.items())


class PolicyName(click.Choice[str]):
    """A choice among the registry's names, read when first needed."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        return tuple(policy_names())

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:
        pass  # the registry's names, always


class PolicyOption(click.Option):
    """An option whose help, unless one is given, lists the registry's engines, read when
    the help is."""

    _given: str | None = None

    @property
    def help(self) -> str | None:
        return self._given if self._given is not None else policy_help()

    @help.setter
    def help(self, value: str | None) -> None:
        self._given = value


def bench_command() -> click.Command:
    """The bench's ``bench`` command, or, when the bench is not installed, a command of the
    same name that says in one line what to install."""
    try:
        command = importlib.import_module("context_compact_bench.command").bench
    except ModuleNotFoundError as error:
        if error.name not in (BENCH, f"{BENCH}.command"):
            raise  # the bench is there but something it needs is not: its own words
        return click.Command(
            "bench",
            callback=_bench_missing,
            help="The bench (not installed: pip install 'context-compact[bench]').",
            context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
            add_help_option=False,
        )
    assert isinstance(command, click.Command)
    return command


def _bench_missing() -> None:
    raise MissingExtra("context-compact bench", "the bench", "bench", "context-compact-bench")


class Commands(click.Group):
    """The CLI's group: ``bench`` imported when it is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "bench"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "bench" and "bench" not in self.commands:
            self.add_command(bench_command())
        return super().get_command(ctx, cmd_name)
