"""Store ingest rate (turns/s into a file-backed DuckDB) and a GROUP BY over 1M turns.

    .venv/bin/python -m benchmarks.store_ingest [--turns 1000000]

Turns go through ``StoreWriter`` (the path runs use), in flushes of 100k rows.
Goals: >= 300k turns/s, the GROUP BY under 0.2 s.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks._common import cli_parser, report, wait_quiet
from uxlocal.store.db import connect
from uxlocal.store.writer import StoreWriter

WORDS = "the quick brown fox jumps over a lazy dog while tea cools beside an open window".split()


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--turns", type=int, default=1_000_000)
    p.add_argument("--flush-rows", type=int, default=100_000)


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    rows = []
    for i in range(args.turns):
        text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(36))
        rows.append({"run_id": f"run{i % 20}", "episode_id": f"ep{i // 10}", "idx": i % 10,
                     "role": "user" if i % 2 else "assistant", "content": text, "model_role": "candidate"})
    with tempfile.TemporaryDirectory() as tmp:
        con = connect(Path(tmp) / "bench.duckdb")
        writer = StoreWriter(con, flush_rows=args.flush_rows)
        load = wait_quiet()
        started = time.perf_counter()
        for start in range(0, len(rows), args.flush_rows):
            writer.add_many("turns", rows[start:start + args.flush_rows])
        writer.flush()
        ingest = time.perf_counter() - started
        query = ("SELECT run_id, role, count(*), avg(length(content)) FROM turns GROUP BY run_id, role")
        con.execute(query).fetchall()
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            con.execute(query).fetchall()
            best = min(best, time.perf_counter() - started)
        size_mb = (Path(tmp) / "bench.duckdb").stat().st_size / 1e6
        con.close()
    report("store ingest and query", {"turns": args.turns, "flush rows": args.flush_rows, "file-backed": True,
                                      "load before timing": f"{load:.2f}"},
           [("ingest wall (s)", ingest), ("turns/s", args.turns / ingest), ("store size (MB)", size_mb),
            ("GROUP BY run_id, role over all turns (s)", best)], args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
