"""Run benchmarks N times each, in interleaved rounds, and print every figure as median (min-max).

    .venv/bin/python benchmarks/run_all.py [--repeat 3] [--only rollout_batching,uxbench_judge]
        [--args "lora_cpu=--requests 16"] [--json all.json]

One run of a CPU benchmark on a shared machine says little: the README once showed each
script's best run. Round r runs every selected script once (as a subprocess with ``--json``), so
a noisy minute hits all of them alike; then every numeric result a script reports is printed as
the median of its runs with the range, and non-numeric ones with each run's value.
``engine_roofline.py`` has its own ``--repeat`` (its arms interleave inside one run) and is not
run from here.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ORDER = ("rollout_batching", "uxbench_judge", "cache_rerun", "constrained_overhead", "lora_cpu",
         "judge_throughput", "streaming_overhead", "store_ingest", "crash_resume", "http_vs_inprocess")
"""Every benchmark script this runs, in round order (the README's table first)."""


def run_once(name: str, extra: list[str], timeout_s: float) -> dict[str, Any]:
    """One run of ``benchmarks/<name>.py``; its ``--json`` results plus wall time and load at the start."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(HERE / f"{name}.py"), *extra, "--json", str(out)],
                              capture_output=True, text=True, timeout=timeout_s)
        wall = time.perf_counter() - started
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(f"{name} failed (exit {done.returncode}):\n{(done.stderr or done.stdout)[-1500:]}")
        results = json.loads(out.read_text())["results"]
    return {"results": results, "wall_s": wall, "load": load}


def summarize(runs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(label, 'median (min-max)') per result, in the script's own order; text results list each run's value."""
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


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="runs per benchmark, in rounds (default 3)")
    p.add_argument("--only", default=",".join(ORDER[:3]),
                   help=f"comma-separated benchmarks (default: {','.join(ORDER[:3])}; known: {','.join(ORDER)})")
    p.add_argument("--args", action="append", default=[], help="extra arguments for one script: name='--flag value'")
    p.add_argument("--timeout-s", type=float, default=3600.0, help="kill one run after this long (default 3600)")
    p.add_argument("--json", dest="json_out", default=None, help="write every run's raw results to this file")
    args = p.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        raise SystemExit(f"--only: unknown benchmark(s) {unknown} (known: {', '.join(ORDER)})")
    extra = parse_extra(args.args)
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
        print(f" {name}.py {' '.join(extra.get(name, []))}")
        for label, shown in summarize(runs[name]):
            print(f"   {label:<46} {shown:>28}")
    print("=" * 78)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(runs, indent=2, default=str))


if __name__ == "__main__":
    main()
