"""Shared bits of the benchmark scripts: argument defaults, printing a fixed-width block, JSON out."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark has."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", default="embedded", help="preset or HF folder (default: embedded)")
    p.add_argument("--json", dest="json_out", default=None, help="write the raw numbers to this file")
    return p


def wait_quiet(max_wait_s: float = 30.0, busy_threshold: float = 0.5) -> float:
    """Wait until the machine's 1-minute load is low (other jobs skew CPU timings); returns load."""
    deadline = time.time() + max_wait_s
    load = os.getloadavg()[0]
    while load > busy_threshold * (os.cpu_count() or 1) and time.time() < deadline:
        time.sleep(2)
        load = os.getloadavg()[0]
    return load


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
            json.dump({"title": title, "config": config, "results": dict(rows)}, handle, indent=2, default=str)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result
