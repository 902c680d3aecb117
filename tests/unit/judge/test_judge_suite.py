"""The judge suite on FakeEngine: verdict rows, likert and pairwise arithmetic, judges, cache, resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine

from .conftest import chat, number, write_jsonl

LIKERT_PROBS = {"1": 0.1, "2": 0.2, "3": 0.3, "4": 0.3, "5": 0.1}


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _label_input(tmp_path: Path, n: int = 6) -> Path:
    return write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": f"c{i}", "conversation": chat(i), "human": "liked" if i % 2 else "disliked"}
            for i in range(n)
        ],
    )


def test_judge_stores_every_label_probability_and_rubric_identity(tmp_path: Path, run_judge: Any) -> None:
    result, engine = run_judge(
        {"input": str(_label_input(tmp_path)), "rubric": "ux-liked", "human_col": "human"}
    )
    rows = _rows(
        tmp_path / "judge.duckdb",
        "SELECT item_id, label, score, label_probs, value FROM verdicts ORDER BY item_id",
    )
    assert len(rows) == 6 and engine.calls == 1
    probs = json.loads(rows[1][3])
    assert set(probs) == {"liked", "disliked", "unclear"}
    assert rows[1][1] == "liked" and rows[1][2] == pytest.approx(0.81)  # renormalized over the two answers
    from uxlocal.suites.judge.rubrics import load_rubric
    assert json.loads(rows[0][4])["rubric"] == load_rubric("ux-liked").sha256()
    assert any(t.title == "Judge agreement with humans (label)" for t in result.tables)


def test_judge_likert_score_is_expected_value_of_label_probabilities(tmp_path: Path, run_judge: Any) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [{"conversation": chat(1), "h": 3}])
    run_judge({"input": str(path), "rubric": "helpfulness", "human_col": "h"},
              lambda p: {"text": "3", "label_probs": LIKERT_PROBS})
    label, score = _rows(tmp_path / "judge.duckdb", "SELECT label, score FROM judge_verdicts")[0]
    assert label in ("3", "4")  # the argmax (a tie here: the first label in scale order wins)
    assert score == pytest.approx(sum(int(k) * p for k, p in LIKERT_PROBS.items()))


def _pair_judge(prep: PreparedRequest) -> dict[str, Any]:
    """Prefers the reply 'strong' (0.7) and, as position bias, adds 0.2 to whatever is shown first."""
    text = prep.prompt
    first_is_strong = text.index("Reply A:") < text.index("strong") < text.index("Reply B:")
    p_first = 0.70 if first_is_strong else 0.50
    probs = {"A": p_first, "B": 0.95 - p_first, "tie": 0.05}
    return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}


def test_judge_pairwise_swap_in_input_flips_reconciled_preference_exactly(
    tmp_path: Path, run_judge: Any
) -> None:
    rows = [{"id": "p", "prompt": "question 1", "response_a": "strong", "response_b": "weak", "pref": "A"}]
    swapped = [{**rows[0], "response_a": "weak", "response_b": "strong", "pref": "B"}]
    run_judge(
        {"input": str(write_jsonl(tmp_path / "a.jsonl", rows)), "rubric": "preference", "human_col": "pref"},
        _pair_judge,
        db=tmp_path / "a.duckdb",
    )
    run_judge({"input": str(write_jsonl(tmp_path / "b.jsonl", swapped)), "rubric": "preference",
               "human_col": "pref"}, _pair_judge, db=tmp_path / "b.duckdb")
    a = _rows(tmp_path / "a.duckdb", "SELECT label, score, label_probs FROM judge_verdicts")[0]
    b = _rows(tmp_path / "b.duckdb", "SELECT label, score, label_probs FROM judge_verdicts")[0]
    assert (a[0], b[0]) == ("A", "B")
    assert a[1] == pytest.approx((0.70 + 0.45) / 2)  # P(strong better), orders averaged
    assert json.loads(a[2])["A"] == pytest.approx(json.loads(b[2])["B"])
    assert json.loads(a[2])["tie"] == pytest.approx(json.loads(b[2])["tie"])
    orders = _rows(
        tmp_path / "a.duckdb", "SELECT name, label FROM verdicts WHERE name LIKE '%:ab' OR name LIKE '%:ba'"
    )
    assert sorted(orders) == [
        ("judge:overall:ab", "A"),
        ("judge:overall:ba", "A"),
    ]  # both pick the first shown
    bias = _rows(
        tmp_path / "a.duckdb",
        "SELECT flip_rate, first_position_rate, agreement FROM judge_pairwise_agreement",
    )
    assert bias == [(1.0, 1.0, 1.0)]


def test_judge_stores_invalid_verdict_with_reason_and_never_guesses(tmp_path: Path, run_judge: Any) -> None:
    def script(prep: PreparedRequest) -> dict[str, Any]:
        if number(prep.prompt) == 2:
            return {"text": "", "finish_reason": "context_window"}
        return {"text": "liked"}
    run_judge({"input": str(_label_input(tmp_path, 3)), "rubric": "ux-liked"}, script)
    rows = _rows(
        tmp_path / "judge.duckdb", "SELECT item_id, valid, label, status FROM judge_verdicts ORDER BY item_id"
    )
    assert rows[2] == ("c2", False, None, "context_window")
    counts = dict(_rows(tmp_path / "judge.duckdb", "SELECT outcome, n FROM judge_counts"))
    assert counts == {"liked": 2, "invalid: context_window": 1}


def test_judge_runs_several_judges_and_names_each(tmp_path: Path, run_judge: Any) -> None:
    from uxlocal.config import RunConfig
    from uxlocal.engine.pool import ModelPool
    from uxlocal.runner import run_suite
    from uxlocal.suites.judge.suite import JudgeSuite

    first = FakeEngine(lambda p: "liked", identity="judge-one")
    second = FakeEngine(lambda p: "liked" if number(p.prompt) % 2 else "disliked", identity="judge-two")
    pool = ModelPool.from_engines({"judge": first, "judge2": second})
    run = RunConfig(
        suite="judge",
        suite_config={"input": str(_label_input(tmp_path, 4)), "rubric": "ux-liked"},
        models={"judge": "judge-one", "judge2": "judge-two"},
        db=str(tmp_path / "j.duckdb"),
        progress=False,
    )
    run_suite(run, pool=pool, suite=JudgeSuite())
    per_judge = _rows(
        tmp_path / "j.duckdb", "SELECT judge_role, count(*) FROM judge_verdicts GROUP BY 1 ORDER BY 1"
    )
    assert per_judge == [("judge", 4), ("judge2", 4)]
    assert _rows(tmp_path / "j.duckdb", "SELECT n, label_agreement FROM judge_interjudge") == [(4, 0.5)]
    assert _rows(tmp_path / "j.duckdb", "SELECT count(*), max(n_judges) FROM judge_panel") == [(4, 2)]


def test_judge_rerun_makes_zero_engine_calls(tmp_path: Path, run_judge: Any) -> None:
    options = {"input": str(_label_input(tmp_path)), "rubric": "ux-liked", "human_col": "human"}
    run_judge(options)
    again, engine = run_judge(options, fresh=True)
    assert engine.calls == 0 and again.stats.cache_hits == 6
    assert _rows(tmp_path / "judge.duckdb", "SELECT count(*) FROM judge_verdicts") == [
        (12,)
    ]  # two runs, 6 each


def test_judge_resume_after_crash_leaves_no_duplicate_verdicts(tmp_path: Path, run_judge: Any) -> None:
    options = {"input": str(_label_input(tmp_path)), "rubric": "ux-liked"}
    first, _ = run_judge(options)
    db = tmp_path / "judge.duckdb"
    with duckdb.connect(str(db)) as con:  # as a SIGKILL leaves it: two episodes without their 'done' row
        con.execute("DELETE FROM episodes WHERE item_id IN ('c1', 'c4')")
    again, engine = run_judge(options)
    assert again.run_id == first.run_id and again.resumed
    assert engine.calls == 0 and again.stats.episodes_done == 2
    assert _rows(str(db), "SELECT count(*), count(DISTINCT item_id) FROM verdicts") == [(6, 6)]


def test_judge_asks_every_criterion_of_a_conversation_in_one_step(tmp_path: Path, run_judge: Any) -> None:
    rubric = tmp_path / "two.toml"
    rubric.write_text(
        'kind = "likert"\nquestion = "q"\nscale = 3\n[anchors]\n1 = "bad"\n2 = "ok"\n3 = "good"\n'
        '[[criteria]]\nname = "clear"\nquestion = "Is it clear?"\n'
        '[[criteria]]\nname = "kind"\nquestion = "Is it kind?"\n',
        encoding="utf-8",
    )
    _, engine = run_judge({"input": str(_label_input(tmp_path, 3)), "rubric": str(rubric)}, lambda p: "2")
    prompts = [p.prompt for p in engine.requests]
    assert len(prompts) == 6
    # conversation first, criterion last: the two prompts of one conversation differ only at the end
    assert prompts[0].split("Question:")[0] == prompts[1].split("Question:")[0]
    assert number(prompts[0]) == number(prompts[1])


def test_judge_each_assistant_turn_unit_judges_turn_prefixes(tmp_path: Path, run_judge: Any) -> None:
    rubric = tmp_path / "turns.toml"
    rubric.write_text('kind = "label"\nquestion = "ok?"\nunit = "each_assistant_turn"\n'
                      '[[labels]]\nname = "yes"\n[[labels]]\nname = "no"\n', encoding="utf-8")
    convo = chat(1) + [{"role": "user", "content": "more"}, {"role": "assistant", "content": "final"}]
    _, engine = run_judge(
        {
            "input": str(write_jsonl(tmp_path / "t.jsonl", [{"id": "x", "conversation": convo}])),
            "rubric": str(rubric),
        },
        lambda p: "yes",
    )
    assert sorted(r[0] for r in _rows(tmp_path / "judge.duckdb", "SELECT item_id FROM judge_verdicts")) == [
        "x@t1",
        "x@t3",
    ]
    assert "final" not in engine.requests[0].prompt and "final" in engine.requests[1].prompt
