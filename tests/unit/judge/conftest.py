"""Helpers for judge tests: input files, a judge whose answers depend on the prompt, a runner."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import RunResult, run_suite


def chat(i: int) -> list[dict[str, str]]:
    """Return a two-turn conversation whose user text carries its number."""
    return [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def number(prompt: str) -> int:
    """Return the conversation number a judge prompt is about."""
    match = re.search(r"question (\d+)", prompt)
    assert match, prompt
    return int(match.group(1))


def label_judge(prep: PreparedRequest) -> dict[str, Any]:
    """Odd conversations look good (P(liked) 0.8 + a little), even ones bad; 5% on 'unclear'."""
    i = number(prep.prompt)
    p = 0.8 + 0.01 * (i % 10) if i % 2 else 0.3 - 0.01 * (i % 10)
    return {"text": "liked" if p > 0.5 else "disliked",
            "label_probs": {"liked": p * 0.95, "disliked": (1 - p) * 0.95, "unclear": 0.05}}


@pytest.fixture
def run_judge(tmp_path: Path) -> Callable[..., tuple[RunResult, FakeEngine]]:
    """Run the judge suite on a FakeEngine answering with ``script``; returns the result and the engine."""

    def run(options: dict[str, Any], script: Callable[[PreparedRequest], Any] = label_judge, *,
            db: Path | None = None, roles: tuple[str, ...] = ("judge",), engine: FakeEngine | None = None,
            **run_options: Any) -> tuple[RunResult, FakeEngine]:
        engine = engine or FakeEngine(script)
        pool = ModelPool.from_engines({role: engine for role in roles})
        options = {"bootstrap": 50, **options}
        config = RunConfig(suite="judge", suite_config=options, db=str(db or tmp_path / "judge.duckdb"),
                           progress=False, **run_options)
        return run_suite(config, pool=pool), engine

    return run
