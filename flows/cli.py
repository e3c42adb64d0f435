"""The ``envmill`` command. Each group lives in its own module; heavy imports stay lazy."""

from __future__ import annotations

import sys

import typer

from envmill.flows import env_commands
from envmill.flows.cli_support import CommandError, echo_error

app = typer.Typer(
    name="envmill",
    help="Synthesize tool-interactive environments, certified scenarios and trajectories.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(env_commands.app, name="env")


def main() -> None:
    """Console entry point: user errors become one line on stderr and a non-zero exit."""
    try:
        returned = app(standalone_mode=False)  # click hands back typer.Exit codes here
        if isinstance(returned, int) and returned:
            sys.exit(returned)
    except CommandError as exc:
        echo_error(str(exc))
        sys.exit(exc.code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        echo_error("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        echo_error("interrupted; finished work is kept")
        sys.exit(130)
    except Exception as exc:  # click usage errors and anything unforeseen, still one line
        from click.exceptions import ClickException

        if isinstance(exc, ClickException):
            echo_error(exc.format_message())
            sys.exit(exc.exit_code)
        echo_error(f"{type(exc).__name__}: {exc}")
        sys.exit(1)
