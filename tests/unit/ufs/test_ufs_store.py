"""Frozen criteria sets in the store (issue 5, item 1: stored per task, frozen, reusable)."""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pytest

from uxlocal.errors import UxlocalError
from uxlocal.store.db import migration_files
from uxlocal.suites.userproxy.ufs.criteria import Blueprint, Criterion, Screened, screen
from uxlocal.suites.userproxy.ufs.store import (
    Provenance,
    TaskCriteria,
    criteria_sets,
    load_criteria,
    save_criteria,
    stale_tasks,
)
from uxlocal.tau2 import Task

WRITER = Provenance(
    "writer",
    writer_model="qwen-32b",
    writer_identity="id-w",
    writer_prompt_sha256="a" * 64,
    verifier_model="llama-70b",
    verifier_identity="id-v",
    verifier_prompt_sha256="b" * 64,
)


def _task_criteria(bp: Blueprint, texts: list[str], provenance: Provenance = WRITER) -> TaskCriteria:
    criteria = [
        Criterion(
            criterion_id=f"c{k}",
            family="premature_disclosure",
            mode="volunteers_unasked_info",
            text=text,
            grounding_span="You are Yusuf Rossi in zip code 19122.",
            applies_when="always" if k % 2 else "the agent asks for the zip code",
        )
        for k, text in enumerate(texts, start=1)
    ]
    items = screen(criteria, bp)
    return TaskCriteria(
        bp.domain, bp.task_id, bp.sha256(), tuple(items), provenance, n_written=len(texts) + 1
    )


@pytest.fixture
def bp(tasks: Callable[[str], dict[str, Task]]) -> Blueprint:
    return Blueprint.from_task(tasks("retail")["0"], domain="retail", contract="Wait to be asked.")


def test_ufs_migration_is_the_next_contiguous_number() -> None:
    names = [f.name for f in migration_files()]
    assert "002_ufs_criteria.sql" in names
    assert [int(n[:3]) for n in names] == list(range(1, len(names) + 1))


def test_saved_set_loads_back_with_statuses_and_provenance(
    store: duckdb.DuckDBPyConnection, bp: Blueprint
) -> None:
    tc = _task_criteria(
        bp, ["The user gives its zip code only when asked.", "The agent must check the user's zip code."]
    )
    assert save_criteria(store, "set-a", [tc]) == (1, 0)
    loaded = load_criteria(store, "set-a")[("retail", "0")]
    assert [i.status for i in loaded.items] == ["kept", "dropped"]
    assert loaded.items[1].reasons == tc.items[1].reasons
    assert loaded.provenance == WRITER
    assert loaded.n_written == 3
    assert [c.criterion_id for c in loaded.graded()] == ["c1"]
    assert loaded.graded()[0] == tc.items[0].criterion
    assert criteria_sets(store) == [("set-a", 1, 1)]


def test_saving_the_same_criteria_again_is_a_no_op(store: duckdb.DuckDBPyConnection, bp: Blueprint) -> None:
    tc = _task_criteria(bp, ["The user gives its zip code only when asked."])
    save_criteria(store, "s", [tc])
    assert save_criteria(store, "s", [tc]) == (0, 1)
    assert store.execute("SELECT count(*) FROM ufs_criteria").fetchone() == (1,)


def test_a_frozen_set_refuses_different_criteria_for_a_task(
    store: duckdb.DuckDBPyConnection, bp: Blueprint
) -> None:
    save_criteria(store, "s", [_task_criteria(bp, ["The user gives its zip code only when asked."])])
    changed = _task_criteria(bp, ["The user never volunteers its name or zip code."])
    with pytest.raises(UxlocalError, match="sets are frozen"):
        save_criteria(store, "s", [changed])
    assert save_criteria(store, "s2", [changed]) == (1, 0)  # a new set name is fine


def test_a_refused_save_writes_nothing(
    store: duckdb.DuckDBPyConnection, bp: Blueprint, tasks: Callable[[str], dict[str, Task]]
) -> None:
    save_criteria(store, "s", [_task_criteria(bp, ["The user gives its zip code only when asked."])])
    other = Blueprint.from_task(tasks("retail")["1"], domain="retail")
    batch = [
        _task_criteria(other, ["The user gives its zip code only when asked."]),
        _task_criteria(bp, ["The user never volunteers its name or zip code."]),
    ]
    with pytest.raises(UxlocalError):
        save_criteria(store, "s", batch)
    assert store.execute("SELECT count(*) FROM ufs_criteria_tasks").fetchone() == (1,)


def test_stale_tasks_are_those_whose_blueprint_changed(
    store: duckdb.DuckDBPyConnection, bp: Blueprint
) -> None:
    save_criteria(store, "s", [_task_criteria(bp, ["The user gives its zip code only when asked."])])
    stored = load_criteria(store, "s")
    assert stale_tasks(stored, {bp_key(bp): bp}) == []
    edited = Blueprint(bp.domain, bp.task_id, bp.sections, contract="Another contract.")
    assert stale_tasks(stored, {bp_key(bp): edited}) == [("retail", "0")]


def test_criteria_summary_view_counts_statuses(store: duckdb.DuckDBPyConnection, bp: Blueprint) -> None:
    tc = _task_criteria(
        bp,
        [
            "The user gives its zip code only when asked.",
            "The user never volunteers its name or zip code.",
            "The agent must check the user.",
        ],
    )
    items = list(tc.items)
    items[1] = items[1].flag("verifier: failed redundancy")  # c2, the conditional one
    save_criteria(
        store, "s", [TaskCriteria(tc.domain, tc.task_id, tc.blueprint_sha256, tuple(items), WRITER)]
    )
    row = store.execute(
        "SELECT tasks, criteria, kept, flagged, dropped, graded_per_task FROM ufs_criteria_summary"
    ).fetchone()
    assert row == (1, 3, 1, 1, 1, 2.0)
    modes = store.execute("SELECT family, mode, criteria, conditional FROM ufs_criteria_modes").fetchall()
    assert modes == [("premature_disclosure", "volunteers_unasked_info", 2, 1)]


def bp_key(bp: Blueprint) -> tuple[str, str]:
    return (bp.domain, bp.task_id)


def test_screened_items_survive_a_round_trip_including_checks(
    store: duckdb.DuckDBPyConnection, bp: Blueprint
) -> None:
    tc = _task_criteria(bp, ["The user gives its zip code only when asked."])
    checked = Screened(tc.items[0].criterion, "kept", (), "blueprint.known_info", {"grounding": True})
    save_criteria(store, "s", [TaskCriteria(tc.domain, tc.task_id, tc.blueprint_sha256, (checked,), WRITER)])
    assert load_criteria(store, "s", domain="retail")[("retail", "0")].items == (checked,)
    assert load_criteria(store, "s", domain="airline") == {}
