"""Rule-based baseline criteria (``ufs/template_writer.py``) and writer sample trajectories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.config import RunConfig
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.errors import InputError
from uxlocal.suites.userproxy.criteria_run import CriteriaConfig, CriteriaSuite, load_samples
from uxlocal.suites.userproxy.ufs.criteria import MAX_CRITERIA, Blueprint, screen
from uxlocal.suites.userproxy.ufs.sets import domain_blueprints
from uxlocal.suites.userproxy.ufs.store import load_criteria
from uxlocal.suites.userproxy.ufs.template_writer import (
    freeze_template_set,
    sentences,
    template_criteria,
    template_task_criteria,
)
from uxlocal.tau2 import Message, Task
from uxlocal.tau2.layout import SAMPLE_DATA

BP = Blueprint(
    domain="retail",
    task_id="x",
    sections=(
        ("reason_for_call", "You want to return the lamp from order #W1. If the agent offers store "
                            "credit, you refuse it. Otherwise you accept a refund to the card."),
        ("known_info", "You are Ann Lee in zip code 10001."),
        ("unknown_info", "You do not remember your email."),
        ("task_instructions", "You are terse."),
    ),
)


def test_rules_give_each_family_in_priority_order_grounded_in_one_sentence() -> None:
    got = [(c.criterion_id, c.family, c.mode, c.grounding_span) for c in template_criteria(BP)]
    assert got == [
        ("t1", "premature_disclosure", "volunteers_unasked_info", "You are Ann Lee in zip code 10001."),
        ("t2", "missed_information", "withholds_requested_info", "You are Ann Lee in zip code 10001."),
        ("t3", "groundedness", "invents_unknown_info", "You do not remember your email."),
        ("t4", "goal_deviation", "abandons_goal", "You want to return the lamp from order #W1."),
        ("t5", "premature_disclosure", "dumps_blueprint", "You want to return the lamp from order #W1."),
        ("t6", "goal_deviation", "premature_stop", "You want to return the lamp from order #W1."),
        (
            "t7",
            "goal_deviation",
            "accepts_unacceptable_outcome",
            "If the agent offers store credit, you refuse it.",
        ),
        (
            "t8",
            "goal_deviation",
            "accepts_unacceptable_outcome",
            "Otherwise you accept a refund to the card.",
        ),
    ]  # the persona rule would be ninth: the list stops at MAX_CRITERIA
    items = screen(template_criteria(BP), BP)
    assert [i.status for i in items] == ["kept"] * MAX_CRITERIA
    assert template_criteria(BP)[1].is_conditional() and not template_criteria(BP)[0].is_conditional()


def test_a_thin_scenario_gives_fewer_criteria_and_short_sentences_ground_nothing() -> None:
    thin = Blueprint(
        domain="mock", task_id="t", sections=(("instructions", "Ok. Create a task named 'Plan'."),)
    )
    assert sentences("Ok. Create a task named 'Plan'.") == ["Create a task named 'Plan'."]
    assert [c.mode for c in template_criteria(thin)] == ["abandons_goal", "dumps_blueprint", "premature_stop"]


def test_long_sentences_are_cut_at_a_word_and_stay_substrings() -> None:
    long = "You want " + " ".join(f"item{i}" for i in range(80)) + "."
    (cut,) = sentences(long)
    assert len(cut) <= 300 and long.startswith(cut) and not cut.endswith(" ")


@pytest.mark.parametrize(
    "domain", ["homenet", "mock", "retail", "airline"]
)  # homenet: our sample, every clone
def test_every_real_task_gets_grounded_criteria_none_dropped(
    request: pytest.FixtureRequest, domain: str
) -> None:
    root = SAMPLE_DATA if domain == "homenet" else request.getfixturevalue("data_dir")
    blueprints = domain_blueprints(root, domain)
    counts = []
    for bp in blueprints.values():
        task = template_task_criteria(bp, contract="ours")
        assert all(i.status == "kept" and i.grounded_in for i in task.items), task.task_id
        assert task.provenance.source == "template"
        counts.append(len(task.graded()))
    assert max(counts) <= MAX_CRITERIA
    # retail and airline scenarios are structured (known/unknown info, reason): at least 6 each
    assert min(counts) >= (3 if domain == "mock" else 6)


def test_freeze_template_set_is_frozen_and_idempotent(
    data_dir: Path, store: duckdb.DuckDBPyConnection
) -> None:
    written, unchanged, summary = freeze_template_set(
        store, data_dir, "airline", criteria_set="rules", limit=3
    )
    assert (written, unchanged, summary["tasks"]) == (3, 0, 3)
    assert freeze_template_set(store, data_dir, "airline", criteria_set="rules", limit=3)[:2] == (0, 3)
    stored = load_criteria(store, "rules")
    assert len(stored) == 3 and all(t.provenance.source == "template" for t in stored.values())
    assert sum(len(t.graded()) for t in stored.values()) == summary["criteria"]
    with pytest.raises(InputError, match="task ids not in the task file: nope"):
        freeze_template_set(store, data_dir, "airline", criteria_set="rules", task_ids=["nope"])
    with pytest.raises(InputError, match="no airline tasks selected"):
        freeze_template_set(store, data_dir, "airline", criteria_set="rules", limit=0)


def test_cli_template_criteria_for_the_sample_domain_need_no_tau2_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from uxlocal.tau2 import data as tau2_data

    monkeypatch.delenv(tau2_data.ENV_VAR, raising=False)
    monkeypatch.setattr(tau2_data, "_CHECKOUT_DATA", tmp_path / "nothing")  # as in a fresh clone
    args = ["ufs", "criteria", "--domain", "homenet", "--template", "--set", "rules",
            "--db", str(tmp_path / "s.duckdb")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "9 homenet tasks" in result.output and "9 tasks written" in result.output


def test_cli_template_needs_no_model_and_refuses_one(tmp_path: Path, data_dir: Path) -> None:
    db = tmp_path / "s.duckdb"
    base = [
        "ufs",
        "criteria",
        "--domain",
        "mock",
        "--template",
        "--set",
        "rules",
        "--tau2-data",
        str(data_dir),
        "--db",
        str(db),
    ]
    result = CliRunner().invoke(cli, base)
    assert result.exit_code == 0, result.output
    assert "10 mock tasks" in result.output and "10 tasks written" in result.output
    # mock users have tools, so the tool-use rules lift the once-thin task (issue 15) to 4 or more
    assert "69 template criteria" in result.output and "under 4 criteria" not in result.output
    refused = CliRunner().invoke(cli, [*base, "--model", "writer=embedded"])
    assert refused.exit_code != 0 and "without models" in refused.output


def test_writer_sees_the_sample_trajectory_of_its_task_only(
    tasks: Callable[[str], dict[str, Task]], make_convo: Callable[..., list[Message]],
    store: duckdb.DuckDBPyConnection, data_dir: Path, tmp_path: Path, ingest_trials: Callable[..., str],
) -> None:
    convo = make_convo(
        ("assistant", "Hi! How can I help?"), ("user", "I want to exchange a keyboard. ###STOP###")
    )
    run_id = ingest_trials(store, tasks("retail")["0"], [convo], tmp_path)
    samples = load_samples(store, run_id, "retail")
    assert list(samples) == [("retail", "0")] and samples[("retail", "0")][1].content.startswith("I want")
    with pytest.raises(InputError, match="no finished airline trajectories"):
        load_samples(store, run_id, "airline")

    answer = {"criteria": []}
    writer = FakeEngine(lambda prepared: json.dumps(answer), identity="w")
    pool = ModelPool.from_engines({"writer": writer, "verifier": FakeEngine(lambda p: "{}", identity="v")})
    config = CriteriaConfig(domain="retail", tasks="0,1", tau2_data=data_dir, sample_run=run_id)
    plan = CriteriaSuite(samples).plan(config, RunConfig(suite="ufs-criteria", db=str(tmp_path / "x.duckdb")))
    assert f"sample trajectories from run {run_id}: 1/2 tasks" in plan.notes
    from uxlocal.rollout import Scheduler

    Scheduler(pool, run_id="adhoc").run(plan.episodes)
    prompts = {p.request.messages[1]["content"] for p in writer.requests}  # type: ignore[attr-defined]
    with_sample = [p for p in prompts if "<sample_conversation>" in p]
    assert len(prompts) == 2 and len(with_sample) == 1 and "exchange a keyboard" in with_sample[0]
    with pytest.raises(InputError, match="no trajectories were loaded"):
        CriteriaSuite().plan(config, RunConfig(suite="ufs-criteria", db=str(tmp_path / "x.duckdb")))


@pytest.mark.parametrize("contract", ["ours", "tau2"])  # the tool sentence is quoted from either contract
def test_template_criteria_cover_the_telecom_user_tool_surface_on_all_114_tasks(
    data_dir: Path, contract: str
) -> None:
    blueprints = domain_blueprints(data_dir, "telecom", contract=contract)
    assert len(blueprints) == 114
    tool_modes = {"fabricated_tool_result", "skips_requested_action", "preempts_diagnosis"}
    for blueprint in blueprints.values():
        graded = template_task_criteria(blueprint, contract=contract).graded()
        modes = [criterion.mode for criterion in graded]
        assert len(graded) == 8 and tool_modes <= set(modes), (blueprint.task_id, modes)
        assert "dumps_blueprint" in modes


def _tool(name: str) -> dict[str, object]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }


BANKING_BP = Blueprint(
    domain="banking_knowledge",
    task_id="b",
    sections=(("instructions", "You are Sam Roe and you earn $85,000 a year. You want a card with no annual "
                               "fee. Once you know the options, apply for the card on your own. Ask for a "
                               "human agent twice if the agent refuses to help."),),
    contract="You can use the tools you have to act on your account. Only use a tool the agent gives you "
             "when it asks you to.",
    user_tools=(_tool("apply_for_credit_card"), _tool("request_human_agent_transfer")),
)


def test_account_tools_get_account_rules_not_device_rules() -> None:
    """Banking user tools: exact figures, humans only as instructed, no claimed-but-uncalled actions."""
    criteria = template_criteria(BANKING_BP)
    modes = [c.mode for c in criteria]
    assert {"unsupported_state_claim", "ignores_conditional_instruction", "unexecuted_action_claim"} <= set(
        modes
    )
    assert not {"fabricated_tool_result", "preempts_diagnosis"} & set(modes)  # the device rules stay out
    figures = next(c for c in criteria if c.mode == "unsupported_state_claim")
    assert figures.grounding_span == "You are Sam Roe and you earn $85,000 a year."
    human = next(c for c in criteria if c.mode == "ignores_conditional_instruction")
    assert "human agent twice" in human.grounding_span
    assert len(screen(criteria, BANKING_BP)) == len(criteria)  # grounded by construction
    assert len(criteria) <= MAX_CRITERIA


def test_device_tools_keep_the_device_rules() -> None:
    device = Blueprint(domain="homenet", task_id="d", sections=BANKING_BP.sections,
                       contract="Ground your responses in what your tools return. Only when the agent asks "
                                "you to, use a tool. Follow their guidance one at a time.",
                       user_tools=(_tool("check_router_lights"),))
    modes = {c.mode for c in template_criteria(device)}
    assert {"fabricated_tool_result", "preempts_diagnosis"} <= modes
    assert "unexecuted_action_claim" not in modes
