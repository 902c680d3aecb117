"""Task loading: counts, splits, ids, limits, data-dir spellings, errors, scenario rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uxlocal.errors import InputError
from uxlocal.tau2 import available_splits, load_tasks, render_scenario
from uxlocal.tau2.tasks import StructuredInstructions


@pytest.mark.parametrize(
    ("domain", "count"),
    [
        ("mock", 10),  # spec §B.1.2: mock base 10
        ("retail", 114),  # retail base 114
        ("airline", 50),  # airline base 50
        ("telecom", 114),  # no split file here: base means every task (v0.2.0 file)
        ("banking_knowledge", 97),  # no split file: tau2 ignores split names
    ],
)
def test_load_tasks_base_split_has_spec_counts(data_dir: Path, domain: str, count: int) -> None:
    assert len(load_tasks(data_dir, domain)) == count


@pytest.mark.parametrize(
    ("domain", "split", "count"),
    [
        ("retail", "train", 74),  # spec §B.1.3
        ("retail", "test", 40),
        ("airline", "train", 30),
        ("airline", "test", 20),
        ("retail", None, 114),  # None = the whole file
    ],
)
def test_load_tasks_selects_split_members_in_file_order(
    data_dir: Path, domain: str, split: str | None, count: int
) -> None:
    tasks = load_tasks(data_dir, domain, split=split)
    every = [t.id for t in load_tasks(data_dir, domain, split=None)]
    assert len(tasks) == count
    assert [t.id for t in tasks] == [i for i in every if i in {t.id for t in tasks}]


def test_load_tasks_filters_ids_then_limits(data_dir: Path) -> None:
    tasks = load_tasks(data_dir, "retail", task_ids=["5", "0", "7"], limit=2)
    assert [t.id for t in tasks] == ["0", "5"]


def test_load_tasks_limit_zero_is_empty(data_dir: Path) -> None:
    assert load_tasks(data_dir, "airline", limit=0) == []


def test_load_tasks_reports_ids_missing_from_the_split(data_dir: Path) -> None:
    test_ids = set(json.loads((data_dir / "domains/retail/split_tasks.json").read_text())["test"])
    train_only = next(t.id for t in load_tasks(data_dir, "retail", split="train") if t.id not in test_ids)
    with pytest.raises(InputError, match=f"task ids not in split 'test': {train_only}"):
        load_tasks(data_dir, "retail", split="test", task_ids=[train_only])


def test_load_tasks_unknown_split_lists_available_ones(data_dir: Path) -> None:
    with pytest.raises(InputError, match=r"unknown split 'dev'.*available: base, test, train"):
        load_tasks(data_dir, "retail", split="dev")


def test_load_tasks_unknown_split_without_split_file_names_base(data_dir: Path) -> None:
    with pytest.raises(InputError, match=r"unknown split 'small'.*base \(all tasks\)"):
        load_tasks(data_dir, "banking_knowledge", split="small")


def test_available_splits_lists_split_file_keys(data_dir: Path) -> None:
    assert available_splits(data_dir, "airline") == ["base", "test", "train"]
    assert available_splits(data_dir, "telecom") == ["base"]


def test_load_tasks_accepts_checkout_root_spelling(data_dir: Path, tmp_path: Path) -> None:
    # a tau2-bench checkout keeps the same tree under data/tau2; a symlink stands in for it (no copy)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tau2").symlink_to(data_dir)
    assert len(load_tasks(tmp_path, "mock")) == 10
    assert len(load_tasks(tmp_path / "data" / "tau2", "mock")) == 10


def test_load_tasks_unknown_domain_lists_domains(data_dir: Path) -> None:
    with pytest.raises(InputError, match=r"no tau2 domain 'shop'.*airline.*retail"):
        load_tasks(data_dir, "shop")


def test_load_tasks_folder_without_domains_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no tau2 data here"):
        load_tasks(tmp_path, "retail")


def _write_domain(root: Path, tasks: object) -> Path:
    folder = root / "domains" / "toy"
    folder.mkdir(parents=True)
    (folder / "tasks.json").write_text(json.dumps(tasks, indent=2))
    return folder


def test_load_tasks_malformed_task_names_file_id_index_and_field(tmp_path: Path) -> None:
    good = {"id": "a", "user_scenario": {"instructions": "be nice"}}
    bad = {
        "id": "b",
        "user_scenario": {"instructions": "x"},
        "evaluation_criteria": {"actions": [{"name": "f"}]},
    }
    folder = _write_domain(tmp_path, [good, bad])
    with pytest.raises(InputError) as err:
        load_tasks(tmp_path, "toy", split=None)
    message = str(err.value)
    assert str(folder / "tasks.json") in message
    assert "task 'b' (index 1)" in message
    assert "evaluation_criteria.actions.0.action_id: Field required" in message
    lines = (folder / "tasks.json").read_text().splitlines()
    assert err.value.line == lines.index('    "id": "b",') + 1  # editors can jump to the task


def test_load_tasks_malformed_json_gives_line(tmp_path: Path) -> None:
    folder = tmp_path / "domains" / "toy"
    folder.mkdir(parents=True)
    (folder / "tasks.json").write_text('[\n  {"id": "a",\n')
    with pytest.raises(InputError, match="not valid JSON") as err:
        load_tasks(tmp_path, "toy", split=None)
    assert err.value.line == 3


def test_load_tasks_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    task = {"id": "a", "user_scenario": {"instructions": "x"}}
    _write_domain(tmp_path, [task, task])
    with pytest.raises(InputError, match="task id 'a' appears twice"):
        load_tasks(tmp_path, "toy", split=None)


def test_load_tasks_keeps_unknown_keys_and_defaults_reward_basis(data_dir: Path) -> None:
    airline = load_tasks(data_dir, "airline", task_ids=["0"])[0]
    assert "annotations" in airline.model_dump()  # extra key kept for write-back
    mock = load_tasks(data_dir, "mock", task_ids=["create_task_1"])[0]
    assert mock.evaluation_criteria is not None
    assert mock.evaluation_criteria.reward_basis == ["DB", "COMMUNICATE"]
    banking = load_tasks(data_dir, "banking_knowledge")
    assert all(t.user_tools is not None for t in banking)


def test_load_tasks_parses_both_instruction_forms(data_dir: Path) -> None:
    assert all(
        isinstance(t.user_scenario.instructions, StructuredInstructions)
        for t in load_tasks(data_dir, "retail")
    )
    assert all(isinstance(t.user_scenario.instructions, str) for t in load_tasks(data_dir, "mock"))


def test_render_scenario_lists_structured_fields_and_skips_placeholders(data_dir: Path) -> None:
    task = load_tasks(data_dir, "retail", task_ids=["0"])[0]
    text = render_scenario(task.user_scenario)
    assert "Why you are getting in touch:" in text
    assert "#W2378156" in text
    assert "What you do not know (do not make it up): You do not remember your email address." in text
    placeholder = next(
        t
        for t in load_tasks(data_dir, "retail")
        if isinstance(t.user_scenario.instructions, StructuredInstructions)
        and t.user_scenario.instructions.task_instructions == "."
    )
    assert "How to behave" not in render_scenario(placeholder.user_scenario)


def test_render_scenario_keeps_free_text_and_persona(data_dir: Path) -> None:
    task = load_tasks(data_dir, "mock", task_ids=["create_task_1"])[0]
    text = render_scenario(task.user_scenario)
    assert text.startswith("## Who you are\nProfessional and direct communicator")
    assert "Create a new task called 'Important Meeting' for user_1." in text


def test_render_scenario_indents_multiline_fields(data_dir: Path) -> None:
    task = load_tasks(data_dir, "airline", task_ids=["0"])[0]
    text = render_scenario(task.user_scenario)
    assert "How to behave:\n    If Agent tells you that cancellation is not possible," in text
