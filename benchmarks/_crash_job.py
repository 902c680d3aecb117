"""A single-tick UXBench judge run that reports its progress as JSON lines, to be killed and resumed.

    .venv/bin/python -m benchmarks._crash_job --db run.duckdb --model embedded --limit 24 --max-batch 4

Used by ``benchmarks/crash_resume.py`` and the crash tests (``tests/integration/test_crash_resume.py``,
``tests/unit/test_crash_resume_http.py``), which run it as a child process and SIGKILL it. It
loads the judge's engine first, then prints (one JSON object per line, flushed):

- ``{"event": "ready", "t": ...}`` when the engine is loaded and the run starts;
- ``{"event": "call", "n": ..., "size": ..., "t": ...}`` when an engine call starts;
- ``{"event": "chunk", "n": ..., "size": ..., "t": ...}`` when an engine call returns;
- ``{"event": "done", "hash": ..., "t": ...}`` when a result reached the scheduler (after the
  scheduler's sink took it, so a commit that was due has been queued);
- ``{"event": "end", "requests": ..., "cache_hits": ..., "engine_requests": ..., "run_s": ...}``.

Times are ``time.time()`` (comparable across processes). ``engine_requests`` counts the requests
the engine was asked to generate in this process. ``run_job`` is the parent's side: it starts the
job, collects the events and SIGKILLs the job when its ``kill_at`` says so.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks._common import REPO, module_command
from uxlocal.config import RunConfig
from uxlocal.engine.base import GenResult, PreparedRequest, ResultSink
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.runner import run_suite


def say(event: str, **fields: Any) -> None:
    """One JSON line on stdout, flushed (the parent reads it while we run)."""
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


class Tap:
    """Passes results on to the scheduler's sink, then reports them."""

    def __init__(self, sink: ResultSink, batch: list[PreparedRequest]) -> None:
        self.sink = sink
        self.batch = batch

    def done(self, index: int, result: GenResult) -> None:
        self.sink.done(index, result)
        say("done", hash=self.batch[index].request_hash)

    def busy(self) -> None:
        self.sink.busy()

    def more(self) -> list[PreparedRequest]:
        """Pass the scheduler's follow-ups on; their results come back under the next indices."""
        added = self.sink.more()
        self.batch = [*self.batch, *added]
        return added


def watch(engine: Any) -> dict[str, int]:
    """Wrap ``engine.generate`` to report engine calls ("chunk") and results; returns live counters.

    The engine's declarations (``Engine.rolling``) are untouched, so the scheduler calls the wrapper
    as it would call the engine (one rolling call per tick for vLLM, ``max_batch`` chunks for the others).
    """
    counts = {"calls": 0, "requests": 0}
    original = engine.generate

    def generate(batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        say("call", n=counts["calls"] + 1, size=len(batch))
        counts["requests"] += len(batch)
        out = original(batch, sink=Tap(sink, batch) if sink is not None else None, window=window)
        counts["calls"] += 1
        say("chunk", n=counts["calls"], size=len(batch))
        return list(out)

    engine.generate = generate
    return counts


@dataclass
class JobResult:
    """What the parent saw of one job: exit code (-9 when killed), events, and when it was killed."""

    returncode: int
    events: list[dict[str, Any]] = field(default_factory=list)
    killed_at: float | None = None
    stderr_tail: str = ""

    def of(self, kind: str) -> list[dict[str, Any]]:
        """Return the events of one kind, in order."""
        return [e for e in self.events if e["event"] == kind]

    @property
    def end(self) -> dict[str, Any]:
        """The final event (the job was not killed)."""
        ends = self.of("end")
        if not ends:
            raise AssertionError(f"job did not finish (rc {self.returncode}):\n{self.stderr_tail}")
        return ends[0]


KillRule = Callable[[dict[str, Any], list[dict[str, Any]]], "float | None"]
"""Called with each event and all so far; a number schedules the SIGKILL that many seconds later."""


def run_job(argv: list[str], *, kill_at: KillRule | None = None, timeout_s: float = 900.0,
            env: dict[str, str] | None = None) -> JobResult:
    """Run this script as a child with ``argv``; SIGKILL it when ``kill_at`` first returns a delay."""
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(module_command("benchmarks._crash_job", *argv),
                                stdout=subprocess.PIPE, stderr=errors, text=True, env=env, cwd=REPO)
        result = JobResult(0)
        timer: threading.Timer | None = None

        def kill() -> None:
            result.killed_at = time.time()
            proc.send_signal(signal.SIGKILL)

        guard = threading.Timer(timeout_s, proc.kill)
        guard.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if not line.startswith("{"):
                    continue
                result.events.append(json.loads(line))
                if timer is None and kill_at is not None:
                    delay = kill_at(result.events[-1], result.events)
                    if delay is not None:
                        timer = threading.Timer(max(0.0, delay), kill)
                        timer.start()
            result.returncode = proc.wait()
        finally:
            guard.cancel()
            if timer is not None:
                timer.cancel()
        errors.seek(0)
        result.stderr_tail = errors.read()[-4000:]
    return result


def snapshot(db: str) -> dict[str, Any]:
    """Return what a finished store holds, for comparing a resumed run with an uninterrupted one.

    ``duplicates`` counts rows beyond the first per key (0 in a healthy store); ``scores`` are
    kept apart because label probabilities may move in the last digits with the batch's make-up.
    """
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        q = lambda sql: con.execute(sql).fetchall()  # noqa: E731
        return {
            "episodes": q("SELECT episode_id, status, termination, n_turns FROM episodes ORDER BY 1"),
            "verdicts": q("SELECT episode_id, name, label, valid FROM verdicts ORDER BY 1, 2"),
            "generations": q("SELECT request_hash, text, valid, finish_reason FROM generations ORDER BY 1"),
            "run_generations": q("SELECT episode_id, seq, request_hash FROM run_generations ORDER BY 1, 2"),
            "scores": dict(q("SELECT episode_id || '/' || name, score FROM verdicts")),
            "duplicates": {
                "episodes": q("SELECT count(*) - count(DISTINCT episode_id) FROM episodes")[0][0],
                "verdicts": q("SELECT count(*) - count(DISTINCT (episode_id, name)) FROM verdicts")[0][0],
                "generations": q("SELECT count(*) - count(DISTINCT request_hash) FROM generations")[0][0],
                "run_generations": q(
                    "SELECT count(*) - count(DISTINCT (episode_id, seq)) FROM run_generations"
                )[0][0],
            },
        }
    finally:
        con.close()


def stored_hashes(db: str) -> set[str]:
    """Request hashes of the generations a (possibly killed) run left in the store."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT request_hash FROM generations").fetchall()}
    finally:
        con.close()


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add the job's options (its own ``--model``; it writes no ``--json``: its events are the output)."""
    p.add_argument("--db", required=True)
    p.add_argument("--model", default="embedded", help="judge preset or folder (default: embedded)")
    p.add_argument("--limit", type=int, default=24)
    p.add_argument("--max-batch", type=int, default=4)
    p.add_argument("--judge-mode", default="label", choices=["label", "reason"])
    p.add_argument("--reason-max-tokens", type=int, default=64)


def main(args: argparse.Namespace) -> None:
    """Load the judge, run the job, report events; exits the process without vLLM's teardown."""
    pool = ModelPool.from_models({"judge": resolve(args.model)})
    engine = pool.slot("judge").engine
    getattr(engine, "llm", None)  # load an in-process model now, so "ready" means generating
    counts = watch(engine)
    run = RunConfig(suite="uxbench", db=args.db, progress=False, limit=args.limit, max_batch=args.max_batch,
                    suite_config={"tasks": "judge", "judge_mode": args.judge_mode,
                                  "reason_max_tokens": args.reason_max_tokens, "bootstrap": 0})
    say("ready")
    started = time.perf_counter()
    result = run_suite(run, pool=pool)
    stats = result.stats
    say("end", requests=stats.requests, cache_hits=stats.cache_hits, engine_requests=counts["requests"],
        episodes_done=stats.episodes_done, episodes_skipped=stats.episodes_skipped,
        run_s=time.perf_counter() - started)
    # The store is committed and closed (run_suite's writer and connection). Skip vLLM's teardown:
    # on a loaded 2-core machine it took minutes, and a killed job never gets it either.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_cli_args(parser)
    main(parser.parse_args())
