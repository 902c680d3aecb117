"""``uxlocal judge`` throughput: conversation-first (prefix-shared) vs criterion-first prompts.

    .venv/bin/python -m benchmarks.judge_throughput [--conversations 6] [--criteria 8] [--tokens 1200]

N synthetic conversations of about ``--tokens`` prompt tokens each are judged on K likert
criteria through the judge suite's own episodes and the scheduler (the path ``uxlocal judge``
takes), once per prompt layout, on one engine instance; the prefix cache is reset before each
timed arm. ``criterion_first`` puts the question before the conversation, so no two prompts
share more than the instructions; ``shared`` puts the conversation first, so the K prompts of
one conversation share it and vLLM's prefix cache computes it once.

Printed per arm: verdicts/s, prompt tokens/s (all prompt tokens, cached ones included, i.e. the
work a cache-less engine would do) and the prefix-cache hit rate, which is the share of prompt
tokens vLLM served from its cache, summed from its own per-request ``num_cached_tokens``
counters. The ratio comes last. Goals on the 2-core CPU: ratio >= 3x, hit rate >= 80%. The same
script on a GPU box (``--model`` a preset there) prints the GPU figures.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import cli_parser, report, wait_quiet
from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.rollout import Scheduler
from uxlocal.suites.judge.suite import JudgeConfig, JudgeSuite

WORDS = (
    "order",
    "delivery",
    "refund",
    "account",
    "password",
    "invoice",
    "weekend",
    "kitchen",
    "garden",
    "printer",
    "battery",
    "schedule",
    "meeting",
    "project",
    "budget",
    "travel",
    "ticket",
    "hotel",
    "river",
    "music",
    "recipe",
    "doctor",
    "insurance",
    "contract",
    "library",
    "station",
    "camera",
    "window",
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
    return " ".join(words).capitalize() + f" ({rng.randint(100, 9999)})."


def conversation(i: int, tokens: int) -> list[dict[str, str]]:
    """Return a synthetic multi-turn chat of roughly ``tokens`` tokens (about 1.4 tokens per word here)."""
    rng = random.Random(i)
    turns: list[dict[str, str]] = []
    words = 0
    while words * 1.4 < tokens:
        role = "user" if len(turns) % 2 == 0 else "assistant"
        text = " ".join(_sentence(rng) for _ in range(rng.randint(3, 6)))
        turns.append({"role": role, "content": text})
        words += len(text.split())
    if turns[-1]["role"] == "user":
        turns.append({"role": "assistant", "content": _sentence(rng)})
    return turns


def rubric_toml(k: int) -> str:
    """Return a likert rubric with K criteria."""
    lines = ['name = "bench"', 'kind = "likert"', 'question = "How good is the last reply?"', "scale = 5",
             "[anchors]", *[f'{p} = "point {p}"' for p in range(1, 6)]]
    for c in range(k):
        lines += [
            "[[criteria]]",
            f'name = "c{c}"',
            f"question = \"Criterion {c}: how well does the assistant's "
            f"last reply handle aspect number {c} of the user's request?\"",
        ]
    return "\n".join(lines) + "\n"


class CacheCounter:
    """Wrap the vLLM engine's ``step`` to count prompt and cached tokens.

    Our engine steps it itself; the wrapper sums the prompt and cached token counts of every
    finished request, as vLLM reports them.
    """

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        engine = llm.llm_engine
        self.original = engine.step
        self.prompt_tokens = 0
        self.cached_tokens = 0
        engine.step = self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the engine's step and count the prompt and cached tokens of the requests it finished."""
        outputs = self.original(*args, **kwargs)
        for out in outputs:
            if getattr(out, "finished", False):
                self.prompt_tokens += len(out.prompt_token_ids or [])
                self.cached_tokens += out.num_cached_tokens or 0
        return outputs

    def reset(self) -> None:
        """Zero the counters and empty vLLM's prefix cache."""
        self.prompt_tokens = self.cached_tokens = 0
        self.llm.reset_prefix_cache()


def run_arm(pool: ModelPool, folder: Path, layout: str, counter: CacheCounter) -> dict[str, float]:
    """Judge every conversation on every criterion with one layout; returns the arm's figures."""
    config = JudgeConfig(input=str(folder / "chats.jsonl"), rubric=str(folder / "bench.toml"), layout=layout)
    suite = JudgeSuite()
    plan = suite.plan(config, RunConfig(suite="judge", models={"judge": "x"}))
    counter.reset()
    scheduler = Scheduler(pool, run_id=f"bench-{layout}", max_batch=4096)
    started = time.perf_counter()
    todo = plan.all_episodes()
    stats = scheduler.run(todo, total=len(todo))
    wall = time.perf_counter() - started
    verdicts = stats.requests
    return {"wall_s": wall, "verdicts": verdicts, "verdicts_per_s": verdicts / wall,
            "prompt_tok_per_s": counter.prompt_tokens / wall, "prompt_tokens": counter.prompt_tokens,
            "hit_rate": counter.cached_tokens / counter.prompt_tokens if counter.prompt_tokens else 0.0,
            "failed": stats.episodes_failed}


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--conversations", type=int, default=6, help="N conversations (default 6)")
    p.add_argument("--criteria", type=int, default=8, help="K criteria per conversation (default 8)")
    p.add_argument(
        "--tokens", type=int, default=1200, help="about this many tokens per conversation (default 1200)"
    )


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    model = resolve(args.model)
    pool = ModelPool.from_models({"judge": model})
    engine = pool.slot("judge").engine
    llm = engine.llm  # type: ignore[attr-defined]
    caching = bool(getattr(llm.llm_engine.vllm_config.cache_config, "enable_prefix_caching", False))
    counter = CacheCounter(llm)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        import json

        (folder / "chats.jsonl").write_text(
            "".join(
                json.dumps({"id": f"c{i}", "conversation": conversation(i, args.tokens)}) + "\n"
                for i in range(args.conversations)
            ),
            encoding="utf-8",
        )
        (folder / "bench.toml").write_text(rubric_toml(args.criteria), encoding="utf-8")
        llm.generate(["warm up"], use_tqdm=False)
        load = wait_quiet()
        first = run_arm(pool, folder, "criterion_first", counter)
        shared = run_arm(pool, folder, "shared", counter)
    config = {"model": model.name, "conversations x criteria": f"{args.conversations} x {args.criteria}",
              "prompt tokens per verdict (mean)": round(shared["prompt_tokens"] / max(shared["verdicts"], 1)),
              "vLLM prefix caching enabled": caching, "load average at start": round(load, 1)}
    rows: list[tuple[str, Any]] = []
    for name, arm in (("criterion_first", first), ("shared", shared)):
        rows += [
            (f"{name}: wall (s)", arm["wall_s"]),
            (f"{name}: verdicts/s", arm["verdicts_per_s"]),
            (f"{name}: prompt tokens/s (incl. cached)", arm["prompt_tok_per_s"]),
            (f"{name}: prefix-cache hit rate", arm["hit_rate"]),
            (f"{name}: failed episodes", arm["failed"]),
        ]
    rows.append(("shared/criterion_first verdicts/s", shared["verdicts_per_s"] / first["verdicts_per_s"]))
    report("uxlocal judge throughput: prompt layout", config, rows, args.json_out)
    pool.close()


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
