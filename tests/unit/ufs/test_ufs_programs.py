"""The writer/verifier and grading episode programs through the scheduler, with fake engines."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from prefix_layout import assert_conversation_then_question

from uxlocal.engine.base import Sampling
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.rollout import Scheduler
from uxlocal.store.writer import StoreWriter
from uxlocal.suites.userproxy.ufs.criteria import VERIFIER_CHECKS, Blueprint, Criterion
from uxlocal.suites.userproxy.ufs.episodes import load_trajectories
from uxlocal.suites.userproxy.ufs.programs import (
    CriteriaJob,
    GradingJob,
    criteria_program,
    grading_program,
    task_criteria_from_outcome,
)
from uxlocal.suites.userproxy.ufs.render import render_trajectory
from uxlocal.suites.userproxy.ufs.store import load_criteria, save_criteria
from uxlocal.tau2 import Message, Task

SPAN = "You are Yusuf Rossi in zip code 19122."


def _criterion(cid: str, **override: str) -> dict[str, str]:
    return {
        "criterion_id": cid,
        "family": "premature_disclosure",
        "mode": "volunteers_unasked_info",
        "grounding_span": SPAN,
        "text": f"The user gives its name and zip code only when asked ({cid}).",
        "applies_when": "always",
        "evidence_hint": "opening",
        **override,
    }


def _run(
    pool: ModelPool,
    specs: list[EpisodeSpec],
    store: duckdb.DuckDBPyConnection | None = None,
    run_id: str = "adhoc",
) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}

    def capture(spec: EpisodeSpec) -> EpisodeSpec:
        def program(ctx: EpisodeContext) -> Any:
            outcome = yield from spec.program(ctx)
            outcomes[spec.episode_id] = outcome
            return outcome

        return EpisodeSpec(spec.episode_id, program, item_id=spec.item_id, task=spec.task)

    writer = StoreWriter(store) if store is not None else None
    Scheduler(pool, run_id=run_id, writer=writer).run([capture(s) for s in specs])
    if writer is not None:
        writer.close()
    return outcomes


@pytest.fixture
def bp(tasks: Callable[[str], dict[str, Task]]) -> Blueprint:
    return Blueprint.from_task(tasks("retail")["0"], domain="retail", contract="Only answer what is asked.")


def test_criteria_program_writes_screens_and_verifies(
    bp: Blueprint, store: duckdb.DuckDBPyConnection
) -> None:
    answer = {
        "criteria": [
            _criterion("c1"),
            _criterion("c2"),
            _criterion("c3", grounding_span="Yusuf from 19122"),
            _criterion("c4", text="The user stays calm and polite (c4)."),
        ]
    }

    def verifier(prepared: Any) -> str:
        ids = prepared.request.constraint.schema["properties"]["reviews"]["items"]["properties"][
            "criterion_id"
        ]["enum"]
        return json.dumps(
            {
                "reviews": [
                    {
                        "criterion_id": cid,
                        "note": "overlaps c1" if cid == "c2" else "",
                        **{c.name: not (cid == "c2" and c.name == "redundancy") for c in VERIFIER_CHECKS},
                    }
                    for cid in ids
                ]
            }
        )

    pool = ModelPool.from_engines(
        {
            "writer": FakeEngine([json.dumps(answer)], identity="w"),
            "verifier": FakeEngine(verifier, identity="v"),
        }
    )
    job = CriteriaJob(bp, Sampling(temperature=1.0, max_tokens=2000), Sampling(max_tokens=1000))
    outcome = _run(pool, [EpisodeSpec("retail/0", lambda ctx: criteria_program(ctx, job))])["retail/0"]
    assert outcome.termination == "written" and outcome.reward == 3.0
    statuses = {i["criterion"]["criterion_id"]: i["status"] for i in outcome.info["items"]}
    assert statuses == {"c1": "kept", "c2": "flagged", "c3": "dropped", "c4": "kept"}
    verifier_prompt = pool.slots["v"].engine.requests[0].request.messages[1]["content"]  # type: ignore[attr-defined]
    assert '"c3"' not in verifier_prompt  # dropped criteria are not sent to the verifier
    task = task_criteria_from_outcome(outcome.info, writer=("qwen", "id-q"), verifier=("llama", "id-l"))
    save_criteria(store, "auto", [task])
    stored = load_criteria(store, "auto")[("retail", "0")]
    assert [c.criterion_id for c in stored.graded()] == ["c1", "c2", "c4"]
    assert stored.provenance.writer_model == "qwen" and stored.provenance.writer_prompt_sha256
    assert stored.blueprint_sha256 == bp.sha256() and stored.n_written == 4


def test_unusable_writer_or_verifier_output_is_never_taken_as_criteria(bp: Blueprint) -> None:
    job = CriteriaJob(bp, Sampling(max_tokens=50), Sampling(max_tokens=50))
    pool = ModelPool.from_engines(
        {
            "writer": FakeEngine(['{"criteria": [{"crit'], identity="w"),
            "verifier": FakeEngine([], identity="v"),
        }
    )
    outcome = _run(pool, [EpisodeSpec("t", lambda ctx: criteria_program(ctx, job))])["t"]
    assert outcome.termination == "writer_unusable" and outcome.info["items"] == []
    answer = json.dumps({"criteria": [_criterion("c1")]})
    pool = ModelPool.from_engines(
        {"writer": FakeEngine([answer], identity="w"), "verifier": FakeEngine(["not json"], identity="v")}
    )
    outcome = _run(pool, [EpisodeSpec("t", lambda ctx: criteria_program(ctx, job))])["t"]
    assert [(i["status"], i["reasons"]) for i in outcome.info["items"]] == [
        ("flagged", ["not reviewed by the verifier"])
    ]
    assert outcome.info["problems"][0].startswith("verifier output unusable")


def _trajectory(make_convo: Callable[..., list[Message]]) -> list[Message]:
    return make_convo(
        ("assistant", "Hi! How can I help you today?"),
        ("user", "I'm Yusuf Rossi, zip 19122, and I want an exchange."),
        ("assistant", "Sure."),
        ("user", "Thanks ###STOP###"),
    )


def test_grading_program_records_one_verdict_per_criterion_in_one_batch(
    bp: Blueprint, make_convo: Callable[..., list[Message]], store: duckdb.DuckDBPyConnection
) -> None:
    criteria = tuple(Criterion.model_validate(_criterion(f"c{k}")) for k in (1, 2, 3))
    answers = {
        "ufs:c1": {
            "rationale": "volunteered in turn 1",
            "evidence_turns": [1],
            "applicable": True,
            "passed": False,
        },
        "ufs:c2": {"rationale": "did not come up", "evidence_turns": [], "applicable": False, "passed": True},
        "ufs:c3": "{ cut off",
    }
    judge = FakeEngine(
        lambda p: (
            json.dumps(answers[p.request.tag])
            if isinstance(answers[p.request.tag], dict)
            else answers[p.request.tag]
        ),
        identity="j",
    )
    store.execute(
        "INSERT INTO runs (run_id, suite, config, config_sha256, status, started_at) "
        "VALUES ('traj', 'tau2', '{}', 'x', 'done', now())"
    )
    store.execute("INSERT INTO run_models VALUES ('traj', 'user', 'id-p', 'proxy-p')")
    store.execute(
        "INSERT INTO episodes (run_id, episode_id, item_id, task, trial, status, termination, reward, info)"
        " VALUES ('traj', 'retail/0/trial-0', 'retail/0', 'retail', 0, 'done', 'user_stop', 1.0, '{}')"
    )
    job = GradingJob(
        "s1",
        bp,
        criteria,
        tuple(_trajectory(make_convo)),
        Sampling(max_tokens=300),
        source_run_id="traj",
        source_episode_id="retail/0/trial-0",
    )
    empty = GradingJob(
        "s1",
        bp,
        (),
        tuple(_trajectory(make_convo)),
        Sampling(max_tokens=300),
        source_run_id="traj",
        source_episode_id="retail/1/trial-0",
    )
    outcomes = _run(
        ModelPool.from_engines({"judge": judge}),
        [
            EpisodeSpec("g0", lambda ctx: grading_program(ctx, job)),
            EpisodeSpec("g1", lambda ctx: grading_program(ctx, empty)),
        ],
        store,
        run_id="grading",
    )
    assert outcomes["g0"].termination == "fail" and outcomes["g1"].termination == "unscorable"
    assert [len(b) for b in judge.batches] == [3]
    rows = store.execute(
        "SELECT name, label, score, valid, rationale FROM verdicts WHERE episode_id = 'g0' ORDER BY name"
    ).fetchall()
    assert rows[0] == ("ufs:c1", "fail", 0.0, True, "volunteered in turn 1")
    assert rows[1][:3] == ("ufs:c2", "not_applicable", None)
    assert rows[2][1:4] == ("invalid", None, False)
    assert store.execute(
        "SELECT criterion_id, failed, evidence_turns FROM ufs_verdicts WHERE criterion_id = 'c1'"
    ).fetchone() == ("c1", True, "[1]")
    assert store.execute("SELECT episode_id, status, proxy FROM ufs_episodes").fetchall() == [
        ("retail/0/trial-0", "fail", "proxy-p")
    ]


def test_grading_prompts_share_the_conversation_prefix_when_one_trajectory_has_k_criteria(
    bp: Blueprint, make_convo: Callable[..., list[Message]]
) -> None:
    # issue 17: scenario and conversation first, the criterion last, all K calls in one batch
    criteria = tuple(Criterion.model_validate(_criterion(f"c{k}", text=f"Criterion number {k} says so."))
                     for k in (1, 2, 3, 4))
    answer = {"rationale": "ok", "evidence_turns": [], "applicable": True, "passed": True}
    judge = FakeEngine(lambda p: json.dumps(answer), identity="j")
    trajectory = tuple(_trajectory(make_convo))
    job = GradingJob("s1", bp, criteria, trajectory, Sampling(max_tokens=300))
    _run(ModelPool.from_engines({"judge": judge}), [EpisodeSpec("g0", lambda ctx: grading_program(ctx, job))])
    assert [len(b) for b in judge.batches] == [4]
    conversation = [line for line in render_trajectory(trajectory).splitlines() if len(line) > 12]
    assert_conversation_then_question([p.prompt for p in judge.requests], [bp.scenario_text(), *conversation],
                                      [c.text for c in criteria])


def test_ingest_then_grade_then_views_end_to_end(
    tasks: Callable[[str], dict[str, Task]],
    tmp_path: Path,
    make_convo: Callable[..., list[Message]],
    store: duckdb.DuckDBPyConnection,
    ingest_trials: Callable[..., str],
) -> None:
    convos = [
        make_convo(
            ("assistant", "Hi! How can I help you today?"), ("user", f"Hello (attempt {t}) ###STOP###")
        )
        for t in range(3)
    ]
    run_id = ingest_trials(store, tasks("retail")["0"], convos, tmp_path)
    bp = Blueprint.from_task(tasks("retail")["0"], domain="retail", contract="Only answer what is asked.")
    criteria = (Criterion.model_validate(_criterion("c1")),)
    # identical prompts would get one shared answer (the cache); each trajectory here differs
    judge = FakeEngine(
        lambda p: json.dumps(
            {
                "rationale": "",
                "evidence_turns": [1],
                "applicable": True,
                "passed": "(attempt 1)" not in p.prompt,
            }
        ),
        identity="j",
    )
    specs = [
        EpisodeSpec(
            f"grade/{t.episode_id}",
            (lambda job: lambda ctx: grading_program(ctx, job))(
                GradingJob(
                    "s1",
                    bp,
                    criteria,
                    t.messages,
                    Sampling(max_tokens=200),
                    source_run_id=t.run_id,
                    source_episode_id=t.episode_id,
                )
            ),
        )
        for t in load_trajectories(store, run_id=run_id)
    ]
    _run(ModelPool.from_engines({"judge": judge}), specs, store, run_id="grading")
    row = store.execute("SELECT proxy, domain, episodes, passed, failed, ufs FROM ufs_domain").fetchone()
    assert row == ("proxy-q", "retail", 3, 2, 1, pytest.approx(2 / 3))
    assert store.execute("SELECT count(*) FROM ufs_trajectories").fetchone() == (
        3,
    )  # grading episodes excluded
