"""The bundled judge-training sample: what its generator writes, and that it is learnable, not by length."""

from __future__ import annotations

import json
import runpy
from collections import Counter
from typing import Any

from uxlocal import paths
from uxlocal.suites.judge.inputs import Columns, load_items
from uxlocal.suites.judge.rubrics import load_rubric
from uxlocal.suites.judge.suite import human_parser

FOLDER = paths.data_dir() / "judge" / "train"


def _generator() -> dict[str, Any]:
    return runpy.run_path(str(FOLDER / "make_sample.py"))


def _rows() -> list[dict[str, Any]]:
    lines = (FOLDER / "feedback.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_judge_train_sample_equals_what_its_generator_writes() -> None:
    assert _generator()["build"]() == _rows()


def test_judge_train_sample_has_both_thumbs_in_every_topic() -> None:
    rows = _rows()
    assert len(rows) >= 400
    per_topic = Counter((r["topic"], r["thumb"]) for r in rows)
    topics = {r["topic"] for r in rows}
    assert len(topics) >= 6
    assert all(per_topic[(t, "liked")] >= 20 and per_topic[(t, "disliked")] >= 20 for t in topics)
    assert {r["reason"] for r in rows if r["thumb"] == "disliked"} == {"refusal", "off_topic", "padded"}


def test_judge_train_sample_loads_with_ux_liked_and_topic_groups() -> None:
    rubric = load_rubric("ux-liked")
    loaded = load_items(str(FOLDER / "feedback.jsonl"), Columns(human="thumb", group="topic"),
                        human=human_parser(rubric))
    assert len(loaded.items) == len(_rows()) and not loaded.quarantine
    assert Counter(i.human for i in loaded.items) == {"liked": 240, "disliked": 240}


def test_judge_train_sample_reply_length_alone_predicts_thumbs_poorly() -> None:
    accuracy = _generator()["length_baseline"](_rows())
    assert 0.5 <= accuracy <= 0.65  # README reports 0.608


def test_length_baseline_finds_a_perfect_threshold_when_length_decides() -> None:
    rows = [
        {"conversation": [{"content": "x" * n}], "thumb": "liked" if n > 5 else "disliked"}
        for n in range(1, 11)
    ]
    assert _generator()["length_baseline"](rows) == 1.0
