"""Issue 42 part 4: which scenario fields a task's graded criteria are grounded in (``ufs/coverage.py``)."""

from __future__ import annotations

from uxlocal.suites.userproxy.ufs.coverage import coverage_note, field_coverage
from uxlocal.suites.userproxy.ufs.criteria import Blueprint, Criterion
from uxlocal.tau2 import Task

REASON = "Your phone has no mobile data since this morning."
KNOWN = "You are Ada Lovelace with phone number 555-000-1815."
STEPS = "Follow the agent's steps and say what the status bar shows after each one."
GUIDELINES = "Never invent information that is not in your instructions."


def _task(*, known: str | None = KNOWN, unknown: str | None = None, persona: str | None = None) -> Task:
    instructions = {"domain": "telecom", "reason_for_call": REASON, "known_info": known,
                    "unknown_info": unknown, "task_instructions": STEPS}
    scenario = {"persona": persona, "instructions": instructions}
    return Task.model_validate({"id": "t1", "user_scenario": scenario})


def _criterion(cid: str, span: str) -> Criterion:
    return Criterion(criterion_id=cid, family="groundedness", mode="unsupported_state_claim",
                     text=f"The user sticks to what its scenario says ({cid}).", grounding_span=span)


def test_criteria_grounded_in_two_of_three_fields_cover_two_thirds_and_name_the_third() -> None:
    bp = Blueprint.from_task(_task(), domain="telecom", contract=GUIDELINES)
    criteria = [_criterion("c1", "has no mobile data since this morning"),
                _criterion("c2", "say what the status bar shows"),
                _criterion("c3", "Never invent information")]  # the contract covers no scenario field
    coverage = field_coverage(bp, criteria)
    assert coverage.fields == ("reason_for_call", "known_info", "task_instructions")  # unknown_info unset
    assert coverage.covered == ("reason_for_call", "task_instructions")
    assert coverage.uncovered == ("known_info",) and coverage.fraction() == "2/3"
    assert coverage.as_json()["n_fields"] == 3 and coverage.as_json()["n_covered"] == 2
    note = coverage_note([coverage])
    assert "2/3 scenario fields of 1 task(s)" in note and "telecom/t1 known_info" in note


def test_a_span_covers_every_field_it_is_a_substring_of_and_whitespace_is_ignored() -> None:
    bp = Blueprint.from_task(_task(known=REASON, unknown="You do not know your PIN code."), domain="telecom")
    rewrapped = "Your phone has no\n   mobile data"
    coverage = field_coverage(bp, [_criterion("c1", rewrapped), _criterion("c2", "PIN")])  # "PIN": too short
    assert coverage.covered == ("reason_for_call", "known_info")
    assert coverage.uncovered == ("unknown_info", "task_instructions") and coverage.fraction() == "2/4"


def test_free_text_scenarios_have_persona_and_instructions_fields() -> None:
    task = Task.model_validate({"id": "m", "user_scenario": {"persona": "Terse and direct.",
                                                             "instructions": "Create a task called 'Demo'."}})
    bp = Blueprint.from_task(task, domain="mock")
    coverage = field_coverage(bp, [_criterion("c1", "Create a task called 'Demo'")])
    assert coverage.fields == ("persona", "instructions") and coverage.uncovered == ("persona",)


def test_the_note_sums_tasks_and_shows_the_first_five_gaps() -> None:
    bp = Blueprint.from_task(_task(unknown="You do not know your account number."), domain="telecom")
    full = field_coverage(bp, [_criterion("c1", REASON), _criterion("c2", KNOWN), _criterion("c3", STEPS),
                               _criterion("c4", "You do not know your account number.")])
    empty = field_coverage(bp, [])
    other = field_coverage(Blueprint.from_task(_task(), domain="retail"), [])
    note = coverage_note([full, empty, other])
    assert "4/11 scenario fields of 3 task(s)" in note  # full 4/4, empty 0/4, other 0/3
    assert note.endswith(" ...") and note.count("telecom/t1") == 4 and "retail/t1" in note
    assert coverage_note([full]).endswith("have a graded criterion grounded in them")
