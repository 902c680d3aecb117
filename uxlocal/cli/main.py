"""The root ``uxlocal`` group and the entry point: the core commands, then each suite's own.

A suite adds its commands through one hook, ``register_commands(cli)`` in the ``cli.py`` of its
package (simonw/llm's hook; ``uxlocal.plugins`` finds the modules through the ``uxlocal.suites``
entry points without importing the suites). They are added on first need: ``uxlocal query``
imports none of them.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from uxlocal.clikit import CONTEXT, EPISODES_KEY, RUNNER_KEY
from uxlocal.errors import UxlocalError
from uxlocal.plugins import suite_command_modules

from .common import run_configured, run_episodes
from .models import doctor, models_group
from .report import report_cmd, view_cmd
from .run import demo_cmd, run_group
from .store import merge_cmd, query_cmd


class LibraryError(click.ClickException):
    """A library error (``uxlocal.errors``) as click shows it: one line, the library's exit code."""

    def __init__(self, error: UxlocalError) -> None:
        super().__init__(error.format_message())
        self.exit_code = error.exit_code
        self.error = error

    def show(self, file: Any = None) -> None:
        """Print ``Error: <message>``: no usage block, the message already says where and what."""
        click.echo(f"Error: {self.format_message()}", file=file or sys.stderr)


class RootGroup(click.Group):
    """``uxlocal``: core commands, plus every registered suite's commands, added on first need."""

    suite_commands_added = False

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; the library's errors become click's (exit 2 for a user's input, 1 otherwise)."""
        try:
            return super().invoke(ctx)
        except UxlocalError as exc:
            raise LibraryError(exc) from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Core and suite commands, sorted."""
        self.add_suite_commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Return a core command, else a suite's (suites are loaded only for a name the core lacks)."""
        if cmd_name not in self.commands:
            self.add_suite_commands()
        return super().get_command(ctx, cmd_name)

    def add_suite_commands(self) -> None:
        """Run each suite's ``register_commands`` hook; a suite may not replace another command."""
        if self.suite_commands_added:
            return
        self.suite_commands_added = True
        for module in suite_command_modules():
            staging = click.Group()
            importlib.import_module(module).register_commands(staging)
            for name, command in staging.commands.items():
                if self.commands.get(name) is command:  # added by an earlier pass
                    continue
                if name in self.commands:
                    raise UxlocalError(f"{module} adds a command {name!r}, which uxlocal already has; "
                                       "rename it")
                self.add_command(command, name)


@click.group(cls=RootGroup, context_settings=CONTEXT)
@click.option("--debug", is_flag=True, envvar="UXLOCAL_DEBUG", help="Show tracebacks for errors.")
@click.version_option(package_name="uxlocal")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Evaluate multi-turn assistants and simulated users on local models.

    \b
    Examples:
      uxlocal demo
      uxlocal run uxbench --model candidate=embedded --model judge=embedded
      uxlocal query --db uxlocal.duckdb "select * from run_summary"
    """
    ctx.obj = {"debug": debug}
    ctx.meta[RUNNER_KEY] = run_configured  # suites' commands run through it (clikit.run_suite_from_command)
    ctx.meta[EPISODES_KEY] = run_episodes  # and play scripted episodes (clikit.run_episodes_from_command)
    if debug:
        import logging

        logging.basicConfig(level=logging.INFO)


for _command in (run_group, demo_cmd, query_cmd, merge_cmd, report_cmd, view_cmd, models_group, doctor):
    cli.add_command(_command)


def main() -> None:
    """Entry point: user errors exit 2 with one line; ``--debug`` shows the traceback.

    On a CPU machine it first re-executes itself with tcmalloc and Intel OpenMP preloaded
    (``uxlocal.cpu_tuning``; ``UXLOCAL_NO_PRELOAD=1`` turns that off), since a preload only acts
    when a process starts, and makes compiled engines the default for every command but ``demo``
    (``UXLOCAL_CPU_COMPILE=0`` keeps them eager).
    """
    from uxlocal.cpu_tuning import reexec_with_preload, set_cli_compile_default

    set_cli_compile_default(sys.argv[1:])
    reexec_with_preload()
    debug = "--debug" in sys.argv[1:] or bool(os.environ.get("UXLOCAL_DEBUG"))
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if debug:
            raise
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted; rerun the same command to resume", err=True)
        sys.exit(130)
    except Exception as exc:
        import duckdb  # only once something failed: the happy path pays no import

        if debug or not isinstance(exc, duckdb.OutOfMemoryException):
            raise
        click.echo(out_of_store_memory(exc), err=True)
        sys.exit(1)


def out_of_store_memory(exc: Exception) -> str:
    """Return what to do when DuckDB hits uxlocal's memory cap (``uxlocal.store.offline``)."""
    from uxlocal.store.offline import LARGE_STORE_MB, MEMORY_ENV

    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (f"the store ran out of its DuckDB memory cap ({first}). What finished is saved: run the same "
            f"command again with a larger cap, e.g. {MEMORY_ENV}=2GB, and it resumes (a store over "
            f"~{LARGE_STORE_MB} MB also gets a larger cap of its own). --debug shows the traceback.")
