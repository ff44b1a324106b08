"""The command group's last word on a failure nothing nearer caught (``outcome`` holds the
rules): an optional dependency that is not installed (``MissingExtra``) is one line naming the
pip line that adds it; an output stream that cannot be written is one line and status 1;
under ``--json`` every error is a JSON object on stdout. Everything else passes through
unchanged (``--debug`` and the commands' own handlers decide about those)."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from ..errors import MissingExtra
from .outcome import JSON_GIVEN, as_json, finish_output, output_failure, prepare_streams
from .policies import Commands


class OneLineGroup(Commands):
    """The CLI's group (``Commands``) whose commands end a missing extra or an output that
    cannot be written with one line, exit status 1, and report errors as JSON under
    ``--json``."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        # Before click reads anything: ``--version`` and ``--help`` write before any command.
        prepare_streams()
        try:
            return super().main(*args, **kwargs)
        except (OSError, ValueError) as error:
            line = output_failure(error)
            if line is None:
                raise
            with contextlib.suppress(OSError, ValueError):
                click.echo(f"Error: {line}", err=True)
            sys.exit(1)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Read before any parsing can fail: a usage mistake under --json is JSON too.
        ctx.meta[JSON_GIVEN] = "--json" in args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
            finish_output()
            return result
        except MissingExtra as error:
            raise as_json(ctx, click.ClickException(str(error))) from None
        except click.exceptions.Exit:
            finish_output()
            raise
        except click.ClickException as error:
            raise as_json(ctx, error) from None
        except (OSError, ValueError) as error:
            line = output_failure(error)
            if line is None:
                raise
            raise click.ClickException(line) from None


__all__ = ["OneLineGroup"]
