"""The same workload through the in-process vLLM engine and through a local vLLM server (openai-http).

    .venv/bin/python -m benchmarks.http_vs_inprocess [--episodes 32] [--probes 24]

Arm A builds the in-process engine; arm B starts ``python -m vllm.entrypoints.openai.api_server``
for the same model with the same settings (``engine/local_server.py``) on 127.0.0.1 and talks to it
through the openai-http backend. Both are warmed up, then timed on:

1. throughput: ``--episodes`` episodes, each a free reply (``--max-tokens``) then a good/bad
   judgement with label probabilities, all batched by the scheduler (no store, so no cache);
2. overhead: ``--probes`` one-token requests sent one at a time; the difference of the mean
   latencies is what HTTP, JSON and the server's own chat templating add to each request;
3. agreement: fixed good/bad judgements through both arms (labels, largest probability gap).

Goal: throughput ratio http/in-process close to 1 (the server batches what we send concurrently).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchmarks._common import cli_parser, report, timed, wait_quiet
from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.engine.local_server import LocalServer
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.episode import EpisodeContext, EpisodeSpec
from uxlocal.grammar import Choice
from uxlocal.rollout import RunStats, Scheduler

TOPICS = ["a broken bike chain", "planning a picnic", "learning Spanish", "a noisy neighbour", "saving money",
          "a job interview", "baking bread", "a slow laptop"]


def episode(ctx: EpisodeContext, k: int, tokens: int, tag: str) -> Any:
    """Ask for a tip of ``tokens`` tokens, then ask the judge whether it is good (two dependent requests)."""
    ask = [{"role": "user", "content": f"Give me one tip about {TOPICS[k % len(TOPICS)]} ({tag} {k})."}]
    reply = yield GenRequest("candidate", tuple(ask), Sampling(max_tokens=tokens))
    question = f"Tip: {reply.text}\nIs this tip good or bad?"
    yield GenRequest(
        "judge", ({"role": "user", "content": question},), Sampling(max_tokens=4), Choice(("good", "bad"))
    )


def episodes(n: int, tokens: int, tag: str) -> list[EpisodeSpec]:
    """Return ``n`` tip episodes; ``tag`` keeps their prompts apart from other arms' (no shared prefix)."""
    return [EpisodeSpec(f"{tag}{k}", lambda ctx, k=k: episode(ctx, k, tokens, tag)) for k in range(n)]


def probe(ctx: EpisodeContext, k: int, tag: str) -> Any:
    """Ask for one token: a request's fixed cost with almost no generation."""
    yield GenRequest(
        "candidate", ({"role": "user", "content": f"Say a number ({tag} {k})."},), Sampling(max_tokens=1)
    )


REVIEWS = ["The soup was cold and the waiter ignored us.", "Lovely staff, fresh bread, great coffee.",
           "The app crashed twice while I paid.", "Delivery came early and well packed.",
           "I waited forty minutes and nobody said sorry.", "Best haircut I have had in years."]


def judgements(pool: ModelPool) -> list[Any]:
    """Greedy good/bad verdicts with label probabilities on fixed prompts."""
    asks = [GenRequest("judge", ({"role": "user", "content": f"Review: {r}\nIs this review good or bad?"},),
                       Sampling(max_tokens=4), Choice(("good", "bad"))) for r in REVIEWS]
    got: list[Any] = []

    def program(ctx: EpisodeContext) -> Any:
        got.extend((yield asks))

    Scheduler(pool).run([EpisodeSpec("agree", program)])
    return got


def arm(pool: ModelPool, args: Any, tag: str) -> dict[str, Any]:
    """Throughput run, then one-at-a-time probes; returns the raw numbers."""
    wall, stats = timed(
        lambda: Scheduler(pool, max_live=512).run(episodes(args.episodes, args.max_tokens, tag))
    )
    latencies = []
    for k in range(args.probes):
        started = time.perf_counter()
        Scheduler(pool).run([EpisodeSpec(f"{tag}p{k}", lambda ctx, k=k: probe(ctx, k, tag))])
        latencies.append(time.perf_counter() - started)
    assert isinstance(stats, RunStats)
    return {"wall_s": wall, "requests": stats.requests, "completion_tokens": stats.completion_tokens,
            "engine_calls": stats.engine_calls, "probe_ms": 1000 * sum(latencies) / len(latencies)}


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--probes", type=int, default=24)


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    model = resolve(args.model)
    local = ModelPool.from_models({"candidate": model, "judge": model})
    Scheduler(local).run(episodes(2, 8, "warm-a"))  # load + first logprobs/grammar compile
    server = LocalServer(model).start()
    try:
        remote_model = resolve(server.spec)
        remote = ModelPool.from_models({"candidate": remote_model, "judge": remote_model})
        Scheduler(remote).run(episodes(2, 8, "warm-b"))
        load = wait_quiet()
        a = arm(local, args, "a")
        b = arm(remote, args, "b")
        pairs = list(zip(judgements(local), judgements(remote), strict=True))
        remote.close()
    finally:
        server.stop()
        local.close()
    tps_a, tps_b = a["completion_tokens"] / a["wall_s"], b["completion_tokens"] / b["wall_s"]
    same_label = sum(x.parsed == y.parsed for x, y in pairs)
    gap = max(abs(x.label_probs[k] - y.label_probs[k]) for x, y in pairs for k in x.label_probs)
    report(
        "openai-http (local vLLM server) vs in-process vLLM, same workload",
        {
            "model": model.name,
            "episodes (reply + judge)": args.episodes,
            "max_tokens per reply": args.max_tokens,
            "one-token probes": args.probes,
            "server": server.url,
            "load before timing": f"{load:.2f}",
        },
        [
            ("in-process wall (s)", a["wall_s"]),
            ("http wall (s)", b["wall_s"]),
            ("in-process completion tokens", a["completion_tokens"]),
            ("http completion tokens", b["completion_tokens"]),
            ("in-process tok/s", tps_a),
            ("http tok/s", tps_b),
            ("in-process requests/s", a["requests"] / a["wall_s"]),
            ("http requests/s", b["requests"] / b["wall_s"]),
            ("in-process one-token request (ms)", a["probe_ms"]),
            ("http one-token request (ms)", b["probe_ms"]),
            ("overhead per request (ms)", b["probe_ms"] - a["probe_ms"]),
            (f"same judge label (of {len(pairs)})", same_label),
            ("largest label-probability gap", gap),
            ("throughput ratio http/in-process (tok/s)", tps_b / tps_a),
        ],
        args.json_out,
    )


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
