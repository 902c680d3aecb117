"""``uxlocal run userproxy`` end to end with fake engines: two proxies, scripted judge, hand-computed UFS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.config import RunConfig
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.errors import InputError
from uxlocal.runner import bind_roles, run_suite
from uxlocal.store.db import connect
from uxlocal.suites.base import get_suite
from uxlocal.suites.userproxy.suite import parse_proxies
from uxlocal.suites.userproxy.ufs.store import load_criteria

SPAN = "Reveal information little by little."
TASKS = "mock/create_task_1,mock/create_task_1_with_env_assertions,retail/0"
FAILING = {"ufs:m0-c1", "ufs:r0-c1"}
"""Criteria the judge fails when the trajectory holds P2's leak: mock task 0 and retail task 0."""


def _row(domain: str, task_id: str, cid: str, family: str, mode: str) -> dict[str, str]:
    return {"domain": domain, "task_id": task_id, "criterion_id": cid, "family": family, "mode": mode,
            "text": f"The user reveals details only when the agent asks for them ({cid}).",
            "grounding_span": SPAN, "applies_when": "always", "evidence_hint": "user turns"}


def _criteria_file(tmp_path: Path) -> Path:
    rows = []
    for domain, task_id, prefix in (
        ("mock", "create_task_1", "m0"),
        ("mock", "create_task_1_with_env_assertions", "m1"),
        ("retail", "0", "r0"),
    ):
        rows.append(_row(domain, task_id, f"{prefix}-c1", "premature_disclosure", "volunteers_unasked_info"))
        rows.append(_row(domain, task_id, f"{prefix}-c2", "premature_disclosure", "dumps_blueprint"))
    path = tmp_path / "criteria.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _say(text: str, prepared: Any) -> str:
    return json.dumps({"message": text}) if prepared.request.constraint is not None else text


def _agent(prepared: Any) -> str:
    return json.dumps({"message": "Done, anything else?"})


def _proxy(leak: bool) -> Any:
    def script(prepared: Any) -> str:
        chat = prepared.request.messages
        if len(chat) > 3:
            return _say("###STOP###", prepared)
        return _say("Hi, my id is LEAK-42, fix it." if leak else "Can you help me?", prepared)

    return script


def _judge(prepared: Any) -> str:
    tag = prepared.request.tag or ""
    if not tag.startswith("ufs:"):
        return json.dumps({"justification": "seen", "met": True})
    text = "\n".join(m["content"] for m in prepared.request.messages)
    if tag.endswith("-c2"):  # never comes up
        return json.dumps({"rationale": "n/a", "evidence_turns": [], "applicable": False, "passed": True})
    failed = tag in FAILING and "LEAK-42" in text
    return json.dumps({"rationale": "leak" if failed else "fine", "evidence_turns": [1],
                       "applicable": True, "passed": not failed})


def _pool() -> ModelPool:
    engines = {
        "agent": FakeEngine(_agent, identity="fake-agent"),
        "judge": FakeEngine(_judge, identity="fake-judge"),
        "user:P1": FakeEngine(_proxy(False), identity="fake-p1"),
        "user:P2": FakeEngine(_proxy(True), identity="fake-p2"),
    }
    pool = ModelPool.from_engines(engines)
    for slot in pool.slots.values():
        slot.model = slot.model.model_copy(update={"price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0})
    return pool


def _run(tmp_path: Path, data_dir: Path, **options: Any) -> Any:
    config = {"tau2_data": str(data_dir), "domains": "mock,retail", "tasks": TASKS, "proxies": "P1,P2",
              "max_steps": 12, **options}
    run = RunConfig(suite="userproxy", suite_config=config, db=str(tmp_path / "s.duckdb"), progress=False)
    return run_suite(run, pool=_pool())


def test_ufs_per_proxy_matches_a_hand_computation(tmp_path: Path, data_dir: Path) -> None:
    result = _run(tmp_path, data_dir, criteria_file=str(_criteria_file(tmp_path)))
    assert result.stats.episodes_done == 6 and result.stats.episodes_failed == 0
    con = connect(tmp_path / "s.duckdb")
    # P1 passes everything; P2 fails c1 on mock task 0 and retail task 0:
    # mock UFS P2 = (0 + 1) / 2, retail = 0, Mean UFS = (0.5 + 0) / 2.
    domain = {(p, d): u for p, d, u in con.execute("SELECT proxy, domain, ufs FROM ufs_domain").fetchall()}
    assert domain == {("P1", "mock"): 1.0, ("P1", "retail"): 1.0, ("P2", "mock"): 0.5, ("P2", "retail"): 0.0}
    mean = dict(con.execute("SELECT proxy, mean_ufs FROM ufs_summary").fetchall())
    assert mean == {"P1": 1.0, "P2": 0.25}
    # costs are attributed per proxy role, and the set was frozen from the file
    roles = {r[0] for r in con.execute("SELECT DISTINCT role FROM episode_cost WHERE run_id = ?",
                                       [result.run_id]).fetchall()}
    assert {"user:P1", "user:P2", "agent", "judge"} <= roles
    cost = dict(con.execute("SELECT proxy, cost_per_sim_usd FROM ufs_summary").fetchall())
    assert cost["P1"] > 0 and cost["P2"] > cost["P1"]  # P2's opening line is longer
    assert len(load_criteria(con, "file:criteria")) == 3
    failures = con.execute(
        "SELECT proxy, family, failures FROM ufs_family_failures WHERE failures > 0"
    ).fetchall()
    assert failures == [("P2", "premature_disclosure", 2)]
    prechecks = con.execute(
        "SELECT count(*) FROM ufs_prechecks WHERE run_id = ?", [result.run_id]
    ).fetchone()[0]
    assert prechecks > 0
    titles = [t.title for t in result.tables]
    by_proxy = "UFS by proxy (Mean UFS = unweighted mean over domains)"  # the report section's table
    assert by_proxy in titles and "Cost-fidelity frontier" in titles
    table1 = next(t for t in result.tables if t.title == by_proxy)
    assert {r[3]: r[4] for r in table1.rows} == {"P1": "1.000", "P2": "0.250"}
    con.close()


def test_judge_batches_one_request_per_criterion(tmp_path: Path, data_dir: Path) -> None:
    pool = _pool()
    config = {"tau2_data": str(data_dir), "domains": "mock", "tasks": "create_task_1", "proxies": "P1",
              "criteria_file": str(_criteria_file(tmp_path))}
    run_suite(
        RunConfig(suite="userproxy", suite_config=config, db=str(tmp_path / "s.duckdb"), progress=False),
        pool=pool,
    )
    judge = pool.slots["fake-judge"].engine_
    graded = [
        [p.request.tag for p in batch] for batch in judge.batches if batch[0].request.tag.startswith("ufs:")
    ]
    assert graded == [["ufs:m0-c1", "ufs:m0-c2"]]


def test_missing_criteria_is_a_clear_input_error(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(InputError, match=r"no criteria for 3 selected task.*uxlocal ufs criteria"):
        _run(tmp_path, data_dir, criteria_set="empty")
    with pytest.raises(InputError, match="--criteria-set NAME"):
        _run(tmp_path, data_dir)


def test_criteria_template_fills_only_the_tasks_the_set_lacks(tmp_path: Path, data_dir: Path) -> None:
    from uxlocal.suites.userproxy.ufs.template_writer import TEMPLATE_VERSION

    file_only = {"criteria_file": str(_criteria_file(tmp_path)), "tasks": "mock/create_task_1"}
    _run(tmp_path, data_dir, **file_only)  # freezes the file's three tasks into set file:criteria
    result = _run(tmp_path, data_dir, criteria_set="file:criteria", criteria_template=True,
                  tasks="mock/create_task_1,retail/1")
    assert result.stats.episodes_done == 4 and result.stats.episodes_failed == 0
    con = connect(tmp_path / "s.duckdb")
    stored = load_criteria(con, "file:criteria")
    assert stored[("mock", "create_task_1")].provenance.source == "file"  # kept as it was
    filled = stored[("retail", "1")]
    assert filled.provenance.source == "template" and TEMPLATE_VERSION in (filled.provenance.note or "")
    assert len(filled.graded()) >= 6
    graded = {
        r[0]
        for r in con.execute(
            "SELECT DISTINCT name FROM verdicts WHERE run_id = ? AND name LIKE 'ufs:%'", [result.run_id]
        ).fetchall()
    }
    assert {"ufs:t1", "ufs:m0-c1"} <= graded
    con.close()
    default = get_suite("userproxy").config_cls(proxies="P1", criteria_template=True)
    assert default.set_name() == "template"


def test_the_demo_compares_two_temperatures_on_template_criteria(data_dir: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UXLOCAL_TAU2_DATA", str(data_dir))
    spec = get_suite("userproxy").demo()
    assert spec is not None and spec.unavailable is None and spec.limit == 2
    assert spec.config["criteria_template"] and spec.config["domains"] == "mock"
    proxies = [p.name for p in parse_proxies(spec.config["proxies"])]
    assert len(proxies) == 2 and {f"user:{p}" for p in proxies} <= set(spec.roles)


def test_proxies_become_user_roles(tmp_path: Path) -> None:
    suite = get_suite("userproxy")
    specs = bind_roles(suite, {"proxies": "embedded@temp=0,embedded@temp=0.7,/models/x"}, {"agent": "a"})
    assert specs == {"agent": "a", "user:embedded@temp=0": "embedded", "user:embedded@temp=0.7": "embedded",
                     "user:/models/x": "/models/x"}
    assert [p.temperature for p in parse_proxies("a@temp=0.5,b")] == [0.5, None]
    for bad in ("", "a@temp=hot", "a,a"):
        with pytest.raises(InputError):
            parse_proxies(bad)


def test_cli_lists_the_suite_options() -> None:
    result = CliRunner().invoke(cli, ["run", "userproxy", "--help"])
    assert result.exit_code == 0
    for option in ("--proxies", "--domains", "--criteria-set", "--criteria-file"):
        assert option in result.output


# --- uxlocal ufs criteria -----------------------------------------------------------------------------

MODES = (("premature_disclosure", "volunteers_unasked_info"), ("premature_disclosure", "dumps_blueprint"),
         ("premature_disclosure", "preempts_diagnosis"), ("groundedness", "unsupported_state_claim"))


def _writer(prepared: Any) -> str:
    return json.dumps({"criteria": [
        {"criterion_id": f"c{k}", "family": family, "mode": mode, "grounding_span": SPAN,
         "text": f"The user keeps to its scenario, rule {k}: no {mode.replace('_', ' ')}.",
         "applies_when": "always", "evidence_hint": "user turns"}
        for k, (family, mode) in enumerate(MODES, start=1)]})


def _verifier(prepared: Any) -> str:
    from uxlocal.suites.userproxy.ufs.criteria import VERIFIER_CHECKS

    ids = prepared.request.constraint.schema["properties"]["reviews"]["items"]["properties"]["criterion_id"][
        "enum"
    ]
    return json.dumps(
        {
            "reviews": [
                {"criterion_id": cid, "note": "", **{c.name: True for c in VERIFIER_CHECKS}} for cid in ids
            ]
        }
    )


def test_criteria_command_freezes_a_set_that_a_userproxy_run_grades_against(
    tmp_path: Path, data_dir: Path
) -> None:
    from uxlocal.suites.userproxy.criteria_run import SUITE_NAME, CriteriaSuite

    db = tmp_path / "s.duckdb"
    pool = ModelPool.from_engines({"writer": FakeEngine(_writer, identity="fake-writer"),
                                   "verifier": FakeEngine(_verifier, identity="fake-verifier")})
    run = RunConfig(
        suite=SUITE_NAME,
        suite_config={"domain": "mock", "criteria_set": "v1", "tau2_data": str(data_dir)},
        limit=2,
        db=str(db),
        progress=False,
    )
    result = run_suite(run, pool=pool, suite=CriteriaSuite())
    assert result.stats.episodes_done == 2
    assert any("'v1': 2 tasks written" in note for note in result.notes)
    con = connect(db)
    stored = load_criteria(con, "v1")
    assert sorted(stored) == [("mock", "create_task_1"), ("mock", "create_task_1_with_env_assertions")]
    task = stored[("mock", "create_task_1")]
    assert [c.criterion_id for c in task.graded()] == ["c1", "c2", "c3", "c4"]
    assert task.provenance.source == "writer" and task.provenance.writer_request_hash
    con.close()
    again = run_suite(run, pool=pool, suite=CriteriaSuite())  # resumes: nothing new, the set unchanged
    assert again.resumed and any("2 already identical" in note for note in again.notes)

    graded = _run(tmp_path, data_dir, domains="mock", tasks="create_task_1,create_task_1_with_env_assertions",
                  criteria_set="v1")
    assert graded.stats.episodes_done == 4 and graded.stats.episodes_failed == 0
    con = connect(db)
    verdicts = con.execute("SELECT count(*) FROM ufs_verdicts WHERE run_id = ? AND criteria_set = 'v1'",
                           [graded.run_id]).fetchone()[0]
    assert verdicts == 4 * 4  # 4 episodes x 4 criteria
    con.close()


def test_criteria_command_needs_writer_and_verifier(tmp_path: Path, data_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["ufs", "criteria", "--domain", "mock", "--tau2-data", str(data_dir),
                                      "--db", str(tmp_path / "s.duckdb")])
    assert result.exit_code == 2 and "writer, verifier" in result.output


def test_a_sampled_agent_gets_the_same_seed_for_every_proxy(tmp_path: Path, data_dir: Path) -> None:
    pool = _pool()
    config = {"tau2_data": str(data_dir), "domains": "mock", "tasks": "create_task_1,create_task_1_nl_eval",
              "proxies": "P1,P2", "criteria_file": str(_criteria_file(tmp_path)), "agent_temperature": 0.7}
    criteria = tmp_path / "criteria.jsonl"
    criteria.write_text(
        criteria.read_text()
        + json.dumps(
            _row("mock", "create_task_1_nl_eval", "n-c1", "premature_disclosure", "volunteers_unasked_info")
        )
        + "\n"
    )
    run_suite(
        RunConfig(suite="userproxy", suite_config=config, db=str(tmp_path / "s.duckdb"), progress=False),
        pool=pool,
    )
    seeds = {prepared.seed for prepared in pool.slots["fake-agent"].engine_.requests}
    assert len(seeds) == 2 and None not in seeds  # one seed per (task, trial), shared by P1 and P2


def test_telecom_proxies_are_graded_on_tool_criteria_and_probed_for_missed_gold_writes(
    tmp_path: Path, data_dir: Path
) -> None:
    """Issue 15: telecom runs under userproxy; template criteria grade tool use; the probe flags idlers."""
    task = "[mobile_data_issue]airplane_mode_on|data_mode_off[PERSONA:None]"
    result = _run(tmp_path, data_dir, domains="telecom", tasks=task, criteria_template=True)
    assert result.stats.episodes_done == 2 and result.stats.episodes_failed == 0
    con = connect(tmp_path / "s.duckdb")
    stored = load_criteria(con, "template")[("telecom", task)]
    modes = {c.mode for c in stored.graded()}
    assert {"fabricated_tool_result", "skips_requested_action", "preempts_diagnosis"} <= modes
    graded = con.execute("SELECT count(*) FROM verdicts WHERE run_id = ? AND name LIKE 'ufs:%'",
                         [result.run_id]).fetchone()[0]
    assert graded == 2 * len(stored.graded())
    probe = con.execute(
        "SELECT flagged, count(*) FROM ufs_prechecks WHERE run_id = ? AND kind = 'gold_user_actions' "
        "GROUP BY ALL",
        [result.run_id],
    ).fetchall()
    assert probe == [(True, 2)]  # neither scripted proxy touched its phone
    con.close()


def test_coverage_of_scenario_fields_is_stored_per_task_and_reported(tmp_path: Path, data_dir: Path) -> None:
    """Issue 42 part 4: mock task 0 is grounded in 1 of its 2 fields, retail task 0 in 1 of its 4."""
    spans = (("mock", "create_task_1", "m0-c1", "Create a new task called 'Important Meeting' for user_1."),
             ("mock", "create_task_1", "m0-c2", SPAN),  # the contract: covers no scenario field
             ("retail", "0", "r0-c1", "You are Yusuf Rossi in zip code 19122."),
             ("retail", "0", "r0-c2", "keyboard"))  # too short to ground anything
    mode = ("premature_disclosure", "volunteers_unasked_info")
    rows = [{**_row(domain, task_id, cid, *mode), "grounding_span": span}
            for domain, task_id, cid, span in spans]
    path = tmp_path / "criteria.jsonl"
    config = {"tau2_data": str(data_dir), "domains": "mock,retail", "tasks": "mock/create_task_1,retail/0",
              "proxies": "P1", "criteria_file": str(path)}
    run = RunConfig(suite="userproxy", suite_config=config, db=str(tmp_path / "s.duckdb"), progress=False)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match="shorter than 12 characters"):  # a file is screened strictly
        run_suite(run, pool=_pool())
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    result = run_suite(run, pool=_pool())
    assert any("criteria coverage: 2/6 scenario fields of 2 task(s)" in note for note in result.notes)
    con = connect(tmp_path / "s.duckdb")
    stored = con.execute("SELECT item_id, fields, covered, uncovered FROM ufs_coverage WHERE run_id = ?",
                         [result.run_id]).fetchall()
    assert stored == [("mock/create_task_1", 2, 1, "persona"),
                      ("retail/0", 4, 1, "reason_for_call, unknown_info, task_instructions")]
    con.close()
    table = next(t for t in result.tables if t.title == "Criteria coverage of scenario fields")
    assert [list(r[:4]) for r in table.rows] == [["mock", 1, 2, 1], ["retail", 1, 4, 1]]
