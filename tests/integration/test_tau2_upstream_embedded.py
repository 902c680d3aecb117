"""The upstream protocol on a real engine (issue 42): tau2 episodes on a checkout, native tool calls.

The embedded SmolLM2 model plays every seat through in-process vLLM, its tools rendered by our
tools-capable template and its calls parsed by vLLM's hermes parser, on a tau2-bench checkout linked
from ``../shared/upstream/tau2-bench-8ebb749`` and ``../shared/data/tau2`` (skipped without them).
A 135M model solves nothing; this checks the machinery: every request carries upstream's tools and
seed, every episode ends with a tau2 termination reason (an unreadable call as
``infrastructure_error``), and the run says it is comparable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.tau2 import TERMINATION_REASONS
from uxlocal.tau2.conformance.episode_check import assemble_checkout

pytestmark = pytest.mark.integration

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
UPSTREAM = SHARED / "upstream" / "tau2-bench-8ebb749"
DATA = SHARED / "data" / "tau2"
ROLES = ("agent", "user", "judge")


@pytest.fixture(scope="module")
def tools_pool(embedded_model: Any, vllm_pool: ModelPool) -> Any:
    """Seat the embedded model (its preset names a tool parser) in all three tau2 roles."""
    pool = ModelPool.from_models({role: embedded_model for role in ROLES})
    yield pool
    pool.close()


def test_mock_episodes_on_a_checkout_run_upstreams_protocol_through_vllm(tools_pool: ModelPool,
                                                                         tmp_path: Path) -> None:
    for path in (UPSTREAM / "src" / "tau2", DATA / "domains" / "mock"):
        if not path.exists():
            pytest.skip(f"{path} is absent (upstream source and tau2 data are needed)")
    checkout = assemble_checkout(UPSTREAM, DATA, tmp_path)
    config = {"tau2_data": str(checkout / "data" / "tau2"), "domain": "mock", "max_steps": 6}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / "s.duckdb"), limit=2, progress=False)
    result = run_suite(run, pool=tools_pool)
    assert result.stats.episodes_done == 2 and result.stats.episodes_failed == 0
    assert any("upstream protocol, comparable with tau2-bench" in note for note in result.notes)
    con = connect(tmp_path / "s.duckdb")
    endings = con.execute("SELECT termination, json_extract_string(info, '$.protocol'), "
                          "json_extract_string(info, '$.termination_detail') FROM episodes").fetchall()
    print(endings)
    assert all(t in TERMINATION_REASONS and p == "upstream" for t, p, _ in endings), endings
    row = con.execute("SELECT episodes, comparable FROM tau2_summary WHERE run_id = ?",
                      [result.run_id]).fetchone()
    assert row == (2, True)
