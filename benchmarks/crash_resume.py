"""Crash and resume: SIGKILL a single-tick run at 60% of its run time, rerun it, count what was redone.

    .venv/bin/python -m benchmarks.crash_resume [--limit 40] [--max-batch 4] [--judge-mode reason]

Three child processes run the same single-tick UXBench T1 job (``_crash_job.py``: one scheduler
tick; vLLM runs it as one engine call with ``max_batch`` requests in the engine at a time, the
fewest tokens first (``admission_cost``), other engines as ``limit / max_batch`` calls), each
loading the model first:

1. uninterrupted, on its own store: its run time T is from "engine loaded" to "run finished";
2. on a second store, SIGKILLed at ``--kill-at`` (0.6) x T after its engine loaded;
3. the same command again on the killed store (resume).

Printed: the share of requests the rerun had to generate (goal <= 45 %) next to the share that
had not finished at the kill (no resume can do better; the difference is what finished within
the last ``flush_every_s`` and was not committed yet), the rerun's run time
over the first run's, finished generations older than ``flush_every_s`` at the kill that the store
lacked (must be 0), and rows lost or duplicated against the uninterrupted store (must be 0).
The scheduler's default ``flush_every_s`` (2 s) applies unless ``--flush-every-s``.

History (issue 20): before results were saved as they finished, a kill inside the tick left 0
generations stored (0 of 40, "0 from cache" on the rerun). The figures since are in the docs'
performance page.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._common import cli_parser, report, wait_quiet
from benchmarks._crash_job import JobResult, run_job, snapshot, stored_hashes

COMMIT_SLACK_S = 1.0
"""A result counts as 'should be on disk' when it finished flush_every_s plus this before the kill
(one engine step until the next heartbeat, and the background commit)."""


def run_time(job: JobResult) -> float:
    """Seconds from 'engine loaded' to 'run finished' (or to the kill)."""
    ready = job.of("ready")[0]["t"]
    end = job.killed_at if job.killed_at is not None else job.end["t"]
    return float(end - ready)


def _killed_run(folder: Path, argv: list[str], env: dict[str, str], kill_at: float, total_s: float,
                attempts: int = 3) -> tuple[JobResult, float]:
    """Run the job on a fresh crash store and SIGKILL it at ``kill_at`` x the reference run time.

    Returns the killed job and the run time its kill was timed against.

    On a machine whose load changes, a copy can finish before its kill (the reference ran slower);
    then that copy's own run time becomes the reference and a new copy is killed, up to ``attempts``.
    """
    for attempt in range(attempts):
        store = folder / "crash.duckdb"
        for stale in (store, Path(f"{store}.wal")):
            stale.unlink(missing_ok=True)
        job = run_job(["--db", str(store), *argv], env=env,
                      kill_at=lambda e, _, t=total_s: kill_at * t if e["event"] == "ready" else None)
        if job.returncode == -9:
            return job, total_s
        print(f"attempt {attempt + 1}: the copy finished in {run_time(job):.1f} s, before its kill at "
              f"{kill_at * total_s:.1f} s (the reference ran slower); timing the next kill on this copy")
        total_s = run_time(job)
    raise SystemExit(f"no copy was killed in {attempts} attempts; is the run too short?")


def compare(resumed: dict[str, Any], reference: dict[str, Any]) -> tuple[int, int]:
    """(rows of the uninterrupted store missing after the resume, duplicated rows after the resume)."""
    lost = 0
    for key, index in (("episodes", 1), ("verdicts", 2), ("generations", 1), ("run_generations", 2)):
        have = {row[:index] for row in resumed[key]}
        lost += sum(1 for row in reference[key] if row[:index] not in have)
    return lost, sum(resumed["duplicates"].values())


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--limit", type=int, default=40)
    p.add_argument("--max-batch", type=int, default=4)
    p.add_argument("--judge-mode", default="reason", choices=["label", "reason"])
    p.add_argument("--reason-max-tokens", type=int, default=128)
    p.add_argument(
        "--kill-at", type=float, default=0.6, help="share of the first run's run time (default 0.6)"
    )
    p.add_argument(
        "--flush-every-s", type=float, default=None, help="scheduler commit interval (default 2 s)"
    )


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    env = dict(os.environ)
    if args.flush_every_s is not None:
        env["UXLOCAL_FLUSH_EVERY_S"] = str(args.flush_every_s)
    flush_s = float(env.get("UXLOCAL_FLUSH_EVERY_S", "2.0"))
    folder = Path(tempfile.mkdtemp(prefix="crash_resume_"))
    argv = ["--model", args.model, "--limit", str(args.limit), "--max-batch", str(args.max_batch),
            "--judge-mode", args.judge_mode, "--reason-max-tokens", str(args.reason_max_tokens)]
    load = wait_quiet()
    first = run_job(["--db", str(folder / "ref.duckdb"), *argv], env=env)
    total_s = run_time(first)
    killed, total_s = _killed_run(folder, argv, env, args.kill_at, total_s)
    stored = stored_hashes(str(folder / "crash.duckdb"))
    assert killed.killed_at is not None
    due = {e["hash"] for e in killed.of("done") if e["t"] <= killed.killed_at - flush_s - COMMIT_SLACK_S}
    rerun = run_job(["--db", str(folder / "crash.duckdb"), *argv], env=env)
    end = rerun.end
    lost, duplicated = compare(snapshot(str(folder / "crash.duckdb")), snapshot(str(folder / "ref.duckdb")))
    requests = first.end["requests"]
    report("crash and resume: SIGKILL a single-tick run, then rerun it",
           {"model": args.model, "items (requests)": requests, "max_batch": args.max_batch,
            "engine calls (one tick)": len(first.of("chunk")), "judge mode": args.judge_mode,
            "flush_every_s": flush_s, "kill at (share of run time)": args.kill_at,
            "load before timing": f"{load:.2f}", "stores": str(folder)},
           [("reference run time (s)", total_s), ("killed at (s)", run_time(killed)),
            ("finished before the kill", len(killed.of("done"))),
            ("stored at the kill", len(stored)),
            ("finished > flush_every_s before kill, not stored", len(due - stored)),
            ("rerun: requests from cache", end["cache_hits"]),
            ("rerun: requests generated", end["engine_requests"]),
            ("rerun run time (s)", run_time(rerun)),
            ("rows lost vs uninterrupted run", lost), ("rows duplicated", duplicated),
            ("rerun/reference run time", run_time(rerun) / total_s),
            ("share unfinished at the kill (the floor)", 1 - len(killed.of("done")) / requests),
            ("share regenerated (goal <= 0.45)", end["engine_requests"] / requests)], args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
