"""Store ingest rate (turns/s into a file-backed DuckDB) and a GROUP BY over 1M turns.

    .venv/bin/python benchmarks/store_ingest.py [--turns 1000000]

Turns go through ``StoreWriter`` (the path runs use), in flushes of 100k rows.
Goals: >= 300k turns/s, the GROUP BY under 0.2 s.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, report, wait_quiet  # noqa: E402

from uxlocal.store.db import connect  # noqa: E402
from uxlocal.store.writer import StoreWriter  # noqa: E402

WORDS = "the quick brown fox jumps over a lazy dog while tea cools beside an open window".split()


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=1_000_000)
    p.add_argument("--flush-rows", type=int, default=100_000)
    args = p.parse_args()
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
    main()
