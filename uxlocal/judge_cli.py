"""``uxlocal judge``: the click command over the judge suite (``uxlocal.suites.judge``).

Kept apart from ``cli.py`` so the command can move with the CLI package; options take their
help text from ``JudgeConfig``'s field docstrings, so each is written once.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from uxlocal.suites.judge.config import JudgeConfig

_FIELDS = JudgeConfig.model_fields


def _opt(name: str, *decls: str, **kwargs: Any) -> Any:
    """A click option for a JudgeConfig field, help from its docstring, env var UXLOCAL_JUDGE_<NAME>."""
    field = _FIELDS[name]
    flag = decls or ("--" + name.replace("_", "-"),)
    default = kwargs.pop("default", field.default)
    return click.option(*flag, name, default=default, show_default=default is not None,
                        envvar=f"UXLOCAL_JUDGE_{name.upper()}", help=(field.description or "").strip(), **kwargs)


def _options(fn: Any) -> Any:
    options = [
        click.argument("input_", metavar="INPUT", required=False),
        _opt("rubric", "-r", "--rubric"),
        click.option("-m", "--model", "model", multiple=True, metavar="ROLE=SPEC",
                     help="Bind judge (judge2, ...) to a preset, folder or server URL (repeatable)."),
        _opt("judges"),
        click.option("--db", default="uxlocal.duckdb", show_default=True, envvar="UXLOCAL_DB",
                     type=click.Path(dir_okay=False), help="DuckDB store to write (resumes the same run)."),
        *[_opt(name) for name in ("id_col", "conversation_col", "prompt_col", "response_col", "response_a_col",
                                  "response_b_col", "human_col", "group_col")],
        _opt("mode", type=click.Choice(["label", "reason"])),
        _opt("layout", type=click.Choice(["shared", "criterion_first"])),
        _opt("both_orders", "--both-orders/--one-order"),
        _opt("skip_bad_rows", "--skip-bad-rows/--no-skip-bad-rows"),
        _opt("reason_max_tokens", type=int),
        _opt("bootstrap", type=int),
        click.option("--limit", type=int, default=None, help="At most N input rows."),
        click.option("--seed", type=int, default=0, show_default=True, help="Base seed (bootstrap too)."),
        click.option("--max-batch", type=int, default=256, show_default=True, help="Most requests per engine call."),
        click.option("--fresh", is_flag=True, help="Start a new run even if an identical one exists."),
        click.option("--no-progress", is_flag=True, envvar="UXLOCAL_NO_PROGRESS", help="Hide the progress bar."),
        click.option("--list-rubrics", is_flag=True, help="List the built-in rubrics and exit."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


@click.command(name="judge", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@_options
def judge(input_: str | None, model: tuple[str, ...], db: str, limit: int | None, seed: int, max_batch: int,
          fresh: bool, no_progress: bool, list_rubrics: bool, **options: Any) -> None:
    """Judge your own conversations with a rubric and a local model.

    \b
    Examples:
      uxlocal judge chats.jsonl --rubric ux-liked --model judge=embedded --human-col label
      uxlocal judge pairs.csv --rubric preference --judges embedded,other --db judged.duckdb
      uxlocal judge "duckdb:runs.duckdb::select * from my_chats" --rubric my-rubric.toml -m judge=embedded
    """
    from uxlocal.config import RunConfig
    from uxlocal.errors import InputError
    from uxlocal.report.tables import render_tables
    from uxlocal.runner import bind_roles, resolve_models, run_suite
    from uxlocal.suites.base import get_suite
    from uxlocal.suites.judge.rubrics import builtin_rubrics, load_rubric

    if list_rubrics:
        for name in builtin_rubrics():
            rubric = load_rubric(name)
            click.echo(f"{name:16} {rubric.kind:9} {len(rubric.criteria_list())} criteria  {rubric.sha256()[:12]}  "
                       f"{rubric.question[:60]}")
        return
    if not input_:
        raise InputError(None, None, "no INPUT given", "uxlocal judge FILE.jsonl --rubric ux-liked -m judge=embedded")
    suite = get_suite("judge")
    config = {"input": input_, **{k: v for k, v in options.items() if v is not None}}
    pairs = [m.partition("=") for m in model]
    if any(not sep or not role or not spec for role, sep, spec in pairs):
        raise InputError(None, None, f"--model expects ROLE=SPEC, got {list(model)}", "e.g. --model judge=embedded")
    specs = bind_roles(suite, config, {role.strip(): spec.strip() for role, _, spec in pairs})
    run = RunConfig(suite="judge", suite_config=config, model_names=specs, seed=seed, limit=limit, db=db,
                    max_batch=max_batch, fresh=fresh, progress=not no_progress and sys.stderr.isatty())
    result = run_suite(run, models=resolve_models(specs), suite=suite)
    stats = result.stats
    click.echo(f"\nrun {result.run_id} ({'resumed' if result.resumed else 'new'}): {stats.requests} judge requests, "
               f"{stats.cache_hits} from cache, {stats.engine_calls} engine calls, {stats.episodes_skipped} items already "
               f"judged, {stats.episodes_failed} failed, "
               f"{stats.wall_s:.1f}s")
    for note in result.notes:
        click.echo(f"note: {note}")
    render_tables(result.tables)
