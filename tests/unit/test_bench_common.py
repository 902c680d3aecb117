"""Helpers the benchmark scripts share: waiting for a measured process to stop spinning (issue 19)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import _common as bench_common

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

SPIN_THEN_SLEEP = ("import time\nend = time.perf_counter() + {spin}\n"
                   "while time.perf_counter() < end: pass\ntime.sleep(30)")


def _child(spin_s: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", SPIN_THEN_SLEEP.format(spin=spin_s)])


def test_process_cpu_ns_grows_while_a_process_runs() -> None:
    child = _child(0.6)
    try:
        first = bench_common.process_cpu_ns(child.pid)
        bench_common.wait_process_idle(child.pid, max_wait_s=5.0)
        assert bench_common.process_cpu_ns(child.pid) > first
    finally:
        child.kill()
    assert bench_common.process_cpu_ns(2**22 + 12345) == 0  # no such process: nothing to read


def test_wait_process_idle_waits_out_a_spinning_process_and_not_a_sleeping_one() -> None:
    spinning = _child(1.0)
    try:
        waited = bench_common.wait_process_idle(spinning.pid, max_wait_s=5.0)
        assert waited >= 0.3  # it was still spinning when asked (start-up included)
        assert bench_common.wait_process_idle(spinning.pid, max_wait_s=5.0) < 0.5  # now it sleeps
    finally:
        spinning.kill()


def test_wait_process_idle_gives_up_after_max_wait() -> None:
    spinning = _child(10.0)
    try:
        waited = bench_common.wait_process_idle(spinning.pid, max_wait_s=0.3)
        assert 0.3 <= waited < 1.5
    finally:
        spinning.kill()


def test_run_all_checks_each_scripts_arguments_with_its_own_parser() -> None:
    from benchmarks import run_all

    run_all.check_args(["store_ingest"], {"store_ingest": ["--turns", "10"]})  # a flag the script has
    with pytest.raises(SystemExit):
        run_all.check_args(["store_ingest"], {"store_ingest": ["--bogus", "1"]})
    with pytest.raises(SystemExit, match="unknown benchmark"):
        run_all.parse_extra(["nosuch=--x 1"])
