"""The root ``uxlocal`` group and the entry point: wires each group's module in, nothing else."""

from __future__ import annotations

import os
import sys

import click

from .common import CONTEXT
from .judge import judge_cmd
from .models import doctor, models_group
from .palate import palate_group
from .report import report_cmd, view_cmd
from .run import demo_cmd, run_group
from .store import merge_cmd, query_cmd
from .tau2 import tau2_group
from .ufs import ingest_group, ufs_group


@click.group(context_settings=CONTEXT)
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
    if debug:
        import logging

        logging.basicConfig(level=logging.INFO)


for _command in (run_group, demo_cmd, query_cmd, merge_cmd, report_cmd, view_cmd, models_group, doctor,
                 ingest_group, ufs_group, palate_group, tau2_group, judge_cmd):
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
