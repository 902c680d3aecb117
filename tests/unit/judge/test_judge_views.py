"""The agreement views equal the Python reference (uxlocal.stats via report.agreement_statistics)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from uxlocal import stats
from uxlocal.engine.base import PreparedRequest
from uxlocal.store.db import load_views
from uxlocal.suites.judge.report import (
    LABEL_STATS,
    PAIR_STATS,
    SCORE_STATS,
    agreement_statistics,
    verdict_columns,
)

from .conftest import chat, number, write_jsonl

N = 30


def _probs(i: int, labels: list[str]) -> dict[str, float]:
    rng = random.Random(i)
    raw = [rng.random() ** 2 for _ in labels]
    return {label: v / sum(raw) for label, v in zip(labels, raw, strict=True)}


def _compare(db: Path, view: str, kind: str, names: tuple[str, ...]) -> dict[str, Any]:
    con = duckdb.connect(str(db), read_only=True)
    load_views(con, temporary=True)
    cols, *_ = [[d[0] for d in con.execute(f"SELECT * FROM {view}").description]]
    points = dict(zip(cols, con.execute(f"SELECT * FROM {view}").fetchone(), strict=True))
    source = "judge_verdicts WHERE valid AND status = 'ok'" if kind == "pairwise" else "judge_scored"
    cur = con.execute(f"SELECT * FROM {source} ORDER BY item_id")
    rows = [dict(zip([d[0] for d in cur.description], r, strict=True)) for r in cur.fetchall()]
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
    """Check that the report's columns give exactly the numbers the row dicts give.

    The columns are ``verdict_columns``'s; the numbers are compared on every resample and in the
    bootstrap intervals the report prints.
    """
    columns = verdict_columns(con, points["run_id"], kind, points["criterion"], points["judge_role"])
    assert len(columns) == len(rows) > 0
    by_rows, by_columns = agreement_statistics(kind, rows), agreement_statistics(kind, columns)
    clusters = [r["grp"] if r["grp"] is not None else r["source_id"] for r in rows]
    first_seen: dict[Any, int] = {}
    assert columns.values("cluster") == [first_seen.setdefault(c, len(first_seen)) for c in clusters]
    assert stats.bootstrap(
        by_columns[names[0]], len(rows), clusters=columns.column("cluster"), n_resamples=50
    ) == stats.bootstrap(by_rows[names[0]], len(rows), clusters=clusters, n_resamples=50)
    draws = [np.random.default_rng(seed).integers(0, len(rows), len(rows)) for seed in range(5)]
    # the report's path: one bootstrap_many over codes gives each statistic's own bootstrap on the values
    together = stats.bootstrap_many(
        {name: (lambda draw, f=by_columns[name]: f(draw.index)) for name in names},
        len(rows),
        clusters=columns.column("cluster"),
        n_resamples=50,
        seed=3,
    )
    assert together == {
        name: stats.bootstrap(by_rows[name], len(rows), clusters=clusters, n_resamples=50, seed=3)
        for name in names
    }
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

    run_judge(
        {"input": str(write_jsonl(tmp_path / "b.jsonl", rows)), "rubric": "ux-liked", "human_col": "h"}, judge
    )
    points = _compare(tmp_path / "judge.duckdb", "judge_label_agreement", "label", LABEL_STATS)
    assert 0 < points["n"] < N  # abstentions are left out


def test_label_views_equal_python_reference_when_three_classes(tmp_path: Path, run_judge: Any) -> None:
    rubric = tmp_path / "three.toml"
    rubric.write_text(
        'kind = "label"\nquestion = "tone?"\n[[labels]]\nname = "warm"\n[[labels]]\nname = "neutral"\n'
        '[[labels]]\nname = "cold"\n',
        encoding="utf-8",
    )
    labels = ["warm", "neutral", "cold"]
    rows = [{"id": f"c{i:02d}", "conversation": chat(i), "h": labels[(i * 7) % 3]} for i in range(N)]
    def judge(prep: PreparedRequest) -> dict[str, Any]:
        probs = _probs(number(prep.prompt), labels)
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}

    run_judge(
        {"input": str(write_jsonl(tmp_path / "t.jsonl", rows)), "rubric": str(rubric), "human_col": "h"},
        judge,
    )
    points = _compare(
        tmp_path / "judge.duckdb", "judge_label_agreement", "label", ("accuracy", "kappa", "macro_f1")
    )
    assert points["auroc"] is None and points["ece"] is None  # binary-only statistics


def test_score_views_equal_python_reference_with_ties_and_groups(tmp_path: Path, run_judge: Any) -> None:
    rows = [
        {
            "id": f"c{i:02d}",
            "conversation": chat(i),
            "h": float((i * 3) % 5 + 1) + (0.5 if i % 7 == 0 else 0),
            "g": f"g{i % 4}",
        }
        for i in range(N)
    ]
    def judge(prep: PreparedRequest) -> dict[str, Any]:
        i = number(prep.prompt)
        probs = _probs(i // 2, ["1", "2", "3", "4", "5"])  # pairs of items share a score: ties
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}

    run_judge(
        {
            "input": str(write_jsonl(tmp_path / "s.jsonl", rows)),
            "rubric": "helpfulness",
            "human_col": "h",
            "group_col": "g",
        },
        judge,
    )
    _compare(tmp_path / "judge.duckdb", "judge_score_agreement", "likert", SCORE_STATS)


def test_pairwise_views_equal_python_reference(tmp_path: Path, run_judge: Any) -> None:
    rows = [{"id": f"p{i:02d}", "prompt": f"question {i}", "response_a": f"one {i}", "response_b": f"two {i}",
             "pref": ["A", "B", "tie"][(i * 5) % 3]} for i in range(N)]
    def judge(prep: PreparedRequest) -> dict[str, Any]:
        i = number(prep.prompt) * 2 + (prep.prompt.index("one") > prep.prompt.index("two"))
        probs = _probs(i, ["A", "B", "tie"])
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}

    run_judge(
        {"input": str(write_jsonl(tmp_path / "p.jsonl", rows)), "rubric": "preference", "human_col": "pref"},
        judge,
    )
    _compare(tmp_path / "judge.duckdb", "judge_pairwise_agreement", "pairwise", PAIR_STATS)


def test_confusion_and_reliability_views_count_every_scored_verdict(tmp_path: Path, run_judge: Any) -> None:
    rows = [
        {"id": f"c{i:02d}", "conversation": chat(i), "h": "liked" if i % 3 else "disliked"} for i in range(N)
    ]

    def judge(prep: PreparedRequest) -> dict[str, Any]:
        probs = _probs(number(prep.prompt), ["liked", "disliked"])
        return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}
    result, _ = run_judge({"input": str(write_jsonl(tmp_path / "c.jsonl", rows)), "rubric": "ux-liked",
                           "human_col": "h"}, judge)
    con = duckdb.connect(str(tmp_path / "judge.duckdb"), read_only=True)
    assert con.execute("SELECT sum(n) FROM judge_confusion").fetchone()[0] == N
    bins = con.execute("SELECT bin, n FROM judge_reliability").fetchall()
    # confidence in the judge's own verdict >= 0.5
    assert sum(n for _, n in bins) == N and all(5 <= b <= 9 for b, _ in bins)
    con.close()
    assert {"Judge confusion (human -> judge counts)", "Judge reliability diagram (binary labels)"} <= {
        t.title for t in result.tables}


def _label_verdicts(seed: int, labels: list[str], n: int, *, rare: bool) -> list[dict[str, Any]]:
    """Random label verdicts in random item order.

    Scores with ties when binary (none otherwise, as stored); with ``rare``, two human positives
    only, so some resamples hold one human class.
    """
    rng = random.Random(seed)
    binary = len(labels) == 2
    rows = []
    for i in rng.sample(range(n), n):
        human = labels[0] if rare and i < 2 else labels[-1] if rare else rng.choice(labels)
        rows.append({"run_id": "r", "criterion": "c", "judge_role": "judge", "item_id": f"c{i:04d}",
                     "human_label": human, "label": rng.choice(labels),
                     "positive": labels[0] if binary else None,
                     "score": round(rng.random(), 1) if binary else None,
                     "confidence": 0.5 + rng.random() / 2 if binary else None,
                     "grp": None, "source_id": f"c{i:04d}"})
    return rows


def _listed_label_statistics(rows: list[dict[str, Any]], none_seen: set[str]) -> dict[str, Any]:
    """Return the label statistics as the report computed them on Python lists.

    Labels coded by first appearance (human labels first), every resample's values taken as lists.
    """
    codes: dict[Any, int] = {}
    human = [codes.setdefault(r["human_label"], len(codes)) for r in rows]
    label = [codes.setdefault(r["label"], len(codes)) for r in rows]
    positive, binary = codes.get(rows[0]["positive"]), rows[0]["positive"] is not None
    def noted(name: str, value: float | None) -> float | None:
        if value is None:
            none_seen.add(name)
        return value
    def take(values: list[Any], idx: np.ndarray) -> list[Any]:
        return [values[i] for i in idx]
    score, conf = [r["score"] for r in rows], [r["confidence"] for r in rows]
    def auroc(idx: np.ndarray) -> float | None:
        return noted("auroc", stats.auroc([h == positive for h in take(human, idx)], take(score, idx)))
    def ece(idx: np.ndarray) -> float | None:
        return stats.ece(
            take(conf, idx), [a == b for a, b in zip(take(label, idx), take(human, idx), strict=True)]
        )

    return {
        "accuracy": lambda idx: stats.accuracy(take(human, idx), take(label, idx)),
        "kappa": lambda idx: stats.cohen_kappa(take(human, idx), take(label, idx)),
        "macro_f1": lambda idx: stats.macro_f1(take(human, idx), take(label, idx)),
        "auroc": lambda idx: auroc(idx) if binary else None, "ece": lambda idx: ece(idx) if binary else None}


@pytest.mark.parametrize("batch", [None, 37])
@pytest.mark.parametrize(("labels", "rare"), [(["good", "bad"], False), (["good", "bad"], True),
                                              (["warm", "neutral", "cold"], False)])
def test_label_columns_give_the_intervals_of_python_lists(labels: list[str], rare: bool, batch: int | None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The report's lean path prints the numbers of the list-based computation.

    The lean path (Arrow read, int32 codes, numpy takes, statistics from counts) prints the point
    values and bootstrap intervals of the list-based computation with scikit-learn, same seed (to
    the last bits of a double); also when the rows arrive in many Arrow batches, each with its own
    dictionary of labels.
    """
    import pyarrow as pa

    from uxlocal.suites.judge import report
    from uxlocal.suites.judge.report import _on_index

    if batch:
        monkeypatch.setattr(report, "ARROW_BATCH", batch)
    rows = _label_verdicts(len(labels) + rare, labels, 300, rare=rare)
    con = duckdb.connect()
    table = pa.Table.from_pylist(rows, schema=pa.schema(
        [(k, pa.float64() if k in ("score", "confidence") else pa.string()) for k in rows[0]]))
    con.register("judge_scored", table)
    columns = verdict_columns(con, "r", "label", "c", "judge")
    assert columns.column("label").dtype == columns.column("human_label").dtype == np.int32
    assert columns.column("score").dtype == (np.float64 if len(labels) == 2 else object)  # stored NULL: None
    by_item = sorted(rows, key=lambda r: r["item_id"])
    none_seen: set[str] = set()
    lean, listed = agreement_statistics("label", columns), _listed_label_statistics(by_item, none_seen)
    def intervals(functions: dict[str, Any]) -> dict[str, stats.Interval]:
        return stats.bootstrap_many({name: _on_index(functions[name]) for name in LABEL_STATS}, len(by_item),
                                    clusters=columns.column("cluster"), n_resamples=60, seed=5)
    got, expected = intervals(lean), intervals(listed)
    if len(set(columns.values("cluster"))) == len(by_item):  # one verdict per cluster: no codes are held
        assert columns.clusters() is None
        assert got == stats.bootstrap_many(
            {name: _on_index(lean[name]) for name in LABEL_STATS},
            len(by_item),
            clusters=None,
            n_resamples=60,
            seed=5,
        )
    for name in LABEL_STATS:  # the counts' formulas and scikit-learn sum in other orders: equal to ~1e-15
        for part in ("point", "low", "high"):
            mine, reference = getattr(got[name], part), getattr(expected[name], part)
            assert (mine is None) == (reference is None), (name, part)
            assert reference is None or mine == pytest.approx(reference, rel=1e-12, abs=1e-15), (name, part)
    assert all(got[name].low is not None for name in ("accuracy", "kappa", "macro_f1"))
    assert (got["auroc"].low is not None) == (len(labels) == 2)
    assert ("auroc" in none_seen) == rare  # a resample without a human positive: AUROC dropped there
    strings = {name: f(np.arange(len(by_item))) for name, f in agreement_statistics("label", by_item).items()}
    assert strings == {name: got[name].point for name in LABEL_STATS}
    con.close()
