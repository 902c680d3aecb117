"""Learned vs prompted judge: train a LoRA judge on the bundled feedback sample, compare held-out agreement.

    .venv/bin/python -m benchmarks.judge_train [--model embedded] [--steps 80] [--top-layers 8]
        [--json out.json]

Both arms run in one process on the same held-out rows (whole topics the adapter never saw):
the base model prompted with ``ux-liked`` and the same model with the adapter, as two
``uxlocal judge`` runs (vLLM with LoRA for a vLLM preset), through ``uxlocal.suites.judge.train``
(the code behind ``uxlocal judge train``). Prints the config, then
each statistic for both arms with the difference and its 95% paired bootstrap interval, then the
issue-30 checks: adapter AUROC >= base + 0.15, adapter accuracy >= 0.75, training <= 600 s.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._common import cli_parser

AUROC_GAIN = 0.15
MIN_ACCURACY = 0.75
MAX_TRAIN_S = 600.0


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``--model`` and ``--json`` come from ``_common.parser``)."""
    from uxlocal import paths
    from uxlocal.suites.judge.config import JUDGE_SETTINGS

    sample = paths.data_dir() / "judge" / "train" / "feedback.jsonl"
    parser.add_argument(
        "--input", default=str(sample), help="rated conversations (default: the bundled sample)"
    )
    parser.add_argument("--rubric", default="ux-liked")
    parser.add_argument("--human-col", default="thumb")
    parser.add_argument("--group-col", default="topic")
    parser.add_argument(
        "--heldout", type=float, default=0.2, help="fraction of rows, whole groups (default 0.2)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=JUDGE_SETTINGS.steps)
    parser.add_argument("--batch-size", type=int, default=JUDGE_SETTINGS.batch_size)
    parser.add_argument("--lr", type=float, default=JUDGE_SETTINGS.lr)
    parser.add_argument("--rank", type=int, default=JUDGE_SETTINGS.rank)
    parser.add_argument("--top-layers", type=int, default=JUDGE_SETTINGS.top_layers,
                        help="adapt only the top N layers (0 = all)")
    parser.add_argument("--modules", default=",".join(JUDGE_SETTINGS.target_modules),
                        help="linear layers to adapt, comma-separated")
    parser.add_argument("--out", default=None, help="adapter folder (default: a temporary folder)")
    parser.add_argument(
        "--db", default=None, help="store for the two held-out judge runs (default: temporary)"
    )


def _log_step(report: Any) -> None:
    if report.step % 10 == 0 or report.step == report.steps:
        print(
            f"  step {report.step}/{report.steps}  loss {report.loss:.3f}  {report.elapsed_s:.0f}s",
            flush=True,
        )


def _log_prefix(part: str, done: int, total: int) -> None:
    if done == total:
        print(f"  frozen layers: {total} {part} examples", flush=True)


def _checks(result: Any) -> list[tuple[str, bool]]:
    base_auroc, auroc = result.base.get("auroc"), result.adapter.get("auroc")
    accuracy = result.adapter.get("accuracy")
    return [(f"adapter AUROC >= base + {AUROC_GAIN}",
             base_auroc is not None and auroc is not None and auroc >= base_auroc + AUROC_GAIN),
            (f"adapter accuracy >= {MIN_ACCURACY}", accuracy is not None and accuracy >= MIN_ACCURACY),
            (f"training <= {MAX_TRAIN_S:.0f} s", result.train_s <= MAX_TRAIN_S)]


def main(args: argparse.Namespace) -> dict[str, Any]:
    """Train, measure both arms, print the block; returns the raw numbers."""
    from uxlocal.cli.common import run_configured
    from uxlocal.engine.resolve import resolve
    from uxlocal.suites.judge import train as jt
    from uxlocal.suites.judge.config import judge_settings
    from uxlocal.suites.judge.inputs import Columns
    from uxlocal.suites.judge.rubrics import load_rubric
    from uxlocal.train.lora import device

    settings = judge_settings(steps=args.steps, batch_size=args.batch_size, lr=args.lr, rank=args.rank,
                              top_layers=args.top_layers, modules=args.modules, seed=args.seed)
    model = resolve(args.model)
    spec = jt.JudgeTrainSpec(
        args.input,
        Columns(human=args.human_col, group=args.group_col),
        load_rubric(args.rubric),
        heldout=args.heldout,
        seed=args.seed,
        rubric_ref=args.rubric,
    )
    prepared = jt.prepare(spec, model, max_length=settings.max_length)
    print(
        f"model {model.name} ({device()}), rubric {spec.rubric.name}, "
        f"{len(prepared.split.train)} train rows, "
        f"{len(prepared.split.heldout)} held-out rows (groups {', '.join(prepared.split.heldout_groups)})"
    )
    print(f"settings {json.dumps(settings.as_dict())}")
    with tempfile.TemporaryDirectory() as tmp:
        judge = jt.heldout_judge(run_configured, args.model, args.db or Path(tmp) / "judge.duckdb",
                                 spec.rubric.kind, spec.rubric.criteria_list()[0].name)
        result = jt.train_judge(
            prepared,
            model,
            args.out or Path(tmp) / "adapter",
            judge=judge,
            settings=settings,
            on_step=_log_step,
            on_prefix=_log_prefix,
        )
    print(f"{'statistic':<12}{'base':>9}{'adapter':>9}{'diff':>9}  95% interval of diff")
    for name, before, after, diff, interval in jt.comparison_rows(result):
        print(f"{name:<12}{before or '-':>9}{after or '-':>9}{diff or '-':>9}  {interval or '-'}")
    print(f"judged       {result.heldout_judged} of {len(prepared.split.heldout)} held-out rows by both arms")
    print(f"train s      {result.train_s:9.1f}   total s {result.seconds:.1f}   "
          f"train loss {result.losses[0]:.3f} -> {result.losses[-1]:.3f}")
    checks = _checks(result)
    for label, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {label}")
    raw = {"model": model.name, "settings": settings.as_dict(), "split": prepared.split.as_dict(),
           "base": result.base, "adapter": result.adapter, "intervals": result.intervals,
           "train_s": result.train_s, "seconds": result.seconds, "losses": result.losses,
           "heldout_judged": result.heldout_judged,
           "checks": dict(checks)}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(raw, indent=1), encoding="utf-8")
    return raw


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
