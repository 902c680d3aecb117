"""``uxlocal judge``: judge anyone's conversations with a rubric (``uxlocal.suites.judge``);
``uxlocal judge train``: learn a judge (a LoRA adapter) from the human labels of such a file.

Options come from ``JudgeConfig``'s field docstrings (environment variables ``UXLOCAL_JUDGE_<FIELD>``)
plus the shared run options. ``train`` takes the same column and layout options, so a file that
``uxlocal judge`` reads trains as it is.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from uxlocal.clikit import (
    CONTEXT,
    RUNNER_KEY,
    config_options,
    print_rows,
    run_options,
    run_suite_from_command,
    split_run_options,
    store_option,
)
from uxlocal.errors import InputError
from uxlocal.suites.judge.config import JUDGE_SETTINGS, JudgeConfig, judge_settings
from uxlocal.train.lora import StepReport

_JUDGE_FIELDS = tuple(name for name in JudgeConfig.model_fields if name != "input")
_DECLS = {"rubric": ("-r", "--rubric"), "both_orders": ("--both-orders/--one-order",),
          "skip_bad_rows": ("--skip-bad-rows/--no-skip-bad-rows",)}


class _JudgeCommand(click.Command):
    """``uxlocal judge INPUT ...`` judges; ``uxlocal judge train INPUT ...`` learns a judge (``judge_train``).

    ``judge`` takes a positional INPUT, so it cannot be a click group; a first argument ``train``
    hands the rest of the line to the train command instead.
    """

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        if args and args[0] == "train":
            return judge_train.make_context(f"{info_name} train", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command(name="judge", cls=_JudgeCommand, context_settings=CONTEXT)
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

    Learn a judge from your labels first: uxlocal judge train --help
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


_TRAIN_FIELDS = ("rubric", "id_col", "conversation_col", "prompt_col", "response_col", "response_a_col",
                 "response_b_col", "human_col", "group_col", "layout")


def _progress_line(line: str, done: int, total: int) -> None:
    """A live line on a terminal; a log line every tenth of the work otherwise."""
    if sys.stderr.isatty():
        click.echo(f"\r{line}   ", nl=done == total, err=True)
    elif done % max(1, total // 10) == 0 or done == total:
        click.echo(line, err=True)


def _progress(report: StepReport) -> None:
    """Step, loss and time left of the training loop."""
    _progress_line(f"step {report.step}/{report.steps}  loss {report.loss:.3f}  {report.eta_s:.0f}s left",
                   report.step, report.steps)


def _prefix_progress(part: str, done: int, total: int) -> None:
    """Examples through the frozen layers (computed once, before the steps)."""
    _progress_line(f"frozen layers, {part} examples {done}/{total}", done, total)


@click.command(name="train", context_settings=CONTEXT)
@click.argument("input_", metavar="INPUT")
@config_options(JudgeConfig, _TRAIN_FIELDS, envvar_prefix="UXLOCAL_JUDGE_", decls={"rubric": ("-r", "--rubric")})
@click.option("--base", default="embedded", show_default=True, help="Base model (preset or folder) to adapt.")
@click.option("--out", required=True, type=click.Path(), help="Adapter folder to write.")
@click.option("--heldout", type=float, default=0.2, show_default=True, help="Fraction of rows (whole groups) kept out.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split, the init and the batches.")
@click.option("--steps", type=int, default=JUDGE_SETTINGS.steps, show_default=True, help="Optimizer steps.")
@click.option("--batch-size", type=int, default=JUDGE_SETTINGS.batch_size, show_default=True, help="Sequences per step.")
@click.option("--lr", type=float, default=JUDGE_SETTINGS.lr, show_default=True, help="Peak learning rate.")
@click.option("--rank", type=int, default=JUDGE_SETTINGS.rank, show_default=True, help="LoRA rank (alpha = 2 x rank).")
@click.option("--top-layers", type=int, default=JUDGE_SETTINGS.top_layers, show_default=True, help="Adapt only the top N layers (0 = all).")
@click.option("--modules", default=",".join(JUDGE_SETTINGS.target_modules), show_default=True,
              help="Linear layers to adapt (comma-separated module names).")
@click.option("--max-length", type=int, default=JUDGE_SETTINGS.max_length, show_default=True, help="Longest judge prompt (tokens).")
@store_option
def judge_train(input_: str, base: str, out: str, heldout: float, seed: int, steps: int, batch_size: int,
                lr: float, rank: int, top_layers: int, modules: str, max_length: int, db: str,
                **columns: Any) -> None:
    """Learn a judge from your users' labels; compare it with the base.

    \b
    Examples:
      uxlocal judge train feedback.jsonl --rubric ux-liked --human-col thumb --group-col topic --out my-judge
      uxlocal judge train ratings.csv --rubric helpfulness --human-col score --base qwen7b --out qwen-judge
    """

    from uxlocal.engine.resolve import resolve
    from uxlocal.suites.judge import train as jt
    from uxlocal.suites.judge.rubrics import load_rubric

    config = JudgeConfig(input=input_, **{k: v for k, v in columns.items() if v is not None})
    rubric = load_rubric(config.rubric)
    spec = jt.JudgeTrainSpec(input_, config.columns(), rubric, heldout=heldout, seed=seed, layout=config.layout,
                             rubric_ref=config.rubric)
    settings = judge_settings(steps=steps, batch_size=batch_size, lr=lr, rank=rank, top_layers=top_layers,
                              modules=modules, seed=seed, max_length=max_length)
    model = resolve(base)
    prepared = jt.prepare(spec, model, max_length=max_length)
    click.echo(f"training on {len(prepared.split.train)} rows, {len(prepared.split.heldout)} held out "
               f"(groups: {', '.join(prepared.split.heldout_groups)})", err=True)
    judge = jt.heldout_judge(click.get_current_context().meta[RUNNER_KEY], base, db, rubric.kind,
                             rubric.criteria_list()[0].name)
    result = jt.train_judge(prepared, model, out, judge=judge, settings=settings, on_step=_progress,
                            on_prefix=_prefix_progress)
    _print_trained(result, len(prepared.split.heldout), f"--rubric {config.rubric} -m judge={base}", db)


def _print_trained(result: Any, heldout_rows: int, judge_options: str, db: str) -> None:
    """Both arms side by side, how many rows they share, and the next commands."""
    from uxlocal.suites.judge import train as jt

    print_rows(jt.COMPARISON_COLUMNS, jt.comparison_rows(result))
    click.echo(f"{result.heldout_judged} of {heldout_rows} held-out rows judged by both arms "
               "(abstentions and invalid verdicts are left out, as uxlocal judge does)")
    click.echo(f"adapter {result.folder} (weights sha256 {result.weights_sha256[:12]}), {result.seconds:.0f}s; "
               f"both arms are judge runs in {db}")
    click.echo(f"judge with it: uxlocal judge FILE {judge_options} --judge-adapter {result.folder}; "
               f"compare: uxlocal report --db {db}", err=True)
