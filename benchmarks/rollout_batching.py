"""Batched scheduler vs one-episode-at-a-time on the same engine instance.

    .venv/bin/python -m benchmarks.rollout_batching [--episodes 32] [--exchanges 3]

32 synthetic dialogues of 3 exchanges (simulated user <-> candidate, both the embedded model).
Arm A runs all episodes through the scheduler (one batched engine call per tick); arm B runs the
same episodes one after another through the same scheduler code with ``max_live=1``. Both use
the same in-process vLLM engine and no store (so neither arm sees the other's cache).
Goal: ratio >= 6x on a 2-core CPU, engine-busy fraction >= 0.9.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks._common import cli_parser, report, timed, wait_quiet
from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.episode import EpisodeContext, EpisodeSpec
from uxlocal.rollout import Scheduler

TOPICS = ["a broken bike chain", "planning a picnic", "learning Spanish", "a noisy neighbour", "saving money",
          "a job interview", "baking bread", "a slow laptop"]


def dialogue(ctx: EpisodeContext, k: int, exchanges: int, tokens: int, tag: str) -> Any:
    """Play ``exchanges`` candidate/user turns, replies of at most ``tokens`` tokens, on one history."""
    history = [{"role": "user", "content": f"Hi, I need help with {TOPICS[k % len(TOPICS)]} ({tag} {k})."}]
    for turn in range(exchanges):
        reply = yield GenRequest("candidate", tuple(history), Sampling(max_tokens=tokens))
        history.append({"role": "assistant", "content": reply.text})
        if turn == exchanges - 1:
            break
        flipped = [{"role": "system", "content": "You are the user. Reply in one short sentence."}]
        flipped += [
            {"role": "assistant" if m["role"] == "user" else "user", "content": m["content"]} for m in history
        ]
        follow = yield GenRequest("user", tuple(flipped), Sampling(temperature=0.7, max_tokens=tokens))
        history.append({"role": "user", "content": follow.text})


def episodes(n: int, exchanges: int, tokens: int, tag: str) -> list[EpisodeSpec]:
    """Return ``n`` dialogues; ``tag`` keeps their prompts apart from other arms' (no shared prefix)."""
    return [
        EpisodeSpec(f"{tag}{k}", lambda ctx, k=k: dialogue(ctx, k, exchanges, tokens, tag)) for k in range(n)
    ]


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--exchanges", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=48)


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    model = resolve(args.model)
    pool = ModelPool.from_models({"candidate": model, "user": model})
    engine = pool.slot("candidate").engine
    Scheduler(pool).run(episodes(2, 1, 8, "warm"))  # load + warm-up (first logprobs/grammar compile)
    load = wait_quiet()
    t_batched, s_batched = timed(lambda: Scheduler(pool, max_live=512).run(
        episodes(args.episodes, args.exchanges, args.max_tokens, "b")))
    t_seq, s_seq = timed(lambda: Scheduler(pool, max_live=1).run(
        episodes(args.episodes, args.exchanges, args.max_tokens, "s")))
    report("rollout batching: batched scheduler vs one episode at a time",
           {"model": model.name, "episodes": args.episodes, "exchanges": args.exchanges,
            "max_tokens per turn": args.max_tokens, "load before timing": f"{load:.2f}",
            "engine": type(engine).__name__},
           [("batched wall (s)", t_batched), ("sequential wall (s)", t_seq),
            ("batched engine calls", s_batched.engine_calls), ("sequential engine calls", s_seq.engine_calls),
            ("batched completion tokens", s_batched.completion_tokens),
            ("sequential completion tokens", s_seq.completion_tokens),
            ("batched tok/s", s_batched.completion_tokens / t_batched),
            ("sequential tok/s", s_seq.completion_tokens / t_seq),
            ("batched engine-busy fraction", s_batched.engine_busy_s / t_batched),
            ("speedup: sequential/batched wall (x)", t_seq / t_batched)], args.json_out)
    pool.close()


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
