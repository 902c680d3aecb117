"""No network at run time, proved (issue 18).

``uxlocal demo`` on the embedded model through vLLM, the judge and the tau2 runtime included, in a
process where every socket connect, send or name lookup beyond loopback raises and is recorded
(tests/netguard.py). The guard is on before the engine starts, so vLLM's start-up (its IP probe, its
rendezvous) is inside it too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.store.db import connect

pytestmark = pytest.mark.integration

DEMO_SUITES = os.environ.get("UXLOCAL_OFFLINE_DEMO_SUITES", "selftest,tau2")
"""Two of the demo's suites: selftest (candidate, user and judge seats) and the tau2 runtime (agent,
user simulator, tool calls, judge). The others (uxbench, userproxy, palate) go through the same
engine, scheduler and store for longer; name them in the variable to widen the check."""


def test_demo_attempts_no_connection_beyond_loopback(embedded_model: Any, tmp_path: Path,
                                                     network_guard: Any) -> None:
    pytest.importorskip("vllm", reason="vLLM is not installed")
    db = tmp_path / "demo.duckdb"
    result = CliRunner().invoke(cli, ["demo", "--db", str(db), "--suites", DEMO_SUITES, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert network_guard.attempts == []

    con = connect(db, read_only=True)
    try:
        runs = dict(con.execute("SELECT suite, status FROM runs").fetchall())
        judged = con.execute("SELECT count(*) FROM run_generations WHERE role = 'judge' AND NOT cached"
                             ).fetchone()[0]
    finally:
        con.close()
    ran = set(DEMO_SUITES.split(","))
    if "tau2" in ran and "tau2 data not found" in result.output:
        ran.discard("tau2")  # a clone without ../shared/data: the demo says it skipped tau2
    assert runs == {suite: "done" for suite in ran}
    assert judged > 0  # the judge's requests went through the engine under the guard
