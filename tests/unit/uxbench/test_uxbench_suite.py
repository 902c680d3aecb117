"""The UXBench suite on a scripted engine: episodes, stored verdicts, SQL views == Python metrics."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uxlocal.config import RunConfig
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.errors import InputError
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.suites.uxbench import metrics
from uxlocal.suites.uxbench.data import SAMPLE_DIR
from uxlocal.suites.uxbench.suite import uxbench_tables


def _digest(prepared: PreparedRequest) -> int:
    return int(hashlib.sha256(prepared.prompt.encode()).hexdigest()[:8], 16)


def judge_script(prepared: PreparedRequest) -> Any:
    """Deterministic pseudo-judge: label and probabilities from the prompt hash; 1 in 9 cut off."""
    constraint = prepared.request.constraint
    h = _digest(prepared)
    if isinstance(constraint, Choice):
        good, bad = constraint.labels
        if h % 9 == 0:
            return {"text": "", "finish_reason": "length"}
        p = (h % 1000) / 1000
        return {"text": good if p >= 0.5 else bad, "label_probs": {good: p, bad: 1 - p}}
    if isinstance(constraint, JsonSchema):
        verdict = "good" if h % 2 else "bad"
        if "好" in prepared.prompt or "差" in prepared.prompt:
            verdict = "好" if h % 2 else "差"
        if h % 7 == 0:
            return {"text": '{"reasoning": "the reply', "finish_reason": "length"}
        return json.dumps({"reasoning": "short", "verdict": verdict}, ensure_ascii=False)
    # candidate: empty reply for 1 in 6 prompts (never judged), else a short reply
    return "" if h % 6 == 0 else f"reply {h % 97}"


def pool() -> ModelPool:
    judge = FakeEngine(judge_script, identity="fake-judge")
    candidate = FakeEngine(judge_script, identity="fake-candidate")
    return ModelPool.from_engines({"judge": judge, "candidate": candidate})


def run(tmp_path: Path, limit: int | None = None, **config: Any) -> Any:
    cfg = RunConfig(suite="uxbench", suite_config={"bootstrap": 200, **config}, limit=limit,
                    db=str(tmp_path / "ux.duckdb"), progress=False)
    return run_suite(cfg, pool=pool())


def _python_t1(con: duckdb.DuckDBPyConnection, run_id: str) -> list[metrics.JudgeVerdict]:
    """T1 rows rebuilt from verdicts + items with plain Python (not the views)."""
    items = {r[0]: json.loads(r[1]) for r in con.execute(
        "SELECT item_id, data FROM items WHERE run_id = ? AND task = 'judge'", [run_id]).fetchall()}
    out = []
    for item_id, label, valid, score in con.execute(
        "SELECT item_id, label, valid, score FROM verdicts WHERE run_id = ? AND name = 't1'", [run_id]
    ).fetchall():
        data = items[item_id]
        pred = None if not valid else (1 if label == "good" else -1)
        out.append(metrics.JudgeVerdict(item_id, data["ground_truth"], pred, score, data["scenario"],
                                        data["difficulty"], data["dimension"]))
    return out


def _python_replies(con: duckdb.DuckDBPyConnection, run_id: str, name: str) -> list[metrics.ReplyVerdict]:
    out = []
    for item_id, label, valid, score, data in con.execute(
            "SELECT v.item_id, v.label, v.valid, v.score, i.data FROM verdicts v JOIN items i "
            "ON i.run_id = v.run_id AND i.item_id = v.item_id WHERE v.run_id = ? AND v.name = ?",
            [run_id, name]).fetchall():
        d = json.loads(data)
        verdict = None if not valid else (1 if label == "good" else -1)
        out.append(
            metrics.ReplyVerdict(item_id, verdict, score, d["scenario"], d["difficulty"], d["dimension"])
        )
    return out


def _close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, abs_tol=1e-9))


def test_every_item_gets_one_episode_and_one_verdict(tmp_path: Path) -> None:
    result = run(tmp_path)
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    counts = dict(con.execute("SELECT task, count(*) FROM items WHERE run_id = ? GROUP BY task",
                              [result.run_id]).fetchall())
    assert counts == {"judge": 80, "eval": 40, "recovery": 20}
    verdicts = dict(con.execute("SELECT name, count(*) FROM verdicts WHERE run_id = ? GROUP BY name",
                                [result.run_id]).fetchall())
    assert verdicts == {"t1": 80, "t2": 40, "t3": 20}
    dup = con.execute("SELECT count(*) FROM (SELECT item_id FROM verdicts WHERE run_id = ? "
                      "GROUP BY item_id HAVING count(*) > 1)", [result.run_id]).fetchone()[0]
    assert dup == 0 and result.stats.episodes_failed == 0
    judges = {r[0] for r in con.execute("SELECT DISTINCT judge_model FROM verdicts WHERE run_id = ?",
                                        [result.run_id]).fetchall()}
    assert None not in judges  # every result row names its judge


def test_sql_views_equal_python_metrics(tmp_path: Path) -> None:
    result = run(tmp_path)
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    rows = _python_t1(con, result.run_id)
    acc = metrics.judge_accuracy(rows)
    assert acc.good.n_invalid + acc.bad.n_invalid > 0  # the script cuts some verdicts off
    t1 = con.execute(
        "SELECT good_acc, bad_acc, avg_acc, avg_acc_strict, good_invalid, bad_invalid, auroc, ece "
        "FROM uxbench_t1 WHERE run_id = ?",
        [result.run_id],
    ).fetchone()
    expected = (
        acc.good_acc,
        acc.bad_acc,
        acc.avg_acc,
        acc.avg_acc_strict,
        acc.good.n_invalid,
        acc.bad.n_invalid,
        metrics.auroc(rows),
        metrics.expected_calibration_error(rows),
    )
    assert all(_close(a, b) for a, b in zip(t1, expected, strict=True)), (t1, expected)
    for task, name, fn in (("eval", "t2", metrics.good_rate), ("recovery", "t3", metrics.recovery_rate)):
        replies = _python_replies(con, result.run_id, name)
        rate = fn(replies)
        got = con.execute("SELECT n, n_valid, n_good, n_invalid, rate, rate_strict FROM uxbench_rates "
                          "WHERE run_id = ? AND task = ?", [result.run_id, task]).fetchone()
        assert got[:4] == (rate.n, rate.n_valid, rate.n_good, rate.n_invalid)
        assert _close(got[4], rate.rate) and _close(got[5], rate.rate_strict)
        for by in ("scenario", "difficulty", "dimension"):
            py = {k: v.rate for k, v in metrics.breakdown(replies, by, metrics.good_rate).items()}
            sql = dict(con.execute("SELECT key, value FROM uxbench_breakdown WHERE run_id = ? AND task = ? "
                                   "AND facet = ?", [result.run_id, task, by]).fetchall())
            assert set(py) == set(sql) and all(_close(py[k], sql[k]) for k in py)
    for by in ("scenario", "difficulty", "dimension"):
        py = {k: v.avg_acc for k, v in metrics.breakdown(rows, by, metrics.judge_accuracy).items()}
        sql = dict(con.execute("SELECT key, value FROM uxbench_breakdown WHERE run_id = ? AND task = 'judge' "
                               "AND facet = ?", [result.run_id, by]).fetchall())
        assert set(py) == set(sql) and all(_close(py[k], sql[k]) for k in py)


def test_empty_replies_are_not_judged_and_count_invalid(tmp_path: Path) -> None:
    result = run(tmp_path, tasks="eval")
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    not_judged = con.execute(
        "SELECT count(*) FROM uxbench_reply_rows WHERE run_id = ? AND status = 'no_reply'", [result.run_id]
    ).fetchone()[0]
    empty = con.execute(
        "SELECT count(*) FROM turns WHERE run_id = ? AND model_role = 'candidate' AND content = ''",
        [result.run_id],
    ).fetchone()[0]
    assert not_judged == empty > 0
    judge_calls = con.execute("SELECT count(*) FROM run_generations WHERE run_id = ? AND tag = 't2_judge'",
                              [result.run_id]).fetchone()[0]
    assert judge_calls == 40 - empty


def test_report_has_intervals_containing_the_point(tmp_path: Path) -> None:
    result = run(tmp_path)
    titles = [t.title for t in result.tables]
    assert (
        any("T1" in t for t in titles)
        and any("T2" in t for t in titles)
        and any("breakdown" in t for t in titles)
    )
    t1 = result.tables[0]
    for row in t1.rows[:3]:  # Good-Acc, Bad-Acc, Avg-Acc
        value, interval = float(row[1]), row[2]
        low, high = (float(x) for x in interval.strip("[]").split(","))
        assert low - 0.05 <= value <= high + 0.05


def test_reason_mode_stores_rationales(tmp_path: Path) -> None:
    result = run(tmp_path, tasks="judge", judge_mode="reason")
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    modes = con.execute(
        "SELECT DISTINCT mode FROM uxbench_t1_rows WHERE run_id = ?", [result.run_id]
    ).fetchall()
    assert modes == [("reason",)]
    valid, with_reason = con.execute("SELECT count(*) FILTER (WHERE valid), count(rationale) FROM verdicts "
                                     "WHERE run_id = ?", [result.run_id]).fetchone()
    assert valid == with_reason > 0


def test_limit_takes_both_classes_for_t1(tmp_path: Path) -> None:
    result = run(tmp_path, limit=6, tasks="judge")
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    n_good, n_bad = con.execute(
        "SELECT n_good, n_bad FROM uxbench_t1 WHERE run_id = ?", [result.run_id]
    ).fetchone()
    assert (n_good, n_bad) == (3, 3)


def test_history_is_trimmed_when_asked(tmp_path: Path) -> None:
    engine = FakeEngine(judge_script, identity="fake-judge")
    cfg = RunConfig(suite="uxbench", suite_config={"tasks": "judge", "max_history_turns": 0, "bootstrap": 0},
                    db=str(tmp_path / "ux.duckdb"), progress=False)
    result = run_suite(cfg, pool=ModelPool.from_engines({"judge": engine}))
    assert all("(none)" in p.prompt or "（无）" in p.prompt for p in engine.requests)
    assert any("last 0 history turns" in n for n in result.notes)


def test_bad_rows_error_or_quarantine(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    path = data / "uxbench_task2_eval_4900.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = '{"cid": "broken", "messages": "not a list"'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"uxbench_task2_eval_4900.jsonl:3"):
        run(tmp_path, data=str(data), tasks="eval")
    result = run(tmp_path, data=str(data), tasks="eval", skip_bad_rows=True)
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    q = con.execute(
        "SELECT task, source_line, reason FROM quarantine WHERE run_id = ?", [result.run_id]
    ).fetchall()
    assert len(q) == 1 and q[0][:2] == ("eval", 3) and q[0][2]
    assert con.execute("SELECT n FROM uxbench_rates WHERE run_id = ?", [result.run_id]).fetchone()[0] == 39
    assert any("quarantined" in n for n in result.notes)


def test_unknown_task_and_missing_candidate_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown task"):
        run(tmp_path, tasks="judge,ranking")
    judge_only = ModelPool.from_engines({"judge": FakeEngine(judge_script)})
    cfg = RunConfig(
        suite="uxbench", suite_config={"tasks": "eval"}, db=str(tmp_path / "x.duckdb"), progress=False
    )
    with pytest.raises(InputError, match="candidate"):
        run_suite(cfg, pool=judge_only)


def test_rerun_is_served_from_cache_with_same_tables(tmp_path: Path) -> None:
    first = run(tmp_path)
    second = run(tmp_path)
    assert second.stats.engine_calls == 0 and second.resumed
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    again = uxbench_tables(con, first.run_id, n_boot=200)
    assert [t.rows for t in again] == [t.rows for t in first.tables]


_MACROS: list[duckdb.DuckDBPyConnection] = []


def _macro_con() -> duckdb.DuckDBPyConnection:
    """One in-memory store with the views and macros loaded (shared by the rounding tests)."""
    if not _MACROS:
        _MACROS.append(connect(":memory:"))
    return _MACROS[0]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2000), st.integers(1, 2000), st.integers(0, 2000), st.integers(1, 2000))
def test_py_round_macro_matches_python(a: int, b: int, c: int, d: int) -> None:
    good, bad = min(a, b) / b * 100, min(c, d) / d * 100
    got = _macro_con().execute("SELECT py_round(?::DOUBLE, 2), py_round(?::DOUBLE, 1), "
                      "py_round((py_round(?::DOUBLE, 2) + py_round(?::DOUBLE, 2)) / 2, 1)",
                      [good, good, good, bad]).fetchone()
    assert got == (round(good, 2), round(good, 1), metrics.published_avg(good, bad))


@pytest.mark.parametrize("x", [75.25, 3.125, 0.125, 2.675, 75.05, 89.4789, 0.0, 100.0])
def test_py_round_ties(x: float) -> None:
    assert _macro_con().execute(
        "SELECT py_round(?::DOUBLE, 1), py_round(?::DOUBLE, 2)", [x, x]
    ).fetchone() == (round(x, 1), round(x, 2))


def test_judge_prompts_share_the_conversation_prefix_when_one_item_gets_k_replies_judged() -> None:
    # issue 17: UXBench asks one question per judge call, and the question (instruction and
    # checklist) is the same for every item, so it stays first; what differs between judge calls on
    # one conversation is the reply, which comes after the whole conversation
    from prefix_layout import assert_conversation_then_question

    from uxlocal.episode import EpisodeSpec
    from uxlocal.rollout import Scheduler
    from uxlocal.suites.uxbench.data import load_eval
    from uxlocal.suites.uxbench.prompts import render_transcript
    from uxlocal.suites.uxbench.suite import UXBenchConfig, eval_program

    item = next(i for i in load_eval(SAMPLE_DIR).items if len(i.history) >= 2)
    replies = iter(["first candidate reply, short", "second candidate reply, longer and different"])
    candidate = FakeEngine(lambda p: next(replies), identity="c")
    judge = FakeEngine(lambda p: {"text": p.request.constraint.labels[0]}, identity="j")
    specs = [EpisodeSpec(f"e{k}", lambda ctx: eval_program(ctx, item, UXBenchConfig()), item_id=item.item_id)
             for k in range(2)]
    Scheduler(ModelPool.from_engines({"judge": judge, "candidate": candidate}), run_id="x").run(specs)
    conversation = [*render_transcript(item.history, item.lang).splitlines(), item.query]
    assert_conversation_then_question([p.prompt for p in judge.requests], conversation,
                                      ["first candidate reply", "second candidate reply"])


GRM_CASES = [("bad", 0.7), ("bad", 0.5), ("good", 0.3), ("good", 0.9)]
"""(greedy text, P(good)) of scripted T2/T3 verdicts: the text and the probabilities disagree on purpose
in the first three rows; 0.5 is a tie, which the GRM rule gives to good."""


def _grm_script(prepared: PreparedRequest) -> Any:
    constraint = prepared.request.constraint
    if not isinstance(constraint, Choice):
        return "a reply"  # the candidate: never empty, so every item is judged
    good, bad = constraint.labels
    text, p = GRM_CASES[_digest(prepared) % len(GRM_CASES)]
    return {"text": good if text == "good" else bad, "label_probs": {good: p * 0.9, bad: (1 - p) * 0.9}}


@pytest.mark.parametrize("scoring, good_cases", [
    ("label", {2, 3}),  # the greedy text decides
    ("grm", {0, 1, 3}),  # P(good) >= 0.5 decides, the tie included
])
def test_reply_scoring_grm_reads_the_verdict_from_label_probabilities(tmp_path: Path, scoring: str,
                                                                      good_cases: set[int]) -> None:
    judge = FakeEngine(_grm_script, identity="fake-judge")
    pools = ModelPool.from_engines(
        {"judge": judge, "candidate": FakeEngine(_grm_script, identity="fake-candidate")}
    )
    cfg = RunConfig(
        suite="uxbench",
        suite_config={"bootstrap": 0, "tasks": "eval,recovery", "reply_scoring": scoring},
        db=str(tmp_path / "ux.duckdb"),
        progress=False,
    )
    result = run_suite(cfg, pool=pools)
    cases = {"t2": [], "t3": []}  # type: dict[str, list[int]]
    for prepared in judge.requests:
        cases[prepared.request.tag[:2]].append(_digest(prepared) % len(GRM_CASES))
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    for task, name in (("eval", "t2"), ("recovery", "t3")):
        n, n_valid, n_good = con.execute(
            "SELECT n, n_valid, n_good FROM uxbench_rates WHERE run_id = ? AND task = ?",
            [result.run_id, task],
        ).fetchone()
        assert n == n_valid == len(cases[name]) > 0
        assert n_good == sum(c in good_cases for c in cases[name])
    scores = con.execute(
        "SELECT DISTINCT round(score, 6) FROM verdicts WHERE run_id = ?", [result.run_id]
    ).fetchall()
    # score = P(good) / (P(good) + P(bad)) in both modes
    assert {s for (s,) in scores} <= {0.7, 0.5, 0.3, 0.9}


def test_reply_scoring_is_part_of_the_run_identity(tmp_path: Path) -> None:
    ids = {run(tmp_path, tasks="eval", reply_scoring=mode).run_id for mode in ("label", "grm")}
    assert len(ids) == 2
