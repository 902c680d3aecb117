"""Follow-ups over openai-http: episodes that go on as their replies come back vs ticks in lockstep.

    .venv/bin/python -m benchmarks.http_follow_ups [--episodes 64] [--steps 8] [--long-share 0.1]

A local fake OpenAI server (``_openai_fake.FakeOpenAI``) answers each chat request after a delay
fixed by its text: most in ``--short-ms`` (20-80 ms), a ``--long-share`` of them in
``--long-ms`` (300-1000 ms), like replies of different lengths behind ``vllm serve`` (a model that
runs on to its window is the long tail). ``--episodes`` episodes of ``--steps`` dependent requests
each run through the scheduler and ``HttpEngine`` twice on the same server: with follow-ups (an
episode asks its next request the moment its reply is back, in the same engine call) and without
(every episode waits for the tick's slowest reply). Both arms ask exactly the same requests.

Printed: each arm's wall time and engine calls, the ratio, and two floors computed from the
delays: the longest episode's chain (no schedule ends sooner) and the lockstep sum over steps of
the slowest reply (what ticks in lockstep cost). Goal: the following arm near its floor.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from benchmarks._common import cli_parser, report, timed
from benchmarks._openai_fake import FakeOpenAI
from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.engine.http import HttpEngine, HttpOptions, MessagesRenderer
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.rollout import Scheduler


def delay_s(text: str, args: argparse.Namespace) -> float:
    """Return the fake server's delay for one request, fixed by its text (both arms see the same)."""
    rng = random.Random(f"{args.seed}:{text}")
    low, high = args.long_ms if rng.random() < args.long_share else args.short_ms
    return rng.uniform(low, high) / 1000


def chain(ctx: EpisodeContext, name: str, steps: int) -> Any:
    """Ask ``steps`` requests, each once the previous reply is back."""
    for step in range(steps):
        result = yield GenRequest("candidate", ({"role": "user", "content": f"{name}-{step}"},), Sampling())
        ctx.turn("assistant", result.text, model_role="candidate", result=result)
    return Outcome("done", reward=1.0)


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``; the model is unused)."""
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--long-share", type=float, default=0.1, help="share of requests answered slowly")
    p.add_argument("--short-ms", type=float, nargs=2, default=(20.0, 80.0))
    p.add_argument("--long-ms", type=float, nargs=2, default=(300.0, 1000.0))
    p.add_argument("--seed", type=int, default=0)


def main(args: argparse.Namespace) -> None:
    """Run both arms on one fake server and print the block."""
    fake = FakeOpenAI(record=False).start()
    fake.hook = lambda path, body: time.sleep(delay_s(body["messages"][-1]["content"], args))

    def arm(tag: str, follow: bool) -> tuple[float, Any]:
        engine = HttpEngine(resolve(f"{fake.url}#fake-model"), MessagesRenderer(None),
                            HttpOptions(max_retries=0, timeout_s=60.0))
        engine.follow_ups = follow
        specs = [EpisodeSpec(f"{tag}{k}", lambda ctx, k=k: chain(ctx, f"{tag}{k}", args.steps))
                 for k in range(args.episodes)]
        try:
            pool = ModelPool.from_engines({"candidate": engine})
            return timed(lambda: Scheduler(pool, max_live=512).run(specs))
        finally:
            engine.close()

    try:
        arm("warm", True)
        t_follow, s_follow = arm("f", True)
        t_lock, s_lock = arm("l", False)
    finally:
        fake.stop()
    delays = {tag: [[delay_s(f"{tag}{k}-{s}", args) for s in range(args.steps)] for k in range(args.episodes)]
              for tag in ("f", "l")}
    chain_floor = max(sum(d) for d in delays["f"])
    lockstep_floor = sum(max(d[s] for d in delays["l"]) for s in range(args.steps))
    report("openai-http follow-ups: episodes go on as replies come back vs ticks in lockstep",
           {"episodes": args.episodes, "steps": args.steps, "long share": args.long_share,
            "short / long ms": f"{args.short_ms} / {args.long_ms}", "server": "fake OpenAI (local)"},
           [("following wall (s)", t_follow), ("following engine calls", s_follow.engine_calls),
            ("floor: longest chain (s)", chain_floor),
            ("lockstep wall (s)", t_lock), ("lockstep engine calls", s_lock.engine_calls),
            ("floor: sum of each step's slowest (s)", lockstep_floor),
            ("requests per arm", f"{s_follow.requests} / {s_lock.requests}"),
            ("speedup: lockstep/following wall (x)", t_lock / t_follow),
            ("following wall / its floor", t_follow / chain_floor)], args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
