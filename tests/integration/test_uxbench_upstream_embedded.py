"""UXBench by upstream's protocol on the embedded model through vLLM (issue 43).

All three tasks with ``--upstream ../shared/upstream/UXBench-51e31b6``: T1 free generation read
by upstream's rules beside the 好/差 label arm, T2/T3 scored by the GRM rule from vLLM's top-5
log-probabilities. Skipped with the reason when vLLM, the model or the checkout is missing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.suites.uxbench import protocol
from uxlocal.suites.uxbench.upstream import UPSTREAM_COMMIT

pytestmark = pytest.mark.integration
CHECKOUT = Path(__file__).resolve().parents[2].parent / "shared" / "upstream" / f"UXBench-{UPSTREAM_COMMIT}"


def test_upstream_protocol_on_all_three_tasks(vllm_pool: ModelPool, tmp_path: Path) -> None:
    if not CHECKOUT.is_dir():
        pytest.skip(f"no UXBench checkout at {CHECKOUT}")
    db = tmp_path / "ux.duckdb"
    run = RunConfig(suite="uxbench", suite_config={"upstream": str(CHECKOUT), "bootstrap": 100},
                    limit=2, db=str(db), progress=False)  # ~560 s at 4 on 2 cores: free text runs to its cap
    result = run_suite(run, pool=vllm_pool)
    assert result.stats.episodes_failed == 0 and result.stats.episodes_done == 6
    con = connect(db, read_only=True)
    rid = result.run_id
    # T1: every free answer has a parse note from upstream's cascade, and the label arm a P(好)
    notes = [json.loads(v)["parse_note"] for (v,) in con.execute(
        "SELECT value FROM verdicts WHERE run_id = ? AND name = 't1'", [rid]).fetchall()]
    known = ("__llm_error__", "cannot_parse")
    assert len(notes) == 2 and all(n in known or n.endswith(("_content", "_reasoning")) for n in notes)
    arm = con.execute("SELECT score FROM verdicts WHERE run_id = ? AND name = 't1_label'", [rid]).fetchall()
    assert len(arm) == 2 and all(s is not None and 0 <= s <= 1 for (s,) in arm)
    assert con.execute("SELECT mode FROM uxbench_t1 WHERE run_id = ?", [rid]).fetchone()[0] == "upstream"
    # T2/T3: judged replies carry the GRM details; a score, where present, follows the stored logprobs
    for value, score, valid in con.execute("SELECT value, score, valid FROM verdicts WHERE run_id = ? "
                                           "AND name IN ('t2', 't3')", [rid]).fetchall():
        details = json.loads(value)
        assert details["protocol"] == "upstream"
        if valid:
            assert protocol.grm_verdict(details["content"]) != 0
        good, bad = details.get("good_logprob"), details.get("bad_logprob")
        if good is not None and bad is not None:
            assert math.isclose(score, math.exp(good) / (math.exp(good) + math.exp(bad)), abs_tol=1e-12)
    grm = con.execute("SELECT count(*) FROM run_generations WHERE run_id = ? AND tag LIKE '%_grm'",
                      [rid]).fetchone()
    assert grm[0] >= 1
    assert result.tables[-1].title == "UXBench protocol" and "UXBench's" in result.tables[-1].rows[0][0]
