"""``uxlocal judge``: judge anyone's conversations with a rubric (``uxlocal.suites.judge``).

Options come from ``JudgeConfig``'s field docstrings (environment variables ``UXLOCAL_JUDGE_<FIELD>``)
plus the shared run options.
"""

from __future__ import annotations

from typing import Any

import click

from uxlocal.clikit import CONTEXT, config_options, run_suite_from_command, run_options, split_run_options
from uxlocal.errors import InputError
from uxlocal.suites.judge.config import JudgeConfig

_JUDGE_FIELDS = tuple(name for name in JudgeConfig.model_fields if name != "input")
_DECLS = {"rubric": ("-r", "--rubric"), "both_orders": ("--both-orders/--one-order",),
          "skip_bad_rows": ("--skip-bad-rows/--no-skip-bad-rows",)}


@click.command(name="judge", context_settings=CONTEXT)
@click.argument("input_", metavar="INPUT", required=False)
@config_options(JudgeConfig, _JUDGE_FIELDS, envvar_prefix="UXLOCAL_JUDGE_", decls=_DECLS)
@run_options
@click.option("--list-rubrics", is_flag=True, help="List the built-in rubrics and exit.")
def judge_cmd(input_: str | None, list_rubrics: bool, **kwargs: Any) -> None:
    """Judge your own conversations with a rubric and a local model.

    \b
    Examples:
      uxlocal judge chats.jsonl --rubric ux-liked --model judge=embedded --human-col label
      uxlocal judge pairs.csv --rubric preference --judges embedded,other --db judged.duckdb
      uxlocal judge "duckdb:runs.duckdb::select * from my_chats" --rubric my-rubric.toml -m judge=embedded
    """
    if list_rubrics:
        _list_rubrics()
        return
    if not input_:
        raise InputError(None, None, "no INPUT given", "uxlocal judge FILE.jsonl --rubric ux-liked -m judge=embedded")
    common = split_run_options(kwargs)
    run_suite_from_command("judge", {"input": input_, **kwargs}, common, show=_print_judged)


def _list_rubrics() -> None:
    from uxlocal.suites.judge.rubrics import builtin_rubrics, load_rubric

    for name in builtin_rubrics():
        rubric = load_rubric(name)
        click.echo(f"{name:16} {rubric.kind:9} {len(rubric.criteria_list())} criteria  {rubric.sha256()[:12]}  "
                   f"{rubric.question[:60]}")


def _print_judged(result: Any) -> None:
    """The judge's summary line (requests, cache, items already judged), notes and tables."""
    from uxlocal.reportkit.tables import render_tables

    stats = result.stats
    click.echo(f"\nrun {result.run_id} ({'resumed' if result.resumed else 'new'}): {stats.requests} judge requests, "
               f"{stats.cache_hits} from cache, {stats.engine_calls} engine calls, {stats.episodes_skipped} items "
               f"already judged, {stats.episodes_failed} failed, {stats.wall_s:.1f}s")
    for note in result.notes:
        click.echo(f"note: {note}")
    render_tables(result.tables)


def register_commands(cli: click.Group) -> None:
    """Hook the CLI finds in the suite's package: add the suite's commands to the root ``uxlocal`` group."""
    cli.add_command(judge_cmd)
