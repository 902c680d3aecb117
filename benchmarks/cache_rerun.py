"""The cache: the same command run twice; the second run must make zero engine calls.

    .venv/bin/python -m benchmarks.cache_rerun [--suite selftest]

Runs ``uxlocal run SUITE`` twice as subprocesses on a fresh store (the second is the same command)
and reads ``engine_calls`` from ``run_summary``. Goal: second run >= 50x faster, 0 engine calls.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import cli_parser, report, wait_quiet

SUITE_ARGS = {
    "selftest": ["--exchanges", "3", "-m", "candidate={m}", "-m", "user={m}", "-m", "judge={m}"],
    "uxbench": ["-m", "candidate={m}", "-m", "judge={m}"],
}


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--suite", default="selftest", choices=sorted(SUITE_ARGS))


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    exe = str(Path(sys.executable).with_name("uxlocal"))
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "cache.duckdb")
        command = [exe, "run", args.suite, "--db", db, "--no-progress"] + \
            [a.format(m=args.model) for a in SUITE_ARGS[args.suite]]
        load = wait_quiet()
        times = []
        for _ in range(2):
            started = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times.append(time.perf_counter() - started)
        out = subprocess.run([exe, "query", "--db", db, "--format", "csv",
                              "select engine_calls, generations from run_summary"],
                             check=True, capture_output=True, text=True).stdout.splitlines()
    calls, generations = out[1].split(",")
    report("cache = resume: the same command twice", {"command": " ".join(command[1:3]), "model": args.model,
                                                     "load before timing": f"{load:.2f}"},
           [("first run wall (s)", times[0]), ("second run wall (s)", times[1]),
            ("generations stored", int(generations)), ("second run engine calls", int(calls)),
            ("speedup: first/second (x)", times[0] / times[1])], args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
