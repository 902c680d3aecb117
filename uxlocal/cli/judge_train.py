"""``uxlocal judge train``: learn a judge (a LoRA adapter) from the human labels of a conversations file.

Reached through ``uxlocal judge train ...`` (``judge.py`` hands ``train`` here). The column and
layout options are ``JudgeConfig``'s, so a file that ``uxlocal judge`` reads trains as it is.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from uxlocal.suites.judge.config import JudgeConfig
from uxlocal.train.lora import StepReport

from .common import CONTEXT, config_options, print_rows

_FIELDS = ("rubric", "id_col", "conversation_col", "prompt_col", "response_col", "response_a_col", "response_b_col",
           "human_col", "group_col", "layout")


def _progress(report: StepReport) -> None:
    """A live line on a terminal; a log line every tenth of the run otherwise."""
    line = f"step {report.step}/{report.steps}  loss {report.loss:.3f}  {report.eta_s:.0f}s left"
    if sys.stderr.isatty():
        click.echo(f"\r{line}   ", nl=report.step == report.steps, err=True)
    elif report.step % max(1, report.steps // 10) == 0 or report.step == report.steps:
        click.echo(line, err=True)


@click.command(name="train", context_settings=CONTEXT)
@click.argument("input_", metavar="INPUT")
@config_options(JudgeConfig, _FIELDS, envvar_prefix="UXLOCAL_JUDGE_", decls={"rubric": ("-r", "--rubric")})
@click.option("--base", default="embedded", show_default=True, help="Base model (preset or folder) to adapt.")
@click.option("--out", required=True, type=click.Path(), help="Adapter folder to write.")
@click.option("--heldout", type=float, default=0.2, show_default=True, help="Fraction of rows (whole groups) kept out.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split, the init and the batches.")
@click.option("--steps", type=int, default=60, show_default=True, help="Optimizer steps.")
@click.option("--batch-size", type=int, default=8, show_default=True, help="Sequences per step.")
@click.option("--lr", type=float, default=1e-3, show_default=True, help="Peak learning rate.")
@click.option("--rank", type=int, default=8, show_default=True, help="LoRA rank (alpha = 2 x rank).")
@click.option("--top-layers", type=int, default=0, show_default=True, help="Adapt only the top N layers (0 = all).")
@click.option("--max-length", type=int, default=2048, show_default=True, help="Longest judge prompt (tokens).")
def judge_train(input_: str, base: str, out: str, heldout: float, seed: int, steps: int, batch_size: int,
                lr: float, rank: int, top_layers: int, max_length: int, **columns: Any) -> None:
    """Learn a judge from your users' labels; compare it with the base.

    \b
    Examples:
      uxlocal judge train feedback.jsonl --rubric ux-liked --human-col thumb --group-col topic --out my-judge
      uxlocal judge train ratings.csv --rubric helpfulness --human-col score --base qwen7b --out qwen-judge
    """
    from dataclasses import replace

    from uxlocal.models import resolve
    from uxlocal.suites.judge import train as jt
    from uxlocal.suites.judge.rubrics import load_rubric

    config = JudgeConfig(input=input_, **{k: v for k, v in columns.items() if v is not None})
    spec = jt.JudgeTrainSpec(input_, config.columns(), load_rubric(config.rubric), heldout=heldout, seed=seed,
                             layout=config.layout)
    settings = replace(jt.JUDGE_SETTINGS, steps=steps, batch_size=batch_size, lr=lr, rank=rank, alpha=2 * rank,
                       warmup=max(1, steps // 10), max_length=max_length, seed=seed, top_layers=top_layers)
    model = resolve(base)
    prepared = jt.prepare(spec, model, max_length=max_length)
    click.echo(f"training on {len(prepared.split.train)} rows, {len(prepared.split.heldout)} held out "
               f"(groups: {', '.join(prepared.split.heldout_groups)})", err=True)
    result = jt.train_judge(prepared, model, out, settings=settings, on_step=_progress)
    print_rows(jt.COMPARISON_COLUMNS, jt.comparison_rows(result))
    click.echo(f"adapter {result.folder} (weights sha256 {result.weights_sha256[:12]}), {result.seconds:.0f}s")
