"""The two UFS model steps as scheduler episode programs: write+verify criteria, grade a trajectory.

Layer contract: pure episode programs (``uxlocal.episode``). They yield ``GenRequest``s, record
verdicts on their ``EpisodeContext`` and return an ``Outcome``; they never open the store. A suite
(or command) builds ``EpisodeSpec``s around them, runs them through the scheduler, and afterwards
freezes the criteria found in the outcomes with ``store.save_criteria``.

- ``criteria_program``: one writer request (4-8 criteria under the writer schema), the code
  screen, then one verifier request for the criteria that survived, then ``apply_review``. An
  unusable writer answer yields no criteria (the outcome says why); an unusable verifier answer
  leaves every surviving criterion *flagged* "not reviewed", never silently kept.
- ``grading_program``: one judge request per criterion, all sent together (one batch), each
  recorded as a ``ufs:<criterion_id>`` verdict. A task without graded criteria records one
  ``ufs:(none)`` verdict, not applicable, so the trajectory is counted as unscorable instead of
  vanishing from the numbers.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.episode import Ask, EpisodeContext, Outcome
from uxlocal.tau2 import Message
from uxlocal.tau2.episode import JUDGE_ROLE

from .criteria import Blueprint, Criterion, Screened, apply_review, parse_writer_output, screen
from .episodes import grade_value
from .prompts import (
    Grade,
    grader_request,
    parse_grade,
    prompt_sha256,
    verifier_constraint,
    verifier_messages,
    writer_constraint,
    writer_messages,
)
from .scoring import CriterionVerdict, episode_status
from .store import Provenance, TaskCriteria

WRITER_ROLE = "writer"
VERIFIER_ROLE = "verifier"
"""Model roles of ``uxlocal ufs criteria``: ``--model writer=... --model verifier=...``; the grader
sits in the tau2 runtime's ``JUDGE_ROLE`` seat (``--model judge=...``)."""
NO_CRITERIA = "(none)"
Gen = Generator[Ask, Any, Outcome]


# --- writing criteria --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CriteriaJob:
    """What one task's criteria are written from."""

    blueprint: Blueprint
    writer_sampling: Sampling
    verifier_sampling: Sampling
    sample: tuple[Message, ...] = ()
    """One earlier trajectory of the task, shown to the writer as "not an oracle" (optional)."""


def criteria_program(ctx: EpisodeContext, job: CriteriaJob) -> Gen:
    """Write, screen and verify one task's criteria; the outcome's info holds every item."""
    bp = job.blueprint
    written: GenResult = yield GenRequest(
        WRITER_ROLE,
        tuple(writer_messages(bp, job.sample or None)),
        job.writer_sampling,
        writer_constraint(),
        tag="ufs:writer",
    )
    info: dict[str, Any] = {
        "domain": bp.domain,
        "task_id": bp.task_id,
        "blueprint_sha256": bp.sha256(),
        "writer_request_hash": written.request_hash,
        "verifier_request_hash": None,
        "items": [],
        "n_written": 0,
        "problems": [],
    }
    if not written.valid:
        info["problems"] = [f"writer output unusable: {written.error or written.finish_reason}"]
        return Outcome("writer_unusable", info=info)
    criteria, problems = parse_writer_output(written.parsed)
    items = screen(criteria, bp)
    info.update(n_written=len(criteria) + len(problems), problems=problems)
    survivors = [i.criterion for i in items if i.status != "dropped"]
    if survivors:
        reviewed: GenResult = yield GenRequest(
            VERIFIER_ROLE,
            tuple(verifier_messages(bp, survivors)),
            job.verifier_sampling,
            verifier_constraint(survivors),
            tag="ufs:verifier",
        )
        info["verifier_request_hash"] = reviewed.request_hash
        if not reviewed.valid:
            info["problems"].append(f"verifier output unusable: {reviewed.error or reviewed.finish_reason}")
        items = apply_review(items, reviewed.parsed if reviewed.valid else None)
    info["items"] = [_item_json(i) for i in items]
    kept = sum(1 for i in items if i.status != "dropped")
    return Outcome("written", reward=float(kept), info=info)


def _item_json(item: Screened) -> dict[str, Any]:
    return {
        "criterion": item.criterion.model_dump(),
        "status": item.status,
        "reasons": list(item.reasons),
        "grounded_in": item.grounded_in,
        "checks": dict(item.checks),
    }


def task_criteria_from_outcome(
    info: dict[str, Any], *, writer: tuple[str, str] | None = None, verifier: tuple[str, str] | None = None
) -> TaskCriteria:
    """Turn a ``criteria_program`` outcome into what ``save_criteria`` stores.

    ``writer`` and ``verifier`` are (model name, model identity) of the models that played them.
    """
    items = tuple(
        Screened(
            Criterion.model_validate(i["criterion"]),
            i["status"],
            tuple(i["reasons"]),
            i["grounded_in"],
            dict(i["checks"]),
        )
        for i in info["items"]
    )
    provenance = Provenance(
        "writer",
        writer_model=writer[0] if writer else None,
        writer_identity=writer[1] if writer else None,
        writer_prompt_sha256=prompt_sha256("writer"),
        writer_request_hash=info.get("writer_request_hash"),
        verifier_model=verifier[0] if verifier else None,
        verifier_identity=verifier[1] if verifier else None,
        verifier_prompt_sha256=prompt_sha256("verifier"),
        verifier_request_hash=info.get("verifier_request_hash"),
        note="; ".join(info.get("problems") or []) or None,
    )
    return TaskCriteria(
        info["domain"],
        info["task_id"],
        info["blueprint_sha256"],
        items,
        provenance,
        n_written=int(info.get("n_written") or 0),
    )


# --- grading a trajectory ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GradingJob:
    """One trajectory to grade against its task's frozen criteria."""

    criteria_set: str
    blueprint: Blueprint
    criteria: tuple[Criterion, ...]
    trajectory: tuple[Message, ...]
    sampling: Sampling
    source_run_id: str | None = None
    """Set when the trajectory belongs to another run (the views follow it); None = this episode."""
    source_episode_id: str | None = None
    max_tool_chars: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def grading_program(ctx: EpisodeContext, job: GradingJob) -> Gen:
    """Grade every criterion of one trajectory in one batch; each becomes a ``ufs:`` verdict."""
    info: dict[str, Any] = {"criteria_set": job.criteria_set, **job.extra}
    if job.source_run_id is not None:
        info.update(source_run_id=job.source_run_id, source_episode_id=job.source_episode_id)
    if not job.criteria:
        ctx.verdict(
            f"ufs:{NO_CRITERIA}",
            judge_role=JUDGE_ROLE,
            label="not_applicable",
            valid=True,
            value={
                "criteria_set": job.criteria_set,
                "criterion_id": NO_CRITERIA,
                "family": None,
                "mode": None,
                "applicable": False,
                "passed": True,
                "evidence_turns": [],
            },
            rationale="the task has no graded criteria",
        )
        return Outcome("unscorable", info={**info, "status": "unscorable"})
    requests = [
        grader_request(
            JUDGE_ROLE, job.sampling, job.blueprint, c, job.trajectory, max_tool_chars=job.max_tool_chars
        )
        for c in job.criteria
    ]
    results: list[GenResult] = yield requests
    verdicts = [_record(ctx, job, c, r) for c, r in zip(job.criteria, results, strict=True)]
    status = episode_status(verdicts)
    return Outcome(status, reward={"pass": 1.0, "fail": 0.0}.get(status), info={**info, "status": status})


def _record(
    ctx: EpisodeContext, job: GradingJob, criterion: Criterion, result: GenResult
) -> CriterionVerdict:
    grade: Grade = parse_grade(result, n_turns=len(job.trajectory))
    ctx.verdict(
        f"ufs:{criterion.criterion_id}",
        result=result,
        judge_role=JUDGE_ROLE,
        label=grade.label,
        score=grade.score,
        valid=grade.valid,
        value=grade_value(job.criteria_set, criterion, grade),
        rationale=grade.rationale or grade.problem,
    )
    return CriterionVerdict(
        criterion.criterion_id, criterion.family, criterion.mode, grade.applicable, grade.passed, grade.valid
    )


def graded_criteria(criteria: Sequence[Criterion]) -> tuple[Criterion, ...]:
    """Criteria in a stable order for grading (by id), so request order never depends on storage."""
    return tuple(sorted(criteria, key=lambda c: c.criterion_id))
