"""The bundled sample data: loads cleanly with the default names and covers what the suite needs."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from uxlocal.suites.uxbench.data import (
    SAMPLE_DIR,
    EvalItem,
    JudgeItem,
    Loaded,
    RecoveryItem,
    UXBenchFiles,
    canonical_dimension,
    canonical_scenario,
    canonical_success,
    load_eval,
    load_judge,
    load_recovery,
)

FILES = UXBenchFiles()
Judge = Loaded[JudgeItem]
Evals = Loaded[EvalItem]
Recovery = Loaded[RecoveryItem]


@pytest.fixture(scope="module")
def judge() -> Loaded[JudgeItem]:
    return load_judge(SAMPLE_DIR)


@pytest.fixture(scope="module")
def evals() -> Loaded[EvalItem]:
    return load_eval(SAMPLE_DIR)


@pytest.fixture(scope="module")
def recovery() -> Loaded[RecoveryItem]:
    return load_recovery(SAMPLE_DIR)


def _raw_rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (SAMPLE_DIR / name).read_text(encoding="utf-8").splitlines()]


def test_sample_loads_fully_in_strict_mode(judge: Judge, evals: Evals, recovery: Recovery) -> None:
    assert not judge.quarantine and not evals.quarantine and not recovery.quarantine
    truths = Counter(i.ground_truth for i in judge.items)
    assert truths[-1] >= 40 and truths[1] >= 40
    assert len(evals.items) >= 40 and len(recovery.items) >= 20


def test_sample_mixes_chinese_and_english_roughly_evenly(judge: Judge, evals: Evals,
                                                         recovery: Recovery) -> None:
    for loaded in (judge, evals, recovery):
        share = Counter(i.lang for i in loaded.items)["zh"] / len(loaded.items)
        assert 0.4 <= share <= 0.6
    for truth in (-1, 1):
        assert {i.lang for i in judge.items if i.ground_truth == truth} == {"zh", "en"}


def test_sample_covers_scenarios_dimensions_and_difficulties(judge: Judge, evals: Evals,
                                                             recovery: Recovery) -> None:
    for loaded in (judge, evals, recovery):
        scenarios = {canonical_scenario(i.scenario) for i in loaded.items}
        assert None not in scenarios and len(scenarios) >= 5
    assert len({canonical_scenario(i.scenario) for i in judge.items}) == 7
    bad = [i for i in judge.items if i.ground_truth == -1]
    assert None not in {canonical_dimension(i.failure_dimension) for i in bad}
    assert len({canonical_dimension(i.failure_dimension) for i in bad}) >= 6
    good = [i for i in judge.items if i.ground_truth == 1]
    assert None not in {canonical_success(i.success_dimension) for i in good}
    assert len({canonical_success(i.success_dimension) for i in good}) >= 6
    assert {"easy", "medium", "hard", "very_hard"} <= {i.difficulty for i in judge.items}


def test_sample_dimension_labels_match_row_language(judge: Judge) -> None:
    for item in judge.items:
        label = item.failure_dimension or item.success_dimension or ""
        has_cjk = any("\u4e00" <= ch <= "\u9fff" for ch in label)
        assert has_cjk == (item.lang == "zh"), item.item_id


def test_sample_exercises_alternate_spellings() -> None:
    t1 = _raw_rows(FILES.judge_bad) + _raw_rows(FILES.judge_good)
    assert any("history" in r and "query" in r for r in t1)
    assert any(isinstance(r.get("source_query"), str) for r in t1)
    stored = [r["selected_history"] for r in t1 if isinstance(r.get("selected_history"), str)]
    assert any(s.startswith("[{'") for s in stored) and any(s.startswith('[{"') for s in stored)
    assert any("ground_truth" not in r for r in t1)
    assert sum(r["agent_response_full"].startswith('{"content"') for r in t1) == 2
    t2 = _raw_rows(FILES.eval)
    assert any("messages" not in r for r in t2) and any("messages" in r and "query" not in r for r in t2)


def test_sample_rich_replies_are_extracted(judge: Judge) -> None:
    rich = [i for i in judge.items if i.response_was_rich]
    assert len(rich) == 2 and {i.ground_truth for i in rich} == {-1, 1}
    assert all(not i.response.startswith("{") for i in rich)


def test_sample_conversations_are_distinct_and_short(judge: Judge, evals: Evals, recovery: Recovery) -> None:
    queries = [i.query for i in judge.items] + [i.query for i in evals.items]
    assert len(set(queries)) == len(queries)
    for item in judge.items:
        assert len(item.history) <= 6
        text = sum(len(t.content) for t in item.history) + len(item.query) + len(item.response)
        assert text <= 1200, item.item_id
    for e in evals.items:
        assert len(e.history) <= 6 and sum(len(t.content) for t in e.history) + len(e.query) <= 900
    for r in recovery.items:
        assert len(r.history) <= 6
        assert sum(len(t.content) for t in r.history) + len(r.failed_response) + len(r.user_complaint) <= 900


def test_sample_ids_follow_our_scheme(judge: Judge, evals: Evals, recovery: Recovery) -> None:
    assert all(i.item_id.startswith("ux_sample_judge_") for i in judge.items)
    assert all(i.item_id.startswith("ux_sample_eval_") for i in evals.items)
    assert all(i.item_id.startswith("ux_sample_recovery_") for i in recovery.items)


def test_sample_folder_states_its_license() -> None:
    readme = (SAMPLE_DIR / "README.md").read_text(encoding="utf-8")
    assert "CC0-1.0" in readme and "not" in readme and "uxlocal" in readme
