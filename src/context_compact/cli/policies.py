"""``--policy NAME`` and ``bench``: the bench loaded when they are read, shown or run, not
when the CLI is imported.

``--policy`` offers every engine of the registry, the bench's peers included; the peers
register the first time the option's choices or help are needed (``PolicyName``,
``PolicyOption``). The ``bench`` command is imported the first time the group looks it up
(``Commands``), so ``context-compact run`` never loads the bench.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from ..registry import ENGINES, NAMES


def policy_names() -> list[str]:
    """Every name of the registry, the bench's peers registered first."""
    from ..bench.strategies import register_peers

    register_peers()
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


class Commands(click.Group):
    """The CLI's group: ``bench`` imported when it is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "bench"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "bench" and "bench" not in self.commands:
            from ..bench.command import bench

            self.add_command(bench)
        return super().get_command(ctx, cmd_name)
