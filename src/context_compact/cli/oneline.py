"""The command group's last word on a failure nothing nearer caught: an optional dependency
that is not installed (``MissingExtra``) is one line naming the pip line that adds it, never a
traceback. Everything else passes through unchanged (``--debug`` and the commands' own
handlers decide about those)."""

from __future__ import annotations

from typing import Any

import click

from ..errors import MissingExtra
from .policies import Commands


class OneLineGroup(Commands):
    """The CLI's group (``Commands``) whose commands end a missing extra with one line, exit
    status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MissingExtra as error:
            raise click.ClickException(str(error)) from None


__all__ = ["OneLineGroup"]
