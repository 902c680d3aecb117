"""A learned judge on the embedded model through vLLM (issue 30), its held-out numbers repeated.

``uxlocal judge train`` on the bundled feedback sample (a short training), then ``uxlocal judge
--judge-adapter --heldout-of`` in a fresh store prints the held-out numbers ``judge train`` printed:
the same prompts through the same engine path (vLLM with LoRA; our CPU kernels or the split of mixed
batches on a CPU build), so the same numbers to the bit (issue 44: vLLM's step batches no longer
depend on grammar-compile timing, ``engine.vllm_load.compile_grammars_inline``).

Short training on a 72-row slice of the sample on purpose (a few minutes on 2 cores): the figures of
the full training are the benchmark's (benchmarks/judge_train.py), not this test's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from uxlocal import paths
from uxlocal.cli import cli
from uxlocal.suites.judge import train as jt
from uxlocal.suites.judge.report import verdict_rows

pytestmark = pytest.mark.integration
SAMPLE = paths.data_dir() / "judge" / "train" / "feedback.jsonl"
COLUMNS = ["--rubric", "ux-liked", "--human-col", "thumb", "--group-col", "topic"]
TOPICS, PER_TOPIC = ("coding", "garden", "travel"), 24


def _slice(folder: Path) -> Path:
    """Write the first rows of three topics of the bundled sample (one topic is held out)."""
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [r for t in TOPICS for r in [r for r in rows if r["topic"] == t][:PER_TOPIC]]
    path = folder / "feedback.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(embedded_model: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("peft")
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"vLLM not importable: {exc}")
    folder = tmp_path_factory.mktemp("judge-train")
    result = CliRunner().invoke(cli, ["judge", "train", str(_slice(folder)), *COLUMNS, "--base", "embedded",
                                      "--out", str(folder / "adapter"), "--heldout", "0.3", "--steps", "12",
                                      "--top-layers", "6", "--db", str(folder / "train.duckdb")])
    assert result.exit_code == 0, result.output
    return folder


@pytest.mark.parametrize("arm, extra", [
    ("heldout_adapter", ["--judge-adapter"]),  # the learned judge, through vLLM's LoRA
    ("heldout_base", []),  # the prompted base
])
def test_uxlocal_judge_repeats_judge_trains_heldout_numbers_on_vllm(trained: Path, tmp_path: Path, arm: str,
                                                                    extra: list[str]) -> None:
    adapter = trained / "adapter"
    judged = CliRunner().invoke(cli, ["judge", str(trained / "feedback.jsonl"), *COLUMNS,
                                      "-m", "judge=embedded", "--heldout-of", str(adapter), *extra,
                                      *([str(adapter)] if extra else []),
                                      "--db", str(tmp_path / "fresh.duckdb")])
    assert judged.exit_code == 0, judged.output
    meta = json.loads((adapter / jt.META_FILE).read_text(encoding="utf-8"))
    with duckdb.connect(str(tmp_path / "fresh.duckdb"), read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
        rows = verdict_rows(con, run_id, "label", "overall", "judge")
    stats = jt.agreement("label", rows)
    # every statistic to the bit, probabilities included (issue 44): the same prompts in the same engine
    # batches give the same label probabilities; an approximate check hid batches that depended on timing
    assert stats == {k: meta[arm][k] for k in stats}
    assert meta["split"]["heldout_rows"] == PER_TOPIC and meta["frozen_prefix"] is True
