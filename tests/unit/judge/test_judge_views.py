"""The agreement views equal the Python reference (uxlocal.stats via report.agreement_statistics)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from uxlocal.engine.base import PreparedRequest
from uxlocal.store.db import load_views
from uxlocal import stats
from uxlocal.suites.judge.report import LABEL_STATS, PAIR_STATS, SCORE_STATS, agreement_statistics, verdict_columns

from .conftest import chat, number, write_jsonl

N = 30


def _probs(i: int, labels: list[str]) -> dict[str, float]:
    rng = random.Random(i)
    raw = [rng.random() ** 2 for _ in labels]
    return {label: v / sum(raw) for label, v in zip(labels, raw)}


def _compare(db: Path, view: str, kind: str, names: tuple[str, ...]) -> dict[str, Any]:
    con = duckdb.connect(str(db), read_only=True)
    load_views(con, temporary=True)
    cols, *_ = [[d[0] for d in con.execute(f"SELECT * FROM {view}").description]]
    points = dict(zip(cols, con.execute(f"SELECT * FROM {view}").fetchone()))
    source = "judge_verdicts WHERE valid AND status = 'ok'" if kind == "pairwise" else "judge_scored"
    cur = con.execute(f"SELECT * FROM {source} ORDER BY item_id")
    rows = [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]
    functions = agreement_statistics(kind, rows)
    for name in names:
        expected = functions[name](np.arange(len(rows)))
        assert expected is not None, name
        assert points[name] == pytest.approx(expected, abs=1e-9), name
    _columns_equal_rows(con, points, kind, names, rows)
    con.close()
    return points


def _columns_equal_rows(con: Any, points: dict[str, Any], kind: str, names: tuple[str, ...],
                        rows: list[dict[str, Any]]) -> None:
    """The report's columns (``verdict_columns``) give exactly the numbers the row dicts give,
    on every resample and in the bootstrap intervals the report prints."""
    columns = verdict_columns(con, points["run_id"], kind, points["criterion"], points["judge_role"])
    assert len(columns) == len(rows) > 0
    by_rows, by_columns = agreement_statistics(kind, rows), agreement_statistics(kind, columns)
    clusters = [r["grp"] if r["grp"] is not None else r["source_id"] for r in rows]
    first_seen: dict[Any, int] = {}
    assert columns.values("cluster") == [first_seen.setdefault(c, len(first_seen)) for c in clusters]
    assert (stats.bootstrap(by_columns[names[0]], len(rows), clusters=columns.column("cluster"), n_resamples=50)
            == stats.bootstrap(by_rows[names[0]], len(rows), clusters=clusters, n_resamples=50))
    draws = [np.random.default_rng(seed).integers(0, len(rows), len(rows)) for seed in range(5)]
    # the report's path: one bootstrap_many over codes gives each statistic's own bootstrap on the values
    together = stats.bootstrap_many({name: (lambda draw, f=by_columns[name]: f(draw.index)) for name in names},
                                    len(rows), clusters=columns.column("cluster"), n_resamples=50, seed=3)
    assert together == {name: stats.bootstrap(by_rows[name], len(rows), clusters=clusters, n_resamples=50, seed=3)
                        for name in names}
    for name in names:
        assert [by_columns[name](d) for d in draws] == [by_rows[name](d) for d in draws], name
        assert (stats.bootstrap(by_columns[name], len(rows), clusters=clusters, n_resamples=50)
                == stats.bootstrap(by_rows[name], len(rows), clusters=clusters, n_resamples=50)), name


def test_label_views_equal_python_reference_when_binary(tmp_path: Path, run_judge: Any) -> None:
    rows = [{"id": f"c{i:02d}", "conversation": chat(i), "h": random.Random(-i).choice(["liked", "disliked"])}
            for i in range(N)]
    def judge(prep: PreparedRequest) -> dict[str, Any]:
        probs = _probs(number(prep.prompt), ["liked", "disliked", "unclear"])
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}
    run_judge({"input": str(write_jsonl(tmp_path / "b.jsonl", rows)), "rubric": "ux-liked", "human_col": "h"}, judge)
    points = _compare(tmp_path / "judge.duckdb", "judge_label_agreement", "label", LABEL_STATS)
    assert 0 < points["n"] < N  # abstentions are left out


def test_label_views_equal_python_reference_when_three_classes(tmp_path: Path, run_judge: Any) -> None:
    rubric = tmp_path / "three.toml"
    rubric.write_text('kind = "label"\nquestion = "tone?"\n[[labels]]\nname = "warm"\n[[labels]]\nname = "neutral"\n'
                      '[[labels]]\nname = "cold"\n', encoding="utf-8")
    labels = ["warm", "neutral", "cold"]
    rows = [{"id": f"c{i:02d}", "conversation": chat(i), "h": labels[(i * 7) % 3]} for i in range(N)]
    def judge(prep: PreparedRequest) -> dict[str, Any]:
        probs = _probs(number(prep.prompt), labels)
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}
    run_judge({"input": str(write_jsonl(tmp_path / "t.jsonl", rows)), "rubric": str(rubric), "human_col": "h"}, judge)
    points = _compare(tmp_path / "judge.duckdb", "judge_label_agreement", "label", ("accuracy", "kappa", "macro_f1"))
    assert points["auroc"] is None and points["ece"] is None  # binary-only statistics


def test_score_views_equal_python_reference_with_ties_and_groups(tmp_path: Path, run_judge: Any) -> None:
    rows = [{"id": f"c{i:02d}", "conversation": chat(i), "h": float((i * 3) % 5 + 1) + (0.5 if i % 7 == 0 else 0),
             "g": f"g{i % 4}"} for i in range(N)]
    def judge(prep: PreparedRequest) -> dict[str, Any]:
        i = number(prep.prompt)
        probs = _probs(i // 2, ["1", "2", "3", "4", "5"])  # pairs of items share a score: ties
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}
    run_judge({"input": str(write_jsonl(tmp_path / "s.jsonl", rows)), "rubric": "helpfulness", "human_col": "h",
               "group_col": "g"}, judge)
    _compare(tmp_path / "judge.duckdb", "judge_score_agreement", "likert", SCORE_STATS)


def test_pairwise_views_equal_python_reference(tmp_path: Path, run_judge: Any) -> None:
    rows = [{"id": f"p{i:02d}", "prompt": f"question {i}", "response_a": f"one {i}", "response_b": f"two {i}",
             "pref": ["A", "B", "tie"][(i * 5) % 3]} for i in range(N)]
    def judge(prep: PreparedRequest) -> dict[str, Any]:
        i = number(prep.prompt) * 2 + (prep.prompt.index("one") > prep.prompt.index("two"))
        probs = _probs(i, ["A", "B", "tie"])
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}
    run_judge({"input": str(write_jsonl(tmp_path / "p.jsonl", rows)), "rubric": "preference", "human_col": "pref"},
              judge)
    _compare(tmp_path / "judge.duckdb", "judge_pairwise_agreement", "pairwise", PAIR_STATS)


def test_confusion_and_reliability_views_count_every_scored_verdict(tmp_path: Path, run_judge: Any) -> None:
    rows = [{"id": f"c{i:02d}", "conversation": chat(i), "h": "liked" if i % 3 else "disliked"} for i in range(N)]
    def judge(prep: PreparedRequest) -> dict[str, Any]:
        probs = _probs(number(prep.prompt), ["liked", "disliked"])
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}
    result, _ = run_judge({"input": str(write_jsonl(tmp_path / "c.jsonl", rows)), "rubric": "ux-liked",
                           "human_col": "h"}, judge)
    con = duckdb.connect(str(tmp_path / "judge.duckdb"), read_only=True)
    assert con.execute("SELECT sum(n) FROM judge_confusion").fetchone()[0] == N
    bins = con.execute("SELECT bin, n FROM judge_reliability").fetchall()
    assert sum(n for _, n in bins) == N and all(5 <= b <= 9 for b, _ in bins)  # confidence in own verdict >= 0.5
    con.close()
    assert {"Judge confusion (human -> judge counts)", "Judge reliability diagram (binary labels)"} <= {
        t.title for t in result.tables}
