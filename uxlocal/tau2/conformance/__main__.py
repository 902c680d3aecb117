"""``python -m uxlocal.tau2.conformance``: replay the recorded suite and print the table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .compare import compare_domain
from .report import CONFORMANCE_DOMAINS, details, table


def main(argv: list[str] | None = None) -> int:
    """Parse the options, replay each domain, print the table (and details, with ``--show``)."""
    parser = argparse.ArgumentParser(prog="python -m uxlocal.tau2.conformance",
                                     description="Replay tau2's recorded conformance suite through "
                                                 "our runtime and print the per-domain agreement.")
    parser.add_argument("--recording", type=Path, default=Path("../shared/conformance/tau2"),
                        help="folder with <domain>/cases.json … (default: ../shared/conformance/tau2)")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/tau2"),
                        help="tau2 data folder (default: ../shared/data/tau2)")
    parser.add_argument("--domains", default="all", help="comma-separated, or all (default)")
    parser.add_argument("--limit", type=int, default=None, help="first N cases per domain")
    parser.add_argument("--show", type=int, default=0, help="print the first N mismatches of each kind")
    parser.add_argument("--words", choices=("recording", "data"), default="recording",
                        help="tool words from the recording's tools_*.json (default) or from --data "
                             "(a tau2-bench checkout's src/, else ours)")
    parser.add_argument("--json", type=Path, default=None, help="write every count and kept mismatch here")
    args = parser.parse_args(argv)
    names = CONFORMANCE_DOMAINS if args.domains == "all" else tuple(args.domains.split(","))
    missing = [n for n in names if not (args.recording / n / "cases.json").is_file()]
    if missing:
        print(f"error: {args.recording} has no recording for {', '.join(missing)}", file=sys.stderr)
        return 2
    reports = [compare_domain(n, args.recording, args.data, keep=max(args.show, 20), limit=args.limit,
                              words=args.words)
               for n in names]
    print(table(reports))
    if args.show:
        for report in reports:
            print("\n" + details(report, args.show))
    if args.json is not None:
        args.json.write_text(json.dumps({r.domain: r.as_json() for r in reports}, indent=1,
                                        ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
