"""Run benchmarks N times each, in interleaved rounds, and print every figure as median (min-max).

    .venv/bin/python -m benchmarks.run_all [--repeat 3] [--only rollout_batching,uxbench_judge]
        [--args "lora_cpu=--requests 16"] [--json all.json]

One run of a CPU benchmark on a shared machine says little: the README once showed each
script's best run. Round r runs every selected script once (as a subprocess with ``--json``), so
a noisy minute hits all of them alike (each in its own process: engines and thread pools from
one script must not slow the next);  then every numeric result a script reports is printed as
the median of its runs with the range, and non-numeric ones with each run's value.
``engine_roofline.py`` has its own ``--repeat`` (its arms interleave inside one run) and is not
run from here. The scripts are imported first, and every ``--args`` is parsed by the script's own
parser before round 1, so a mistyped flag fails in a second, not after an hour of rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks import (
    cache_rerun,
    constrained_overhead,
    crash_resume,
    decode_attention,
    http_follow_ups,
    http_vs_inprocess,
    judge_throughput,
    lora_cpu,
    rollout_batching,
    store_ingest,
    streaming_overhead,
    uxbench_judge,
)
from benchmarks._common import REPO, cli_parser, module_command

SCRIPTS: dict[str, ModuleType] = {module.__name__.rsplit(".", 1)[1]: module for module in (
    rollout_batching, uxbench_judge, cache_rerun, constrained_overhead, lora_cpu, judge_throughput,
    streaming_overhead, store_ingest, crash_resume, http_vs_inprocess, http_follow_ups, decode_attention)}
"""Every benchmark script this runs, by name, in round order (the README's table first)."""
ORDER = tuple(SCRIPTS)


def run_once(name: str, extra: list[str], timeout_s: float) -> dict[str, Any]:
    """One run of ``benchmarks/<name>.py``; its ``--json`` results plus wall time and load at the start."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run(module_command(SCRIPTS[name].__name__, *extra, "--json", str(out)),
                              capture_output=True, text=True, timeout=timeout_s, cwd=REPO)
        wall = time.perf_counter() - started
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(
                f"{name} failed (exit {done.returncode}):\n{(done.stderr or done.stdout)[-1500:]}"
            )
        results = json.loads(out.read_text())["results"]
    return {"results": results, "wall_s": wall, "load": load}


def summarize(runs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Return (label, 'median (min-max)') per result, in the script's order; text lists each run's value."""
    rows = []
    for label in runs[0]["results"]:
        values = [run["results"].get(label) for run in runs]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            med, low, high = statistics.median(values), min(values), max(values)
            shown = _num(med) + (f" ({_num(low)}-{_num(high)})" if len(values) > 1 else "")
        else:
            shown = " | ".join(str(v) for v in values)
        rows.append((label, shown))
    loads = [run["load"] for run in runs]
    rows.append(("load at start (min-max)", f"{min(loads):.2f}-{max(loads):.2f}"))
    return rows


def _num(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def parse_extra(pairs: list[str]) -> dict[str, list[str]]:
    """``name=--flag value`` pairs -> extra arguments per script."""
    extra: dict[str, list[str]] = {}
    for pair in pairs:
        name, _, args = pair.partition("=")
        if name not in ORDER:
            raise SystemExit(f"--args {pair!r}: unknown benchmark {name!r} (known: {', '.join(ORDER)})")
        extra[name] = shlex.split(args)
    return extra


def check_args(names: list[str], extra: dict[str, list[str]]) -> None:
    """Parse each script's extra arguments with its own parser now; a bad flag exits before round 1."""
    for name in names:
        script = SCRIPTS[name]
        parser = cli_parser(script.__doc__, script.add_cli_args)
        parser.prog = f"benchmarks.{name}"
        parser.parse_args(extra.get(name, []))


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add the runner's options (it has no ``--model``: each script takes its own through ``--args``)."""
    p.add_argument("--repeat", type=int, default=3, help="runs per benchmark, in rounds (default 3)")
    p.add_argument(
        "--only",
        default=",".join(ORDER[:3]),
        help=f"comma-separated benchmarks (default: {','.join(ORDER[:3])}; known: {','.join(ORDER)})",
    )
    p.add_argument(
        "--args", action="append", default=[], help="extra arguments for one script: name='--flag value'"
    )
    p.add_argument(
        "--timeout-s", type=float, default=3600.0, help="kill one run after this long (default 3600)"
    )
    p.add_argument("--json", dest="json_out", default=None, help="write every run's raw results to this file")


def main(args: argparse.Namespace) -> None:
    """Run the selected scripts in rounds; print median (min-max) of every figure."""
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        raise SystemExit(f"--only: unknown benchmark(s) {unknown} (known: {', '.join(ORDER)})")
    extra = parse_extra(args.args)
    check_args(names, extra)
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for rnd in range(args.repeat):
        for name in names:
            runs[name].append(run_once(name, extra.get(name, []), args.timeout_s))
            print(f"  round {rnd + 1}/{args.repeat} {name}: {runs[name][-1]['wall_s']:.0f} s, "
                  f"load {runs[name][-1]['load']:.2f}", file=sys.stderr, flush=True)
    print("=" * 78)
    print(f" benchmarks: median (min-max) of {args.repeat} runs each, interleaved in rounds")
    for name in names:
        print("-" * 78)
        print(f" -m benchmarks.{name} {' '.join(extra.get(name, []))}")
        for label, shown in summarize(runs[name]):
            print(f"   {label:<46} {shown:>28}")
    print("=" * 78)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(runs, indent=2, default=str))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_cli_args(parser)
    main(parser.parse_args())
