"""Writer, verifier and grader prompts; the grader's trajectory view (issue 5, items 1-2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from uxlocal.engine.base import GenResult, Sampling
from uxlocal.suites.userproxy.ufs import prompts as ufs_prompts
from uxlocal.suites.userproxy.ufs.criteria import Blueprint, Criterion
from uxlocal.suites.userproxy.ufs.prompts import (
    SAMPLE_NOTE,
    grade_schema,
    grader_messages,
    grader_request,
    parse_grade,
    prompt_hashes,
    read_grade,
    verifier_constraint,
    verifier_messages,
    writer_constraint,
    writer_messages,
)
from uxlocal.suites.userproxy.ufs.render import USER_MARK, render_trajectory, user_turns
from uxlocal.tau2 import Message, Task

CRITERION = Criterion(
    criterion_id="c2",
    family="groundedness",
    mode="invents_unknown_info",
    text="The user never states an email address.",
    grounding_span="You do not remember your email address",
    applies_when="the agent asks for the user's email",
    evidence_hint="user replies",
)


@pytest.fixture
def bp(tasks: Callable[[str], dict[str, Task]]) -> Blueprint:
    return Blueprint.from_task(tasks("retail")["0"], domain="retail", contract="Only answer what is asked.")


@pytest.fixture
def trajectory(make_convo: Callable[..., list[Message]]) -> list[Message]:
    messages = make_convo(
        ("assistant", "Hi! How can I help you today?"),
        ("user", "I want to exchange two items."),
        (
            "call",
            "assistant",
            "find_user_id_by_name_zip",
            {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"},
        ),
        ("result", '"yusuf_rossi_9620"'),
        ("call", "user", "check_notifications", {}),
        ("result", "Error: nothing here " + "x" * 50),
        ("assistant", "What is your email?"),
        ("user", "I don't remember it. ###STOP###"),
    )
    messages[1] = messages[1].model_copy(
        update={"cost": 0.123, "usage": {"prompt_tokens": 77}, "raw_data": {"model": "secret-proxy-7b"}}
    )
    return [Message(role="system", content="system prompt of the agent"), *messages]


def test_trajectory_blocks_are_numbered_by_position_and_mark_the_user(trajectory: list[Message]) -> None:
    text = render_trajectory(trajectory)
    assert "system prompt" not in text
    assert f"[2] {USER_MARK} says:\nI want to exchange two items." in text
    assert '[3] AGENT calls tool find_user_id_by_name_zip with {"first_name": "Yusuf"' in text
    assert "[4] TOOL result for AGENT (find_user_id_by_name_zip):" in text
    assert f"[5] {USER_MARK} calls tool check_notifications with {{}}" in text
    assert f"[6] TOOL error for {USER_MARK} (check_notifications):" in text
    assert user_turns(trajectory) == [2, 5, 8]


def test_trajectory_never_shows_who_played_the_seats(trajectory: list[Message]) -> None:
    text = render_trajectory(trajectory)
    for secret in ("secret-proxy-7b", "0.123", "77"):
        assert secret not in text


def test_long_tool_results_are_cut_only_on_request(trajectory: list[Message]) -> None:
    assert "x" * 50 in render_trajectory(trajectory)
    short = render_trajectory(trajectory, max_tool_chars=20)
    assert "x" * 50 not in short and "more characters not shown]" in short


def test_writer_prompt_holds_blueprint_contract_taxonomy_and_labelled_sample(
    bp: Blueprint, trajectory: list[Message]
) -> None:
    system, task = writer_messages(bp, trajectory)
    assert "between 4 and 8 criteria" in system["content"]
    assert "volunteers_unasked_info" in system["content"]
    for _, text in bp.sections:
        assert text in task["content"]  # verbatim, so spans can be copied exactly
    assert "Only answer what is asked." in task["content"]
    assert SAMPLE_NOTE in task["content"] and "[2] USER*" in task["content"]
    assert "<sample_conversation>" not in writer_messages(bp)[1]["content"]
    assert "$" not in system["content"] + writer_messages(bp)[1]["content"]  # every slot filled


def test_writer_and_verifier_constraints(bp: Blueprint) -> None:
    assert writer_constraint().schema["properties"]["criteria"]["maxItems"] == 8
    schema = verifier_constraint([CRITERION]).schema
    assert schema["properties"]["reviews"]["items"]["properties"]["criterion_id"]["enum"] == ["c2"]
    _, task = verifier_messages(bp, [CRITERION])
    assert '"criterion_id": "c2"' in task["content"]


def test_grader_prompt_has_one_criterion_and_the_marked_conversation(
    bp: Blueprint, trajectory: list[Message]
) -> None:
    system, task = grader_messages(bp, CRITERION, trajectory)
    assert "applicable" in system["content"] and "passed" in system["content"]
    assert "Applies when: the agent asks for the user's email" in task["content"]
    assert 'Grounded in: "You do not remember your email address"' in task["content"]
    assert f"{USER_MARK} marks the simulated user's turns" in task["content"]
    assert "secret-proxy-7b" not in task["content"]


def test_grader_request_is_tagged_with_the_verdict_name(bp: Blueprint, trajectory: list[Message]) -> None:
    request = grader_request("judge", Sampling(max_tokens=200), bp, CRITERION, trajectory)
    assert request.tag == "ufs:c2" and request.role == "judge"
    schema = request.constraint.schema  # type: ignore[union-attr]
    assert list(schema["properties"]) == ["rationale", "evidence_turns", "applicable", "passed"]
    assert (
        schema["properties"]["rationale"]["maxLength"]
        == grade_schema(200)["properties"]["rationale"]["maxLength"]
    )


def test_an_unconditional_criterion_is_applicable_by_grammar(
    bp: Blueprint, trajectory: list[Message]
) -> None:
    always = CRITERION.model_copy(update={"applies_when": "always"})
    conditional = CRITERION.model_copy(update={"applies_when": "the agent asks for the email"})

    def schema_of(c: Criterion) -> dict[str, Any]:
        return grader_request("judge", Sampling(max_tokens=200), bp, c, trajectory).constraint.schema

    assert schema_of(always)["properties"]["applicable"] == {"const": True}
    assert schema_of(conditional)["properties"]["applicable"] == {"type": "boolean"}


@pytest.mark.parametrize(
    ("value", "label", "score"),
    [
        ({"rationale": "r", "evidence_turns": [8], "applicable": True, "passed": True}, "pass", 1.0),
        ({"rationale": "r", "evidence_turns": [8], "applicable": True, "passed": False}, "fail", 0.0),
        (
            {"rationale": "r", "evidence_turns": [], "applicable": False, "passed": False},
            "not_applicable",
            None,
        ),
        ({"rationale": "r", "evidence_turns": [], "applicable": "yes", "passed": True}, "invalid", None),
        ("not an object", "invalid", None),
    ],
)
def test_read_grade_labels(value: Any, label: str, score: float | None) -> None:
    grade = read_grade(value, n_turns=9)
    assert (grade.label, grade.score) == (label, score)


def test_read_grade_drops_evidence_outside_the_conversation() -> None:
    grade = read_grade(
        {"rationale": "", "evidence_turns": [3, 3, 99, -1, True], "applicable": True, "passed": True},
        n_turns=9,
    )
    assert grade.evidence_turns == (3,)
    assert grade.problem == "some evidence turns are outside the conversation"


def test_parse_grade_of_unusable_results_is_invalid() -> None:
    assert (
        parse_grade(GenResult("", "context_window", valid=False)).problem
        == "the conversation does not fit the judge's window"
    )
    assert (
        parse_grade(GenResult('{"rationale": "cut', "length", valid=False, error="invalid JSON")).label
        == "invalid"
    )
    ok = GenResult(
        "{}", "stop", parsed={"rationale": "", "evidence_turns": [], "applicable": True, "passed": True}
    )
    assert parse_grade(ok).label == "pass"


def test_prompt_hashes_cover_every_call_and_follow_file_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashes = prompt_hashes()
    assert set(hashes) == {"ufs/writer", "ufs/verifier", "ufs/grader"}
    assert hashes == prompt_hashes()
    for name in (
        "writer.md",
        "writer_task.md",
        "verifier.md",
        "verifier_task.md",
        "grader.md",
        "grader_task.md",
    ):
        (tmp_path / name).write_bytes((ufs_prompts.PROMPTS_DIR / name).read_bytes())
    (tmp_path / "grader.md").write_text("changed")
    monkeypatch.setattr(ufs_prompts, "PROMPTS_DIR", tmp_path)
    changed = prompt_hashes()
    assert changed["ufs/grader"] != hashes["ufs/grader"]
    assert changed["ufs/writer"] == hashes["ufs/writer"]
