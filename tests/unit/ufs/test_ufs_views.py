"""suites/userproxy/views.sql equals the Python reference on hand-built store rows (issue 5, item 8)."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pytest

from uxlocal.store.db import load_views, migrate
from uxlocal.store.writer import StoreWriter
from uxlocal.suites.userproxy.ufs.frontier import Point, pareto
from uxlocal.suites.userproxy.ufs.report import episode_records, store_frontier, ufs_intervals, ufs_tables
from uxlocal.suites.userproxy.ufs.scoring import (
    CriterionVerdict,
    EpisodeRecord,
    delta_pass_rate,
    domain_ufs,
    effort_delta,
    mean_ufs,
    success_violations,
    violation_counts,
)
from uxlocal.suites.userproxy.ufs.taxonomy import FAMILIES, MODES_BY_FAMILY

NOW = dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc)
GREETING = "Hi! How can I help you today?"
SET, JUDGE, AGENT = "set-1", "judge-j", "agent-x"
PRICES = {"proxy-a": (0.1, 0.4), "proxy-b": (1.0, 4.0), "proxy-c": (0.05, 0.2)}  # USD per million tokens


@dataclass
class Built:
    """What the Python side knows about the rows it inserted."""

    records: list[EpisodeRecord] = field(default_factory=list)
    costs: dict[str, list[float]] = field(default_factory=dict)


class Rows:
    """Rows buffered per table and inserted in one batch each (a row at a time is far too slow)."""

    def __init__(self) -> None:
        self.tables: dict[str, list[dict[str, Any]]] = {}

    def insert(self, con: duckdb.DuckDBPyConnection) -> None:
        """Insert everything buffered, one batch per table."""
        writer = StoreWriter(con)
        for table, rows in self.tables.items():
            writer.insert_rows(table, rows)
        self.tables = {}


def _row(writer: Rows, table: str, **values: Any) -> None:
    writer.tables.setdefault(table, []).append(values)


def _message(
    role: str, content: str | None = None, calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"message": {"role": role, "content": content, "tool_calls": calls}}


def _episode(
    writer: Rows, rng: random.Random, run_id: str, proxy: str, domain: str, k: int, built: Built
) -> None:
    episode_id = f"{domain}/{k}/trial-0"
    reward = float(rng.random() < 0.6)
    _row(
        writer,
        "episodes",
        run_id=run_id,
        episode_id=episode_id,
        item_id=f"{domain}/{k}",
        task=domain,
        trial=0,
        status="done",
        termination="user_stop",
        reward=reward,
        info={},
        n_turns=0,
        started_at=NOW,
        ended_at=NOW,
    )
    turns = [("assistant", _message("assistant", GREETING))]
    questions = rng.randint(0, 3)
    turns += [("assistant", _message("assistant", f"Question {q}?")) for q in range(questions)]
    turns += [("assistant", _message("assistant", "No question here."))]
    calls = rng.randint(0, 5)
    for _ in range(calls):  # a '?' inside a call's arguments is not a question
        turns.append(
            ("assistant", _message("assistant", None, [{"name": "lookup", "arguments": {"q": "why?"}}]))
        )
        _row(
            writer,
            "tool_calls",
            run_id=run_id,
            episode_id=episode_id,
            turn_idx=len(turns) - 1,
            call_idx=0,
            requestor="assistant",
            name="lookup",
            arguments={"q": "why?"},
            ok=True,
            result="{}",
            error=None,
        )
    _row(
        writer,
        "tool_calls",
        run_id=run_id,
        episode_id=episode_id,
        turn_idx=0,
        call_idx=0,
        requestor="user",
        name="check",
        arguments={},
        ok=True,
        result="{}",
        error=None,
    )  # user calls are not agent effort
    for idx, (role, meta) in enumerate(turns):
        _row(
            writer,
            "turns",
            run_id=run_id,
            episode_id=episode_id,
            idx=idx,
            role=role,
            content="",
            model_role=None,
            request_hash=None,
            meta=meta,
        )
    verdicts = []
    p_pass = {"proxy-a": 0.85, "proxy-b": 0.6, "proxy-c": 0.75}[proxy]
    for c in range(rng.randint(0, 5)):
        family = rng.choice(FAMILIES)
        mode = rng.choice(MODES_BY_FAMILY[family])
        valid = rng.random() > 0.05
        applicable = rng.random() < 0.75 if valid else None
        passed = (rng.random() < p_pass) if valid else None
        verdicts.append(CriterionVerdict(f"c{c}", family, mode, applicable, passed, valid))
        label = (
            "invalid"
            if not valid
            else ("not_applicable" if not applicable else ("pass" if passed else "fail"))
        )
        _row(
            writer,
            "verdicts",
            run_id=run_id,
            episode_id=episode_id,
            item_id=f"{domain}/{k}",
            name=f"ufs:c{c}",
            judge_role="judge",
            judge_model=JUDGE,
            label=label,
            score=None,
            valid=valid,
            label_probs=None,
            value={
                "criteria_set": SET,
                "criterion_id": f"c{c}",
                "family": family,
                "mode": mode,
                "applicable": applicable,
                "passed": passed,
                "evidence_turns": [],
            },
            rationale="r",
            request_hash=None,
        )
    if not verdicts:  # an ungraded trajectory: in no UFS number
        return
    cost = 0.0
    for g in range(rng.randint(1, 3)):
        prompt, completion = rng.randint(500, 3000), rng.randint(5, 200)
        request_hash = f"{run_id}-{episode_id}-{g}"
        _row(
            writer,
            "generations",
            request_hash=request_hash,
            model_identity=f"id-{proxy}",
            prompt="",
            valid=True,
            prompt_tokens=prompt,
            completion_tokens=completion,
            latency_ms=100.0 * (g + 1),
        )
        _row(
            writer,
            "run_generations",
            run_id=run_id,
            episode_id=episode_id,
            seq=g,
            role="user",
            request_hash=request_hash,
            cached=False,
        )
        price_in, price_out = PRICES[proxy]
        cost += (prompt * price_in + completion * price_out) / 1e6
    agent_hash = f"{run_id}-{episode_id}-agent"  # the agent's generations are not the proxy's cost
    _row(
        writer,
        "generations",
        request_hash=agent_hash,
        model_identity="id-agent",
        prompt="",
        valid=True,
        prompt_tokens=10_000,
        completion_tokens=1000,
        latency_ms=5.0,
    )
    _row(
        writer,
        "run_generations",
        run_id=run_id,
        episode_id=episode_id,
        seq=99,
        role="agent",
        request_hash=agent_hash,
        cached=False,
    )
    built.records.append(
        EpisodeRecord(f"{run_id}/{episode_id}", domain, tuple(verdicts), proxy, reward, calls, questions)
    )
    built.costs.setdefault(proxy, []).append(cost)


def _run(writer: Rows, run_id: str, proxy: str) -> None:
    _row(
        writer,
        "runs",
        run_id=run_id,
        suite="tau2",
        config={},
        config_sha256="x",
        status="done",
        started_at=NOW,
    )
    for role, name in (("user", proxy), ("agent", AGENT)):
        _row(writer, "run_models", run_id=run_id, role=role, model_identity=f"id-{name}", model_name=name)
    price_in, price_out = PRICES.get(proxy, (0.0, 0.0))
    _row(
        writer,
        "models",
        model_identity=f"id-{proxy}",
        name=proxy,
        price_input_per_mtok=price_in,
        price_output_per_mtok=price_out,
    )


@pytest.fixture(scope="module")
def built_store() -> Iterator[tuple[duckdb.DuckDBPyConnection, Built]]:
    con = duckdb.connect(":memory:")
    migrate(con)
    load_views(con)
    rng = random.Random(5)
    writer = Rows()
    result = Built()
    _row(
        writer,
        "models",
        model_identity="id-agent",
        name=AGENT,
        price_input_per_mtok=5.0,
        price_output_per_mtok=5.0,
    )
    for proxy in PRICES:
        run_id = f"run-{proxy}"
        _run(writer, run_id, proxy)
        for domain in ("retail", "airline"):
            for k in range(30):
                _episode(writer, rng, run_id, proxy, domain, k, result)
    writer.insert(con)
    yield con, result
    con.close()


@pytest.fixture
def built(built_store: tuple[duckdb.DuckDBPyConnection, Built]) -> Built:
    return built_store[1]


@pytest.fixture
def filled(built_store: tuple[duckdb.DuckDBPyConnection, Built]) -> duckdb.DuckDBPyConnection:
    return built_store[0]


def _by_proxy(records: list[EpisodeRecord]) -> dict[str, list[EpisodeRecord]]:
    out: dict[str, list[EpisodeRecord]] = {}
    for r in records:
        out.setdefault(r.proxy, []).append(r)
    return out


def test_domain_ufs_and_mean_ufs_equal_python(filled: duckdb.DuckDBPyConnection, built: Built) -> None:
    for proxy, records in _by_proxy(built.records).items():
        python = domain_ufs(records)
        rows = filled.execute(
            "SELECT domain, episodes, passed, failed, unscorable, undetermined, ufs, mean_reward "
            "FROM ufs_domain WHERE proxy = ? AND criteria_set = ? AND judge_model = ?",
            [proxy, SET, JUDGE],
        ).fetchall()
        for domain, episodes, passed, failed, unscorable, undetermined, ufs, reward in rows:
            d = python[domain]
            assert (episodes, passed, failed, unscorable, undetermined) == (
                d.episodes,
                d.passed,
                d.failed,
                d.unscorable,
                d.undetermined,
            )
            assert ufs == pytest.approx(d.ufs)
            assert reward == pytest.approx(
                sum(r.reward or 0 for r in records if r.domain == domain) / d.episodes
            )
        assert {r[0] for r in rows} == set(python)
        mean, domains = filled.execute(
            "SELECT mean_ufs, domains FROM ufs_summary WHERE proxy = ?", [proxy]
        ).fetchone()
        assert mean == pytest.approx(mean_ufs(python)) and domains == 2


def test_episode_status_in_sql_equals_python(filled: duckdb.DuckDBPyConnection, built: Built) -> None:
    sql = dict(filled.execute("SELECT run_id || '/' || episode_id, status FROM ufs_episodes").fetchall())
    assert sql == {r.key: r.status for r in built.records}


def test_failures_success_violations_and_effects_equal_python(
    filled: duckdb.DuckDBPyConnection, built: Built
) -> None:
    for proxy, records in _by_proxy(built.records).items():
        counts = violation_counts(records)
        sql = {
            f: (n, e)
            for f, n, e in filled.execute(
                "SELECT family, failures, episodes FROM ufs_family_failures WHERE proxy = ?", [proxy]
            ).fetchall()
        }
        assert sql == {f: (counts.by_family[f], counts.episodes_by_family[f]) for f in FAMILIES}
        modes = {
            (f, m): n
            for f, m, n in filled.execute(
                "SELECT family, mode, sum(failures) FROM ufs_failures WHERE proxy = ? GROUP BY ALL", [proxy]
            ).fetchall()
        }
        assert modes == counts.by_mode
        share = success_violations(records)
        assert filled.execute(
            "SELECT successes, with_violation, share FROM ufs_success_violations "
            "WHERE proxy = ? AND domain = '*'",
            [proxy],
        ).fetchone() == (share.successes, share.with_violation, pytest.approx(share.share))
        for family in FAMILIES:
            delta = effort_delta(records, family)
            row = filled.execute(
                "SELECT n_with, n_without, delta_tool_calls, delta_questions FROM ufs_effort_deltas "
                "WHERE proxy = ? AND family = ?",
                [proxy, family],
            ).fetchone()
            assert row == (
                delta.n_with,
                delta.n_without,
                pytest.approx(delta.delta_tool_calls),
                pytest.approx(delta.delta_questions),
            )


def test_delta_pass_rate_cells_equal_python(filled: duckdb.DuckDBPyConnection, built: Built) -> None:
    for family in FAMILIES:
        cells, _, _ = delta_pass_rate(built.records, family)
        sql = filled.execute(
            "SELECT proxy, domain, n_with, n_without, delta FROM ufs_delta_pass "
            "WHERE family = ? AND eligible ORDER BY proxy, domain",
            [family],
        ).fetchall()
        assert sql == [(c.proxy, c.domain, c.n_with, c.n_without, pytest.approx(c.delta)) for c in cells]


def test_user_cost_tokens_and_frontier_equal_python(filled: duckdb.DuckDBPyConnection, built: Built) -> None:
    points = []
    for proxy, costs in built.costs.items():
        cost, mean = filled.execute(
            "SELECT cost_per_sim_usd, mean_ufs FROM ufs_summary WHERE proxy = ?", [proxy]
        ).fetchone()
        assert cost == pytest.approx(sum(costs) / len(costs))
        points.append(Point(proxy, cost, mean))
    python = {r.point.name: (sorted(r.dominated_by), r.rank) for r in pareto(points)}
    sql = {
        p: (sorted(by), rank)
        for p, by, rank in filled.execute(
            "SELECT proxy, dominated_by, frontier_rank FROM ufs_frontier"
        ).fetchall()
    }
    assert sql == python
    rows = store_frontier(filled)[(SET, JUDGE, AGENT)]
    assert {r.point.name: (sorted(r.dominated_by), r.rank) for r in rows} == python
    engine = filled.execute(
        "SELECT proxy, engine_s_per_sim, frontier_rank_engine FROM ufs_frontier"
    ).fetchall()
    assert all(seconds > 0 and (rank is None or rank >= 1) for _, seconds, rank in engine)


def test_episode_records_from_the_store_equal_the_built_ones(
    filled: duckdb.DuckDBPyConnection, built: Built
) -> None:
    records = episode_records(filled)[(SET, JUDGE, AGENT)]
    got = {r.key: (r.status, r.proxy, r.reward, r.agent_tool_calls, r.agent_questions) for r in records}
    assert got == {
        r.key: (r.status, r.proxy, r.reward, r.agent_tool_calls, r.agent_questions) for r in built.records
    }
    intervals = ufs_intervals(filled, replicates=200)
    table1 = ufs_tables(filled, replicates=200)[0]
    assert len(table1.rows) == 3
    for row in table1.rows:
        mean = intervals[row[:4]].mean
        assert mean.low is not None and mean.high is not None
        assert mean.low <= mean.estimate <= mean.high  # the interval brackets Mean UFS
        assert row[4] == f"{mean.estimate:.3f}" and row[5] == f"[{mean.low:.2f}, {mean.high:.2f}]"


# --- grading runs, duplicates and pre-checks -----------------------------------------------------------


def _tiny(store: duckdb.DuckDBPyConnection) -> Rows:
    writer = Rows()
    _run(writer, "traj", "proxy-a")
    _row(
        writer,
        "episodes",
        run_id="traj",
        episode_id="retail/0/trial-0",
        item_id="retail/0",
        task="retail",
        trial=0,
        status="done",
        termination="user_stop",
        reward=1.0,
        info={},
        n_turns=0,
        started_at=NOW,
    )
    return writer


def _verdict(
    writer: Rows,
    run_id: str,
    episode_id: str,
    cid: str,
    applicable: bool,
    passed: bool,
    family: str = "groundedness",
) -> None:
    _row(
        writer,
        "verdicts",
        run_id=run_id,
        episode_id=episode_id,
        name=f"ufs:{cid}",
        judge_role="judge",
        judge_model=JUDGE,
        label="x",
        valid=True,
        value={
            "criteria_set": SET,
            "criterion_id": cid,
            "family": family,
            "mode": "self_contradiction",
            "applicable": applicable,
            "passed": passed,
        },
    )


def test_a_grading_run_can_grade_another_runs_trajectory(store: duckdb.DuckDBPyConnection) -> None:
    writer = _tiny(store)
    _row(
        writer,
        "runs",
        run_id="grading",
        suite="userproxy",
        config={},
        config_sha256="y",
        status="done",
        started_at=NOW + dt.timedelta(hours=1),
    )
    _row(
        writer,
        "episodes",
        run_id="grading",
        episode_id="g-1",
        status="done",
        reward=None,
        info={"source_run_id": "traj", "source_episode_id": "retail/0/trial-0"},
    )
    _verdict(writer, "traj", "retail/0/trial-0", "c1", True, True)  # graded in the trajectory's own run
    _verdict(writer, "grading", "g-1", "c1", True, False)  # regraded later: this one counts
    _verdict(writer, "grading", "g-1", "c2", False, False)
    writer.insert(store)
    rows = store.execute(
        "SELECT run_id, episode_id, criterion_id, failed, grading_run_id FROM ufs_verdicts "
        "ORDER BY criterion_id"
    ).fetchall()
    assert rows == [
        ("traj", "retail/0/trial-0", "c1", True, "grading"),
        ("traj", "retail/0/trial-0", "c2", False, "grading"),
    ]
    assert store.execute("SELECT status, proxy FROM ufs_episodes").fetchall() == [("fail", "proxy-a")]


def test_infrastructure_errors_and_other_suites_are_not_trajectories(
    store: duckdb.DuckDBPyConnection,
) -> None:
    writer = _tiny(store)
    _row(
        writer,
        "episodes",
        run_id="traj",
        episode_id="retail/1/trial-0",
        item_id="retail/1",
        task="retail",
        trial=0,
        status="done",
        termination="infrastructure_error",
        reward=None,
        info={},
    )
    _row(
        writer,
        "runs",
        run_id="other",
        suite="uxbench",
        config={},
        config_sha256="z",
        status="done",
        started_at=NOW,
    )
    _row(writer, "episodes", run_id="other", episode_id="e", status="done", reward=1.0, info={})
    writer.insert(store)
    ids = store.execute("SELECT run_id, episode_id FROM ufs_trajectories").fetchall()
    assert ids == [("traj", "retail/0/trial-0")]


def test_precheck_agreement_compares_flags_with_the_judges_family(store: duckdb.DuckDBPyConnection) -> None:
    writer = _tiny(store)
    for k, (flagged, judge_failed) in enumerate([(True, True), (True, False), (False, True), (False, False)]):
        episode_id = f"retail/{k}/trial-0"
        if k:
            _row(
                writer,
                "episodes",
                run_id="traj",
                episode_id=episode_id,
                item_id=f"retail/{k}",
                task="retail",
                trial=0,
                status="done",
                termination="user_stop",
                reward=1.0,
                info={},
            )
        _verdict(writer, "traj", episode_id, "c1", True, not judge_failed, family="premature_disclosure")
        _row(
            writer,
            "verdicts",
            run_id="traj",
            episode_id=episode_id,
            name="precheck:opening_disclosure",
            judge_role="precheck",
            judge_model="uxlocal-precheck",
            label="flagged" if flagged else "clean",
            valid=True,
            value={"kind": "opening_disclosure", "family": "premature_disclosure", "turns": []},
        )
    writer.insert(store)
    row = store.execute(
        "SELECT episodes, flagged, judge_failed, flagged_and_failed, precheck_only, judge_only, agreement "
        "FROM ufs_precheck_agreement"
    ).fetchone()
    assert row == (4, 2, 2, 1, 1, 1, 0.5)


def test_judges_and_criteria_sets_never_mix(store: duckdb.DuckDBPyConnection) -> None:
    writer = _tiny(store)
    _verdict(writer, "traj", "retail/0/trial-0", "c1", True, True)
    _row(
        writer,
        "verdicts",
        run_id="traj",
        episode_id="retail/0/trial-0",
        name="ufs:c1",
        judge_role="judge",
        judge_model="other-judge",
        label="x",
        valid=True,
        value=json.loads(
            json.dumps(
                {
                    "criteria_set": SET,
                    "family": "groundedness",
                    "mode": "self_contradiction",
                    "applicable": True,
                    "passed": False,
                }
            )
        ),
    )
    writer.insert(store)
    rows = store.execute("SELECT judge_model, ufs FROM ufs_domain ORDER BY judge_model").fetchall()
    assert rows == [(JUDGE, 1.0), ("other-judge", 0.0)]


def test_user_only_tasks_view_keeps_tasks_whose_gold_is_all_the_users(
    store: duckdb.DuckDBPyConnection,
) -> None:
    writer = _tiny(store)  # retail/0: info without gold_requestors (an ingested run): not user-only
    for task, requestors, reward in (("001", ["user"], 1.0), ("002", ["user"], 0.0),
                                     ("010", ["assistant", "user"], 1.0)):
        _row(writer, "episodes", run_id="traj", episode_id=f"banking_knowledge/{task}/trial-0",
             item_id=f"banking_knowledge/{task}", task="banking_knowledge", trial=0, status="done",
             termination="user_stop", reward=reward, info={"gold_requestors": requestors}, n_turns=0,
             started_at=NOW)
        _verdict(writer, "traj", f"banking_knowledge/{task}/trial-0", "c1", True, task != "002")
    _row(writer, "tool_calls", run_id="traj", episode_id="banking_knowledge/001/trial-0", turn_idx=1,
         call_idx=0, requestor="user", name="apply_for_credit_card", ok=True)
    _verdict(writer, "traj", "retail/0/trial-0", "c1", True, True)
    writer.insert(store)
    flags = dict(store.execute("SELECT task_id, user_only_gold FROM ufs_trajectories").fetchall())
    assert flags == {"0": False, "001": True, "002": True, "010": False}
    rows = store.execute("SELECT domain, tasks, episodes, ufs, mean_reward, user_tool_calls "
                         "FROM ufs_user_only_tasks").fetchall()
    assert rows == [("banking_knowledge", "001, 002", 2, 0.5, 0.5, 0.5)]
