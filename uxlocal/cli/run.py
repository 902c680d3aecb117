"""``uxlocal run SUITE`` and ``uxlocal demo``.

``run`` has one subcommand per registered suite, with options from its config class.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click

from uxlocal.clikit import CONTEXT, config_options, print_result, run_options, split_run_options

from .common import run_configured


def suite_command(suite_cls: Any) -> click.Command:
    """``uxlocal run <suite>`` with the suite's own options plus the shared run options."""

    @config_options(suite_cls.config_cls)
    @run_options
    def command(**kwargs: Any) -> None:
        common = split_run_options(kwargs)
        run_configured(suite_cls.name, kwargs, common)

    binds = suite_cls.example or " ".join(f"--model {role}=embedded" for role in suite_cls.roles)
    doc = f"{suite_cls.help}\n\n\b\nExample:\n  uxlocal run {suite_cls.name} {binds}"
    return click.command(name=suite_cls.name, help=doc, context_settings=CONTEXT)(command)


class SuiteGroup(click.Group):
    """``uxlocal run``: one subcommand per registered suite, built on demand."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every registered suite, sorted."""
        from uxlocal.suites.base import suites

        return sorted(suites())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """Return the named suite's command, or None (click then says it does not exist)."""
        from uxlocal.suites.base import suite_class

        cls = suite_class(name)
        return suite_command(cls) if cls is not None else None


@click.group(name="run", cls=SuiteGroup, context_settings=CONTEXT)
def run_group() -> None:
    """Run one suite on local models and print its results.

    \b
    Example:
      uxlocal run selftest --model candidate=embedded --model user=embedded --model judge=embedded
    """


@click.command(name="demo", context_settings=CONTEXT)
@click.option("--db", default="uxlocal-demo.duckdb", show_default=True, envvar="UXLOCAL_DEMO_DB",
              type=click.Path(dir_okay=False), help="DuckDB store the demo writes.")
@click.option("--suites", "suite_names", default=None, help="Comma-separated subset of suites.")
@click.option("--model", "model_spec", default="embedded", show_default=True, help="Model for every role.")
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
@click.option("--verbose", is_flag=True,
              help="Show vLLM/torch messages and loading bars here instead of in <db>.log.")
def demo_cmd(db: str, suite_names: str | None, model_spec: str, no_progress: bool, verbose: bool) -> None:
    """Run every suite on bundled sample data with the embedded model.

    \b
    Example:
      uxlocal demo --db demo.duckdb
    """
    from uxlocal.demo import NEXT_STEPS, run_demo
    from uxlocal.quiet import quiet_libraries

    chosen = [s.strip() for s in suite_names.split(",")] if suite_names else None
    progress = not no_progress and sys.stderr.isatty()
    log = Path(db).with_suffix(".log")
    with contextlib.nullcontext(None) if verbose else quiet_libraries(log, title="uxlocal demo") as screen:
        def echo(line: str) -> None:
            click.echo(line, file=screen)

        if screen is not None:
            echo(f"library messages (vLLM, torch, loading bars): {log.resolve()} (--verbose shows them here)")
        results = run_demo(db=Path(db), suites=chosen, model=model_spec, progress=progress, echo=echo)
    for result in results:
        print_result(result)
    store = Path(db).resolve()
    click.echo(f"\nDuckDB store: {store}")
    click.echo(f"Read it as a page: uxlocal report --db {store} --html report.html   "
               f"(trajectories: uxlocal view --db {store})")
    click.echo(NEXT_STEPS)
