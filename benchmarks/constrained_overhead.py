"""Decoding speed with vs without a JSON-schema constraint, same prompts, same token counts.

    .venv/bin/python -m benchmarks.constrained_overhead [--requests 32]

Arm A generates under a JSON schema (xgrammar, the default). Arm B generates the same prompts
unconstrained with ``ignore_eos`` and each request's ``max_tokens`` set to arm A's completion
length, so both arms decode exactly the same number of tokens. Overhead = 1 - B_time/A_time...
reported as (A tok/s vs B tok/s). Goal: overhead <= 15%.
"""

from __future__ import annotations

import argparse
import time

from benchmarks._common import cli_parser, report, wait_quiet
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["summary", "sentiment", "score"],
          "properties": {"summary": {"type": "string", "maxLength": 300},
                         "sentiment": {"enum": ["positive", "negative", "mixed"]},
                         "score": {"type": "integer", "minimum": 1, "maximum": 5}}}
TEXTS = ["The hotel room was spotless but the wifi kept dropping.", "Fast shipping, the shoes fit perfectly.",
         "Customer service never answered my three emails.", "The museum tour was long but fascinating."]


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.sampling_params import StructuredOutputsParams

    model = resolve(args.model)
    slot = ModelPool.from_models({"judge": model}).slot("judge")
    llm = slot.engine.llm  # type: ignore[attr-defined]
    prompts = []
    for k in range(args.requests):
        chat = [{"role": "user", "content": f"Review {k}: {TEXTS[k % len(TEXTS)]}\nSummarise it as JSON."}]
        prompts.append(TokensPrompt(prompt_token_ids=slot.renderer.render(chat)[1]))
    constrained = SamplingParams(
        temperature=0, max_tokens=160, structured_outputs=StructuredOutputsParams(json=SCHEMA)
    )
    llm.generate(prompts[:2], constrained, use_tqdm=False)  # warm-up: grammar compile
    load = wait_quiet()
    best_a, best_b, lengths = float("inf"), float("inf"), []
    for _ in range(args.repeats):
        started = time.perf_counter()
        outs = llm.generate(prompts, constrained, use_tqdm=False)
        best_a = min(best_a, time.perf_counter() - started)
        lengths = [len(o.outputs[0].token_ids) for o in outs]
        plain = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in lengths]
        started = time.perf_counter()
        llm.generate(prompts, plain, use_tqdm=False)
        best_b = min(best_b, time.perf_counter() - started)
    tokens = sum(lengths)
    report(
        "constrained decoding overhead (JSON schema vs free, equal token counts)",
        {
            "model": model.name,
            "requests": args.requests,
            "grammar": "xgrammar",
            "repeats (best of)": args.repeats,
            "load before timing": f"{load:.2f}",
        },
        [
            ("tokens per arm", tokens),
            ("constrained wall (s)", best_a),
            ("unconstrained wall (s)", best_b),
            ("constrained tok/s", tokens / best_a),
            ("unconstrained tok/s", tokens / best_b),
            ("overhead: 1 - constrained/unconstrained tok/s", 1 - (tokens / best_a) / (tokens / best_b)),
        ],
        args.json_out,
    )


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
