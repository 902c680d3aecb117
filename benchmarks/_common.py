"""Shared bits of the benchmark scripts: argument defaults, printing a fixed-width block, JSON out."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
"""The checkout's root: benchmarks run as ``python -m benchmarks.NAME`` from here."""


def parser(description: str) -> argparse.ArgumentParser:
    """Return an argument parser with the options every benchmark has."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", default="embedded", help="preset or HF folder (default: embedded)")
    p.add_argument("--json", dest="json_out", default=None, help="write the raw numbers to this file")
    return p


def cli_parser(
    doc: str | None, add_cli_args: Callable[[argparse.ArgumentParser], None]
) -> argparse.ArgumentParser:
    """Return a script's whole parser: the shared options, then the script's own (``add_cli_args``)."""
    p = parser((doc or "").strip().splitlines()[0] if doc else "")
    add_cli_args(p)
    return p


def module_command(module: str, *args: str) -> list[str]:
    """Return the command that runs ``module`` (``benchmarks.NAME``) in a child; start it with ``cwd=REPO``.

    ``-m`` from the checkout's root imports this tree's ``benchmarks`` and ``uxlocal``, whatever
    copy of uxlocal the interpreter has installed.
    """
    return [sys.executable, "-m", module, *args]


def wait_quiet(max_wait_s: float = 30.0, busy_threshold: float = 0.5) -> float:
    """Wait until the machine's 1-minute load is low (other jobs skew CPU timings); returns load."""
    deadline = time.time() + max_wait_s
    load = os.getloadavg()[0]
    while load > busy_threshold * (os.cpu_count() or 1) and time.time() < deadline:
        time.sleep(2)
        load = os.getloadavg()[0]
    return load


def process_cpu_ns(pid: int) -> int:
    """CPU time used so far by all threads of process ``pid``, in ns (Linux schedstat; 0 if unreadable)."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that just ended
            continue
    return total


def wait_process_idle(pid: int, max_wait_s: float = 1.0, window_s: float = 0.02,
                      busy_share: float = 0.1) -> float:
    """Wait until process ``pid`` uses < ``busy_share`` of a core over ``window_s``; return seconds waited.

    An OpenMP runtime keeps its threads spinning after a parallel region (Intel's for 200 ms by
    default), which takes a core from whatever the machine runs next: a benchmark that measures one
    process after another waits here so that no arm runs beside the previous arm's spinning threads.
    """
    started = time.perf_counter()
    before = process_cpu_ns(pid)
    while time.perf_counter() - started < max_wait_s:
        time.sleep(window_s)
        now = process_cpu_ns(pid)
        if now - before < busy_share * window_s * 1e9:
            break
        before = now
    return time.perf_counter() - started


def report(title: str, config: dict[str, Any], rows: list[tuple[str, Any]], json_out: str | None) -> None:
    """Print config, then a fixed-width block of labelled values between rules; optionally save JSON."""
    print("=" * 64)
    print(f" {title}")
    print("-" * 64)
    for key, value in config.items():
        print(f" {key:<38} {value}")
    print("-" * 64)
    for label, value in rows:
        shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
        print(f" {label:<46} {shown:>15}")
    print("=" * 64)
    if json_out:
        with open(json_out, "w") as handle:
            json.dump(
                {"title": title, "config": config, "results": dict(rows)}, handle, indent=2, default=str
            )


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result
