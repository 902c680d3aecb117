"""The judge section of `uxlocal report`: four plots drawn from the judge views of a FakeEngine store."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.report import build_report, render_html
from uxlocal.runner import run_suite
from uxlocal.store.db import connect


def _number(prompt: str) -> int:
    match = re.search(r"question (\d+)", prompt)
    assert match, prompt
    return int(match.group(1))


def _script(prep: PreparedRequest) -> dict[str, Any]:
    """Labels: odd items liked (P 0.7-0.9); likert: centred on (i % 5) + 1; pairs: first shown wins."""
    labels = prep.request.constraint.labels  # type: ignore[union-attr]
    i = _number(prep.prompt)
    if "liked" in labels:
        p = 0.7 + 0.02 * (i % 10) if i % 2 else 0.35
        probs = {"liked": p * 0.95, "disliked": (1 - p) * 0.95, "unclear": 0.05}
    elif "A" in labels:
        probs = {"A": 0.8, "B": 0.15, "tie": 0.05}
    else:
        centre = str(i % 5 + 1)
        probs = {k: (0.6 if k == centre else 0.1) for k in labels}
    return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}


def _write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _chat(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]


@pytest.fixture(scope="module")
def judge_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store with a label, a likert and a pairwise judge run (all with human values)."""
    tmp = tmp_path_factory.mktemp("judge-report")
    db = tmp / "judge.duckdb"
    inputs = {
        "ux-liked": [
            {"id": f"l{i}", "conversation": _chat(i), "human": "liked" if i % 3 else "disliked"}
            for i in range(12)
        ],
        "helpfulness": [
            {"id": f"s{i}", "conversation": _chat(i), "human": (i * 2) % 5 + 1} for i in range(10)
        ],
        "preference": [
            {
                "id": f"p{i}",
                "prompt": f"question {i}",
                "response_a": "one",
                "response_b": "two",
                "human": "A" if i % 2 else "B",
            }
            for i in range(6)
        ],
    }
    for rubric, rows in inputs.items():
        engine = FakeEngine(_script)
        config = RunConfig(
            suite="judge",
            suite_config={
                "input": _write(tmp / f"{rubric}.jsonl", rows),
                "rubric": rubric,
                "human_col": "human",
                "bootstrap": 20,
            },
            db=str(db),
            progress=False,
        )
        run_suite(config, pool=ModelPool.from_engines({"judge": engine}))
    return db


def _figures(db: Path) -> dict[str, Any]:
    con = connect(str(db), read_only=True)
    report = build_report(con, db=str(db))
    section = next(s for s in report.sections if s.key == "judge")
    return {f.key: f for f in section.figures}


def _texts(svg: str) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def test_judge_section_draws_reliability_confusion_scatter_and_position_bias_when_all_kinds_ran(
    judge_store: Path,
) -> None:
    figures = _figures(judge_store)
    assert set(figures) == {"judge-reliability", "judge-confusion-0", "judge-scatter", "judge-position-bias"}
    for figure in figures.values():
        assert figure.svg.startswith("<svg") and figure.svg.endswith("</svg>") and figure.caption


def test_judge_confusion_matrix_writes_the_view_counts_when_labels_are_judged(judge_store: Path) -> None:
    figure = _figures(judge_store)["judge-confusion-0"]
    con = connect(str(judge_store), read_only=True)
    counts = con.execute(
        "SELECT human, judge, n FROM judge_confusion c JOIN judge_verdicts v USING (run_id, criterion) "
        "WHERE v.kind = 'label' GROUP BY ALL"
    ).fetchall()
    text = _texts(figure.svg)
    assert "human label" in text and "judge's label" in text
    for _, _, n in counts:
        assert re.search(rf"(^| ){n}( |$)", text)  # every cell's count is written out
    assert sum(n for *_, n in counts) == 12


def test_judge_scatter_has_one_point_per_scored_likert_item(judge_store: Path) -> None:
    figure = _figures(judge_store)["judge-scatter"]
    text = _texts(figure.svg)
    assert "human score (1-5" in text and "judge's expected score (1-5)" in text
    assert "(n=10)" in text  # ten items with a human score, one point each


def test_judge_position_bias_shows_first_position_rate_from_the_view(judge_store: Path) -> None:
    figure = _figures(judge_store)["judge-position-bias"]
    text = _texts(figure.svg)
    assert "P(first shown wins)" in text and "1.00" in text  # the script always picks the first shown
    assert "flip rate" in text


def test_judge_section_appears_in_html_with_its_plots(judge_store: Path) -> None:
    con = connect(str(judge_store), read_only=True)
    html = render_html(build_report(con, db=str(judge_store)))
    for key in ("judge-reliability", "judge-confusion-0", "judge-scatter", "judge-position-bias"):
        assert f'data-plot="{key}"' in html


def test_judge_section_notes_missing_plots_when_only_labels_ran(tmp_path: Path) -> None:
    rows = [
        {"id": f"l{i}", "conversation": _chat(i), "human": "liked" if i % 2 else "disliked"} for i in range(6)
    ]
    config = RunConfig(
        suite="judge",
        suite_config={
            "input": _write(tmp_path / "in.jsonl", rows),
            "rubric": "ux-liked",
            "human_col": "human",
            "bootstrap": 0,
        },
        db=str(tmp_path / "j.duckdb"),
        progress=False,
    )
    run_suite(config, pool=ModelPool.from_engines({"judge": FakeEngine(_script)}))
    con = connect(str(tmp_path / "j.duckdb"), read_only=True)
    section = next(s for s in build_report(con).sections if s.key == "judge")
    assert {f.key for f in section.figures} == {"judge-reliability", "judge-confusion-0"}
    notes = " ".join(section.notes)
    assert "no likert rubric" in notes and "no pairwise rubric" in notes
