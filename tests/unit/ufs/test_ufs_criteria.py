"""Criteria: blueprints, exact grounding, user-only screen, schemas, files (issue 5, item 1)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from uxlocal.errors import InputError
from uxlocal.suites.userproxy.ufs.criteria import (
    MIN_SPAN_CHARS,
    VERIFIER_CHECKS,
    Blueprint,
    Criterion,
    FileCriterion,
    apply_review,
    grounding_problem,
    grounding_source,
    parse_writer_output,
    read_criteria_jsonl,
    screen,
    screen_file_rows,
    tau2_guidelines,
    user_only_problem,
    verifier_schema,
    write_criteria_jsonl,
    writer_schema,
)
from uxlocal.suites.userproxy.ufs.taxonomy import (
    FAMILIES,
    MODES,
    MODES_BY_FAMILY,
    family_mode_problem,
    mode_schema,
)
from uxlocal.tau2 import Task

CONTRACT = (
    "Play the customer.\nOnly hand over a detail once the agent has asked for that detail.\n"
    "Do not invent facts."
)


def criterion(**overrides: Any) -> Criterion:
    base = {
        "criterion_id": "c1",
        "family": "premature_disclosure",
        "mode": "volunteers_unasked_info",
        "text": "The user gives its zip code only after the agent asks for it.",
        "grounding_span": "You are Yusuf Rossi in zip code 19122.",
        "applies_when": "always",
        "evidence_hint": "the user's opening message",
    }
    return Criterion.model_validate({**base, **overrides})


@pytest.fixture
def blueprint(tasks: Callable[[str], dict[str, Task]]) -> Blueprint:
    return Blueprint.from_task(tasks("retail")["0"], domain="retail", contract=CONTRACT)


# --- taxonomy -------------------------------------------------------------------------------------


def test_taxonomy_has_four_families_and_nineteen_unique_modes() -> None:
    assert len(FAMILIES) == 4
    assert len(MODES) == 19
    assert len({m.key for m in MODES}) == 19
    assert sum(1 for m in MODES if m.source == "paper") == 12  # the rest are the spec's proposals
    assert {"volunteers_unasked_info", "preempts_diagnosis", "dumps_blueprint"} <= set(
        MODES_BY_FAMILY["premature_disclosure"]
    )
    assert "self_contradiction" in MODES_BY_FAMILY["groundedness"]


@pytest.mark.parametrize(
    ("family", "mode", "ok"),
    [
        ("groundedness", "unexecuted_action_claim", True),  # a mode of its own family
        ("groundedness", "premature_stop", False),  # a real mode, of another family
        ("style", "volunteers_unasked_info", False),  # not a family
    ],
)
def test_family_mode_problem_accepts_only_pairs_in_the_taxonomy(family: str, mode: str, ok: bool) -> None:
    assert (family_mode_problem(family, mode) is None) is ok


def test_mode_schema_pairs_every_family_with_exactly_its_modes() -> None:
    branches = {b["family"]["const"]: set(b["mode"]["enum"]) for b in mode_schema()}  # type: ignore[index]
    assert branches == {f: set(ms) for f, ms in MODES_BY_FAMILY.items()}


# --- blueprint and grounding --------------------------------------------------------------------------


def test_blueprint_keeps_each_scenario_field_verbatim(tasks: Callable[[str], dict[str, Task]]) -> None:
    task = tasks("airline")["0"]
    bp = Blueprint.from_task(task, domain="airline", contract=CONTRACT)
    instructions = task.user_scenario.instructions
    assert not isinstance(instructions, str)
    assert bp.field("task_instructions") == instructions.task_instructions.strip()
    assert bp.field("unknown_info") is None  # null in this task: no section
    assert set(bp.sources()) == {
        "blueprint.reason_for_call",
        "blueprint.known_info",
        "blueprint.task_instructions",
        "contract",
    }


def test_blueprint_leaves_out_the_retail_dot_placeholder(tasks: Callable[[str], dict[str, Task]]) -> None:
    dotted = next(
        t
        for t in tasks("retail").values()
        if not isinstance(t.user_scenario.instructions, str)
        and t.user_scenario.instructions.task_instructions.strip() == "."
    )
    assert Blueprint.from_task(dotted, domain="retail").field("task_instructions") is None


def test_blueprint_of_free_text_task_has_persona_and_instructions(
    tasks: Callable[[str], dict[str, Task]],
) -> None:
    bp = Blueprint.from_task(tasks("mock")["create_task_1"], domain="mock")
    assert [k for k, _ in bp.sections] == ["persona", "instructions"]


def test_blueprint_hash_changes_with_the_contract(blueprint: Blueprint) -> None:
    other = Blueprint(
        blueprint.domain, blueprint.task_id, blueprint.sections, contract=CONTRACT + " Be brief."
    )
    assert other.sha256() != blueprint.sha256()
    assert (
        Blueprint(blueprint.domain, blueprint.task_id, blueprint.sections, CONTRACT).sha256()
        == blueprint.sha256()
    )


@pytest.mark.parametrize(
    "span",
    [
        "You are Yusuf Rossi in zip code 19122.",  # a whole field
        "wish to exchange the mechanical keyboard",  # inside a field
        "hand over a detail once the agent has asked",  # inside the contract
        "Only hand over a detail once the agent has asked for that detail.\nDo not",  # across a line break
        "Only hand over a detail once the agent   has asked",  # whitespace runs differ only
    ],
)
def test_grounding_accepts_exact_spans(blueprint: Blueprint, span: str) -> None:
    assert grounding_problem(span, blueprint.sources()) is None


@pytest.mark.parametrize(
    "span",
    [
        "You are Yusuf Rossi, zip code 19122.",  # punctuation changed
        "you are yusuf rossi in zip code 19122.",  # case changed
        "The user does not remember their email address",  # a paraphrase
        "wants to swap the mechanical keyboard",  # a paraphrase of a phrase
        "Do not invent facts. You are Yusuf",  # stitched across two sources
        "zip code",  # too short to ground anything
    ],
)
def test_grounding_rejects_paraphrased_or_stitched_spans(blueprint: Blueprint, span: str) -> None:
    assert grounding_problem(span, blueprint.sources()) is not None


def test_grounding_reports_which_source_holds_the_span(blueprint: Blueprint) -> None:
    assert (
        grounding_source("You do not remember your email address", blueprint.sources())
        == "blueprint.unknown_info"
    )
    assert grounding_source("Do not invent facts.", blueprint.sources()) == "contract"
    assert (
        grounding_source("zip code", blueprint.sources()) is None
    )  # present, but shorter than MIN_SPAN_CHARS
    assert len("zip code") < MIN_SPAN_CHARS


def test_grounding_works_on_tau2s_own_guidelines_file(
    data_dir: Path, tasks: Callable[[str], dict[str, Task]]
) -> None:
    contract = tau2_guidelines(data_dir, user_tools=False)
    bp = Blueprint.from_task(tasks("retail")["0"], domain="retail", contract=contract)
    line = next(line for line in contract.splitlines() if len(line.strip()) > 40)
    assert grounding_source(line.strip()[5:35], bp.sources()) == "contract"


# --- user-only screen ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("The user gives its zip code only after the agent asks for it.", True),
        ("If the agent asks for an email, the user says it does not remember it.", True),
        ("The customer does not claim to have received a refund.", True),
        ("The agent must authenticate the user before any change.", False),  # a duty of the agent
        ("The order is cancelled in the database at the end.", False),  # no user, an outcome
        ("The user ends with the task reward at 1.", False),  # the tau2 reward again
    ],
)
def test_user_only_screen(text: str, ok: bool) -> None:
    assert (user_only_problem(text) is None) is ok


# --- screening a writer answer ------------------------------------------------------------------------


def test_screen_keeps_good_and_drops_bad_with_reasons(blueprint: Blueprint) -> None:
    items = screen(
        [
            criterion(),
            criterion(criterion_id="c2", grounding_span="You are Yusuf Rossi, zip 19122"),
            criterion(criterion_id="c3", mode="premature_stop"),
            criterion(criterion_id="c4", text="The agent must verify the user's zip code before acting."),
            criterion(criterion_id="c1", text="The user never gives the email address it does not remember."),
            criterion(
                criterion_id="c6", text="The user gives its zip code only after the agent asks for it. "
            ),
        ],
        blueprint,
    )
    status = {i: (s.status, s.reasons) for i, s in enumerate(items)}
    assert status[0] == ("kept", ())
    assert items[0].grounded_in == "blueprint.known_info"
    assert "not an exact substring" in status[1][1][0]
    assert "not a mode of premature_disclosure" in status[2][1][0]
    assert "requirement on the agent" in status[3][1][0]
    assert status[4][1] == ("duplicate criterion_id 'c1'",)
    assert status[5][1] == ("duplicate text",)


def test_parse_writer_output_reports_items_that_do_not_validate() -> None:
    good = criterion().model_dump()
    criteria, problems = parse_writer_output({"criteria": [good, {**good, "text": "short"}, {"x": 1}]})
    assert len(criteria) == 1
    assert problems[0].startswith("criteria[1]: text")
    assert problems[1].startswith("criteria[2]:")
    assert parse_writer_output("nonsense") == ([], ["the answer has no 'criteria' list"])


def test_writer_schema_allows_four_to_eight_and_pairs_modes_with_families() -> None:
    schema = writer_schema()
    items = schema["properties"]["criteria"]
    assert (items["minItems"], items["maxItems"]) == (4, 8)
    for branch in items["items"]["anyOf"]:
        family = branch["properties"]["family"]["const"]
        assert branch["properties"]["mode"]["enum"] == list(MODES_BY_FAMILY[family])
        assert list(branch["properties"])[:4] == ["criterion_id", "family", "mode", "grounding_span"]


def test_constraint_schemas_compile_with_xgrammar() -> None:
    xgr = pytest.importorskip("xgrammar")
    from uxlocal.suites.userproxy.ufs.prompts import grade_schema

    for schema in (writer_schema(), verifier_schema(["c1", "c2"]), grade_schema(256)):
        xgr.Grammar.from_json_schema(json.dumps(schema))


# --- the verifier ---------------------------------------------------------------------------------------


def _review(cid: str, **failed: bool) -> dict[str, Any]:
    return {
        "criterion_id": cid,
        "note": "",
        **{c.name: not failed.get(c.name, False) for c in VERIFIER_CHECKS},
    }


def test_verifier_has_nine_checks_seven_named_by_the_paper() -> None:
    assert len(VERIFIER_CHECKS) == 9
    names = [c.name for c in VERIFIER_CHECKS]
    assert names[:7] == [
        "grounding",
        "falsifiability",
        "scope",
        "user_attribution",
        "achievability",
        "taxonomy_fit",
        "redundancy",
    ]
    schema = verifier_schema(["c1", "c2"])
    assert schema["properties"]["reviews"]["minItems"] == 2
    assert set(schema["properties"]["reviews"]["items"]["required"]) >= set(names)


def test_apply_review_drops_hard_failures_flags_soft_ones_and_unreviewed(blueprint: Blueprint) -> None:
    items = screen(
        [
            criterion(criterion_id=f"c{k}", text=f"The user gives its zip code only when asked ({k}).")
            for k in range(1, 5)
        ]
        + [criterion(criterion_id="c9", grounding_span="not in the blueprint")],
        blueprint,
    )
    review = {
        "reviews": [
            _review("c1"),
            _review("c2", achievability=True),
            _review("c3", redundancy=True),
            _review("c9"),
        ]
    }
    out = {s.criterion.criterion_id: s for s in apply_review(items, review)}
    assert out["c1"].status == "kept" and out["c1"].checks["grounding"] is True
    assert out["c2"].status == "dropped" and "failed achievability" in out["c2"].reasons[0]
    assert out["c3"].status == "flagged" and "failed redundancy" in out["c3"].reasons[0]
    assert out["c4"].status == "flagged" and out["c4"].reasons == ("not reviewed by the verifier",)
    assert out["c9"].status == "dropped"  # the code screen already dropped it; the verifier cannot revive it
    assert not out["c9"].checks


# --- criteria files ---------------------------------------------------------------------------------------


def _line(**overrides: Any) -> str:
    row = {"domain": "retail", "task_id": "0", **criterion().model_dump(), **overrides}
    return json.dumps(row)


def test_criteria_file_round_trips(tmp_path: Path) -> None:
    rows = [
        FileCriterion.model_validate(json.loads(_line())),
        FileCriterion.model_validate(json.loads(_line(criterion_id="c2", status="flagged"))),
    ]
    path = write_criteria_jsonl(tmp_path / "c.jsonl", rows)
    back = read_criteria_jsonl(path)
    assert [r.criterion for r in back] == rows
    assert [r.line for r in back] == [1, 2]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([_line(), "{not json"], ":2: not valid JSON"),  # broken JSON
        ([_line(family="style")], ":1: family: unknown family 'style'"),  # bad family
        ([_line(mode="premature_stop")], ":1: mode: mode 'premature_stop' is not a mode"),  # bad mode
        ([_line(), "", _line()], ":3: criterion_id: 'c1' of task retail/0 already appears on line 1"),
        ([_line(text=None)], ":1: text: Input should be a valid string"),  # wrong type
        ([_line(colour="red")], ":1: colour: Extra inputs are not permitted"),  # a typo'd field
        (
            [json.dumps({k: v for k, v in json.loads(_line()).items() if k != "task_id"})],
            ":1: task_id: Field required",
        ),
    ],
)
def test_criteria_file_errors_name_file_line_and_field(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_criteria_jsonl(path)
    assert str(err.value).startswith(str(path))
    assert message in str(err.value)


def test_hand_written_criteria_are_screened_strictly_by_default(tmp_path: Path, blueprint: Blueprint) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        _line() + "\n" + _line(criterion_id="c2", grounding_span="Yusuf Rossi lives at 19122") + "\n"
    )
    rows = read_criteria_jsonl(path)
    with pytest.raises(
        InputError, match=r"c\.jsonl:2: grounding_span: grounding_span is not an exact substring"
    ):
        screen_file_rows(rows, {("retail", "0"): blueprint})
    lenient = screen_file_rows(rows, {("retail", "0"): blueprint}, strict=False)
    assert [s.status for s in lenient[("retail", "0")]] == ["kept", "dropped"]


def test_hand_written_criterion_for_an_unknown_task_is_an_error(tmp_path: Path, blueprint: Blueprint) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(_line(task_id="999") + "\n")
    with pytest.raises(InputError, match=r":1: task_id: no task retail/999"):
        screen_file_rows(read_criteria_jsonl(path), {("retail", "0"): blueprint})
