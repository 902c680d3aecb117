"""UXBench T1: label mode (one constrained label read + probabilities) vs free generation + parsing.

    .venv/bin/python -m benchmarks.uxbench_judge [--items 40] [--free-max-tokens 4096]

Both arms judge the same T1 items (bundled samples unless ``--data``) with the same prompt on
the same engine instance, batched through the scheduler. Arm A is uxlocal's ``label`` mode:
a Choice constraint over the two labels, a few tokens, label probabilities from the label
paths. Arm B is the original harness's way: unconstrained generation with its T1 settings
(temperature 0.2, max_tokens 4096, clamped to the model's window; seeded) then a lenient text
parse (the first label word found). The prefix cache is reset before each timed arm, so neither
arm reuses the other's prefill. Printed: wall times, the speed ratio (goal >= 5x), B's parse rate
and the A/B label agreement on items both parsed.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from benchmarks._common import cli_parser, report, timed, wait_quiet
from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.episode import EpisodeContext, EpisodeSpec
from uxlocal.grammar import Choice
from uxlocal.rollout import Scheduler
from uxlocal.suites.uxbench.data import SAMPLE_DIR, JudgeItem, load_judge
from uxlocal.suites.uxbench.prompts import judge_messages, labels_for


def lenient_parse(text: str, lang: str) -> int | None:
    """First label word in free text (the harness's fallback cascade, simplified): 1, -1 or None."""
    good, bad = labels_for(lang)  # type: ignore[arg-type]
    pattern = re.compile(f"({re.escape(good)}|{re.escape(bad)})", re.I if lang == "en" else 0)
    match = pattern.search(text)
    if not match:
        return None
    return 1 if match.group(1).lower() == good else -1


def run_arm(pool: ModelPool, items: list[JudgeItem], constrained: bool, free_max_tokens: int,
            free_temperature: float = 0.2) -> dict[str, Any]:
    """Judge every item once; returns {item_id: verdict} and the scheduler stats."""
    verdicts: dict[str, int | None] = {}

    def program(ctx: EpisodeContext, item: JudgeItem) -> Any:
        messages = tuple(judge_messages(item, "label"))
        if constrained:
            result = yield GenRequest("judge", messages, Sampling(temperature=0.0, max_tokens=8),
                                      Choice(labels_for(item.lang)))
            verdicts[item.item_id] = (
                None if not result.valid else (1 if result.parsed == labels_for(item.lang)[0] else -1)
            )
        else:
            result = yield GenRequest("judge", messages, Sampling(temperature=free_temperature,
                                                                  max_tokens=free_max_tokens))
            verdicts[item.item_id] = lenient_parse(result.text, item.lang)

    specs = [
        EpisodeSpec(
            f"{'A' if constrained else 'B'}-{i.item_id}", (lambda it: lambda ctx: program(ctx, it))(i)
        )
        for i in items
    ]
    stats = Scheduler(pool).run(specs)
    return {"verdicts": verdicts, "stats": stats}


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--data", default=str(SAMPLE_DIR), help="folder with the T1 files (default: samples)")
    p.add_argument("--items", type=int, default=40)
    p.add_argument("--free-max-tokens", type=int, default=4096)
    p.add_argument("--free-temperature", type=float, default=0.2)


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    loaded = load_judge(args.data).items
    bad = [i for i in loaded if i.ground_truth == -1]
    good = [i for i in loaded if i.ground_truth == 1]
    items = (bad[: (args.items + 1) // 2] + good[: args.items // 2])
    pool = ModelPool.from_models({"judge": resolve(args.model)})
    try:
        run_arm(pool, items[:2], True, args.free_max_tokens)  # warm-up: engine load, grammar, compile
        run_arm(pool, items[:2], False, 8)
        llm = pool.slot("judge").engine.llm  # type: ignore[attr-defined]
        load = wait_quiet()
        llm.reset_prefix_cache()
        time_a, arm_a = timed(lambda: run_arm(pool, items, True, args.free_max_tokens))
        llm.reset_prefix_cache()
        time_b, arm_b = timed(
            lambda: run_arm(pool, items, False, args.free_max_tokens, args.free_temperature)
        )
    finally:
        pool.close()
    a, b = arm_a["verdicts"], arm_b["verdicts"]
    both = [k for k in a if a[k] is not None and b.get(k) is not None]
    agree = sum(1 for k in both if a[k] == b[k])
    report("UXBench T1 judge: label mode vs free generation + parse",
           {"model": args.model, "items": len(items), "free max_tokens": args.free_max_tokens,
            "free temperature": args.free_temperature,
            "load before timing": f"{load:.2f}"},
           [("label mode wall s", time_a), ("free generation wall s", time_b),
            ("speed ratio (free / label)", time_b / time_a if time_a else float("nan")),
            ("label mode tokens generated", arm_a["stats"].completion_tokens),
            ("free mode tokens generated", arm_b["stats"].completion_tokens),
            ("label mode valid", sum(v is not None for v in a.values())),
            ("free mode parsed", sum(v is not None for v in b.values())),
            ("agreement on items both parsed", f"{agree}/{len(both)}")], args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
