"""Batched scheduler vs one-episode-at-a-time on the same engine instance.

    .venv/bin/python -m benchmarks.rollout_batching [--episodes 32] [--exchanges 3]
    .venv/bin/python -m benchmarks.rollout_batching --workload tau2 [--episodes 8] [--domain mock]
        [--trials 1] [--agent-temperature 0] [--upstream ../shared/upstream/tau2-bench-8ebb749]
        [--tau2-data ../shared/data/tau2]

``dialogue`` (default): 32 synthetic dialogues of 3 exchanges (simulated user <-> candidate, both
the embedded model). Arm A runs all episodes through the scheduler (one batched engine call per
tick); arm B runs the same episodes one after another through the same scheduler code with
``max_live=1``. Both use the same in-process vLLM engine and no store (so neither arm sees the
other's cache). Goal: ratio >= 6x on a 2-core CPU, engine-busy fraction >= 0.9.

``tau2``: real tau2 episodes as tau2-bench runs them (issue 42): a checkout assembled from
upstream's source and the tau2 data, so every seat gets upstream's words, native tool calls
(the preset's tool parser, our tools template for SmolLM2) and no length cap. The same tasks run
as one ``uxlocal run tau2`` with ``max_live`` 512 and again with ``max_live`` 1, each into its own
store (no generation cache shared), with vLLM's prefix cache emptied before each arm so that
neither reuses the other's prompts (within an arm, episodes share prefixes as they would).

Both workloads end with the engine's own ceiling at the workload's context, measured on the same
engine after the arms (``decode_ceiling``): decode tokens/s of ``--ceiling-batch`` sequences
against one, each with the batched arm's mean prompt length. No scheduler can take the
batched arm further ahead of the sequential one than the engine's decode speed-up at that
context (prefill aside), so the report also gives the wall ratio as a fraction of it.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._common import REPO, cli_parser, report, timed, wait_quiet
from uxlocal.config import RunConfig
from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.episode import EpisodeContext, EpisodeSpec
from uxlocal.rollout import RunStats, Scheduler
from uxlocal.runner import run_suite

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
    p.add_argument("--workload", choices=("dialogue", "tau2"), default="dialogue")
    p.add_argument("--ceiling-batch", type=int, default=32,
                   help="sequences of the engine-ceiling measurement (fewer if the KV cache holds fewer)")
    shared = REPO.parent / "shared"
    p.add_argument("--domain", default="mock", help="tau2 workload: the domain whose first tasks run")
    p.add_argument("--max-steps", type=int, default=8, help="tau2 workload: routed messages per episode")
    p.add_argument("--trials", type=int, default=1, help="tau2 workload: episodes per task (trial seeds)")
    p.add_argument("--agent-temperature", type=float, default=0.0,
                   help="tau2 workload: above 0 each trial samples its own agent turns (distinct episodes)")
    p.add_argument("--upstream", type=Path, default=shared / "upstream" / "tau2-bench-8ebb749",
                   help="tau2 workload: upstream tau2-bench source (a checkout's root)")
    p.add_argument("--tau2-data", type=Path, default=shared / "data" / "tau2",
                   help="tau2 workload: the tau2 data folder (domains/...)")


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    if args.workload == "tau2":
        tau2_main(args)
        return
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
           result_rows(engine.llm, (t_batched, s_batched), (t_seq, s_seq), args.ceiling_batch), args.json_out)
    pool.close()


CEILING_TOKENS = 64
"""Decode steps timed per arm of the ceiling measurement."""


def result_rows(llm: Any, batched: tuple[float, RunStats], sequential: tuple[float, RunStats],
                ceiling_batch: int) -> list[tuple[str, Any]]:
    """Return both arms' rows, then the engine's ceiling at the batched arm's context.

    The ceiling is measured now, on the same engine; the last row is the wall ratio over it.
    """
    (t_batched, s_batched), (t_seq, _) = batched, sequential
    context = max(1, s_batched.prompt_tokens // max(1, s_batched.generations))  # mean prompt, fresh ones
    used, one, many = decode_ceiling(llm, context, ceiling_batch)
    speedup = many / one
    return arm_rows(batched, sequential) + [
        ("ceiling: context (mean prompt tokens)", context),
        ("ceiling: decode tok/s at batch 1", one),
        (f"ceiling: decode tok/s at batch {used}", many),
        ("ceiling: engine decode speed-up (x)", speedup),
        ("wall ratio / engine decode speed-up", t_seq / t_batched / speedup)]


def decode_ceiling(llm: Any, context: int, batch: int) -> tuple[int, float, float]:
    """Return (batch used, decode tok/s of one sequence, of the batch), each after ``context`` prompt tokens.

    Random-token prompts, prefilled once into the prefix cache, then timed as one-token and
    ``1 + CEILING_TOKENS``-token generations (ignoring EOS): the difference is the decode steps.
    The batch shrinks to what the KV cache holds beside the prompts' blocks, so nothing is evicted.
    """
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    cache = llm.llm_engine.vllm_config.cache_config
    capacity = (cache.num_gpu_blocks or 0) * cache.block_size
    batch = max(1, min(batch, int(0.9 * capacity) // (context + CEILING_TOKENS + cache.block_size)))
    rng = random.Random(context)
    speeds = []
    for size in (1, batch):
        prompts = [TokensPrompt(prompt_token_ids=[rng.randrange(1000, 30000) for _ in range(context)])
                   for _ in range(size)]

        def seconds(n: int, prompts: list[Any] = prompts) -> float:
            return timed(lambda: llm.generate(prompts, SamplingParams(max_tokens=n, ignore_eos=True,
                                                                      temperature=0), use_tqdm=False))[0]

        seconds(1)  # the prefill, into the prefix cache
        speeds.append(size * CEILING_TOKENS / (seconds(1 + CEILING_TOKENS) - seconds(1)))
    llm.reset_prefix_cache()
    return batch, speeds[0], speeds[1]


def arm_rows(batched: tuple[float, RunStats], sequential: tuple[float, RunStats]) -> list[tuple[str, Any]]:
    """Return the report rows of the two arms, each (wall seconds, stats), and their ratios."""
    rows: list[tuple[str, Any]] = []
    for name, (seconds, stats) in (("batched", batched), ("sequential", sequential)):
        rows += [(f"{name} wall (s)", seconds), (f"{name} engine calls", stats.engine_calls),
                 (f"{name} requests", stats.requests), (f"{name} completion tokens", stats.completion_tokens),
                 (f"{name} tok/s", stats.completion_tokens / seconds)]
    (t_batched, s_batched), (t_seq, s_seq) = batched, sequential
    return rows + [("batched engine-busy fraction", s_batched.engine_busy_s / t_batched),
                   ("speedup: sequential/batched wall (x)", t_seq / t_batched),
                   ("speedup: batched/sequential tok/s (x)",
                    (s_batched.completion_tokens / t_batched) / (s_seq.completion_tokens / t_seq))]


def tau2_main(args: argparse.Namespace) -> None:
    """Time the same tau2 episodes (upstream's protocol, native tools) batched and one at a time."""
    from uxlocal.tau2.conformance.episode_check import assemble_checkout

    for needed in (args.upstream / "src" / "tau2", args.tau2_data / "domains" / args.domain):
        if not needed.exists():
            raise SystemExit(f"{needed} is absent: pass --upstream and --tau2-data")
    model = resolve(args.model)
    pool = ModelPool.from_models(dict.fromkeys(("agent", "user", "judge"), model))
    engine = pool.slot("agent").engine
    with tempfile.TemporaryDirectory(prefix="rollout-tau2-") as tmp:
        data = assemble_checkout(args.upstream, args.tau2_data, Path(tmp)) / "data" / "tau2"

        def arm(name: str, limit: int, max_live: int) -> tuple[float, RunStats]:
            engine.llm.reset_prefix_cache()  # neither arm reuses the other's prompts
            config = {"tau2_data": str(data), "domain": args.domain, "max_steps": args.max_steps,
                      "trials": args.trials, "agent_temperature": args.agent_temperature}
            run = RunConfig(suite="tau2", suite_config=config, db=str(Path(tmp) / f"{name}.duckdb"),
                            limit=limit, max_live=max_live, progress=False)
            seconds, result = timed(lambda: run_suite(run, pool=pool))
            return seconds, result.stats

        arm("warm", 1, 1)  # load + first compiles
        load = wait_quiet()
        t_batched, s_batched = arm("batched", args.episodes, 512)
        t_seq, s_seq = arm("sequential", args.episodes, 1)
    report("rollout batching on tau2 episodes (upstream protocol, native tools)",
           {"model": model.name, "domain": args.domain, "tasks": args.episodes, "trials": args.trials,
            "agent temperature": args.agent_temperature,
            "max_steps": args.max_steps, "tool parser": model.tool_call_parser,
            "load before timing": f"{load:.2f}", "engine": type(engine).__name__},
           result_rows(engine.llm, (t_batched, s_batched), (t_seq, s_seq), args.ceiling_batch), args.json_out)
    pool.close()


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
