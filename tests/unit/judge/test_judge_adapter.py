"""Serving a learned judge (``--judge-adapter``).

Attach, base check, cache keys, run identity, held-out rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.unit.judge.conftest import chat, label_judge, number, write_jsonl
from uxlocal.config import RunConfig
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.errors import InputError
from uxlocal.models import resolve_spec
from uxlocal.runner import RunResult, run_suite
from uxlocal.suites.judge import adapter as ja
from uxlocal.suites.judge.inputs import input_sha256
from uxlocal.suites.judge.suite import JudgeSuite


def _input(tmp_path: Path, n: int = 6) -> Path:
    rows = [
        {"id": f"c{i}", "conversation": chat(i), "thumb": "liked" if i % 2 else "disliked"} for i in range(n)
    ]
    return write_jsonl(tmp_path / "chats.jsonl", rows)


def _adapter(folder: Path, *, weights: str = "a" * 64, base_identity: str | None = None,
             data: Path | None = None, heldout: list[str] | None = None) -> Path:
    """Return a judge adapter folder as ``judge train`` writes it.

    Metadata only: the fake engine loads nothing.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text("{}", encoding="utf-8")
    meta = {
        "base_name": "fake",
        "base_path": "",
        "base_identity": base_identity or resolve_spec("fake").identity,
        "weights_sha256": weights,
        "data_source": str(data),
        "data_sha256": input_sha256(str(data)) if data else "",
        "split": {"heldout_ids": heldout or []},
    }
    (folder / ja.META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    return folder


def _run(tmp_path: Path, options: dict[str, Any], roles: tuple[str, ...] = ("judge",),
         script: Any = label_judge) -> tuple[RunResult, FakeEngine]:
    """Run the judge suite the way the CLI does (resolve, adapt, pool), on the fake backend."""
    suite = JudgeSuite()
    config = suite.config_cls(**options)
    models = suite.adapt_models(config, {role: resolve_spec("fake") for role in roles})
    pool = ModelPool.from_models(models, fake_script=script)
    run = RunConfig(suite="judge", suite_config={"bootstrap": 0, **options}, db=str(tmp_path / "j.duckdb"),
                    progress=False)
    result = run_suite(run, pool=pool, suite=suite)
    engine = pool.slot(roles[0]).engine
    assert isinstance(engine, FakeEngine)
    return result, engine


def test_judge_adapter_weights_hash_enters_cache_keys_and_run_identity(tmp_path: Path) -> None:
    data = _input(tmp_path)
    base, base_engine = _run(tmp_path, {"input": str(data), "human_col": "thumb"})
    folder = _adapter(tmp_path / "ad", data=data)
    first, engine = _run(tmp_path, {"input": str(data), "human_col": "thumb", "judge_adapter": str(folder)})
    assert {r.request.lora for r in engine.requests} == {"judge-adapter"}
    assert {r.request.lora for r in base_engine.requests} == {None}
    _adapter(tmp_path / "ad", weights="b" * 64, data=data)  # retrained in the same folder
    second, retrained = _run(
        tmp_path, {"input": str(data), "human_col": "thumb", "judge_adapter": str(folder)}
    )
    assert len({base.run_id, first.run_id, second.run_id}) == 3
    keys = [{r.request_hash for r in e.requests} for e in (base_engine, engine, retrained)]
    assert len(keys[0]) == len(keys[1]) == len(keys[2]) == 6
    assert not (keys[0] & keys[1]) and not (keys[1] & keys[2])


def test_judge_adapter_on_judge2_leaves_the_prompted_judge_on_the_base(tmp_path: Path) -> None:
    data = _input(tmp_path, 4)
    folder = _adapter(tmp_path / "ad", data=data)
    _, engine = _run(
        tmp_path, {"input": str(data), "judge_adapter": f"judge2={folder}"}, roles=("judge", "judge2")
    )
    by_role = {(r.request.role, r.request.lora) for r in engine.requests}
    assert by_role == {("judge", None), ("judge2", "judge2-adapter")}


def test_judge_adapter_found_by_its_preset_name(tmp_path: Path) -> None:
    folder = _adapter(tmp_path / "ad")
    model = resolve_spec("fake").model_copy(update={"lora": {"my-judge": str(folder)}})
    attached = ja.attach("my-judge", {"judge": model})["judge"]
    assert attached.lora["judge-adapter"] == str(folder.resolve())
    assert attached.lora_ids == {"judge-adapter": "a" * 64}


def test_judge_adapter_trained_on_another_base_stops_with_where_and_what(tmp_path: Path) -> None:
    folder = _adapter(tmp_path / "ad", base_identity="0" * 64)
    with pytest.raises(InputError, match=r"judge_adapter\.json: the adapter was trained on base 'fake'"):
        ja.attach(str(folder), {"judge": resolve_spec("fake")})


@pytest.mark.parametrize("value, problem", [
    ("cand=x", "expected DIR or judgeN=DIR"),  # not a judge role
    ("judge=", "expected DIR or judgeN=DIR"),  # no folder
])
def test_judge_adapter_option_rejects_bad_values(value: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        ja.parse_adapters(value)


def test_judge_adapter_folder_without_metadata_is_refused(tmp_path: Path) -> None:
    (tmp_path / "peft-only").mkdir()
    (tmp_path / "peft-only" / "adapter_config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="not a judge adapter"):
        ja.attach(str(tmp_path / "peft-only"), {"judge": resolve_spec("fake")})


def test_judge_heldout_of_judges_only_the_adapters_heldout_rows(tmp_path: Path) -> None:
    data = _input(tmp_path, 6)
    folder = _adapter(tmp_path / "ad", data=data, heldout=["c1", "c4"])
    result, engine = _run(tmp_path, {"input": str(data), "human_col": "thumb", "heldout_of": str(folder)})
    assert len(engine.requests) == 2
    with duckdb.connect(str(tmp_path / "j.duckdb")) as con:
        items = con.execute(
            "SELECT item_id FROM items WHERE run_id = ? ORDER BY 1", [result.run_id]
        ).fetchall()
    assert items == [("c1",), ("c4",)]


def test_judge_heldout_of_refuses_other_data(tmp_path: Path) -> None:
    folder = _adapter(tmp_path / "ad", data=_input(tmp_path, 6), heldout=["c1"])
    other = write_jsonl(tmp_path / "other.jsonl", [{"id": "x", "conversation": chat(1)}])
    with pytest.raises(InputError, match="trained on other data"):
        ja.heldout_ids(folder, input_sha256(str(other)))


def test_vllm_lora_rank_fits_the_largest_adapter(tmp_path: Path) -> None:
    from uxlocal.engine.vllm import adapter_rank

    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 32, "rank_pattern": {"q_proj": 64}}),
                                                  encoding="utf-8")
    assert adapter_rank(str(tmp_path)) == 64
    assert adapter_rank(str(tmp_path / "missing")) == 0


def _learned(prep: Any) -> dict[str, Any]:
    """With the adapter: always the human's label; without: ``label_judge``.

    The human's label is liked unless the number divides by 3.
    """
    if prep.request.lora is None:
        return label_judge(prep)
    liked = number(prep.prompt) % 3 != 0
    return {
        "text": "liked" if liked else "disliked",
        "label_probs": {"liked": 0.9 if liked else 0.1, "disliked": 0.1 if liked else 0.9, "unclear": 0.0},
    }


def test_report_shows_learned_vs_prompted_judge_and_both_reliability_curves(tmp_path: Path) -> None:
    from uxlocal.report.build import build_report
    from uxlocal.store.db import connect
    from uxlocal.suites.judge import compare
    from uxlocal.suites.judge.report import verdict_rows

    rows = [
        {"id": f"c{i}", "conversation": chat(i), "thumb": "liked" if i % 3 else "disliked"} for i in range(12)
    ]
    data = write_jsonl(tmp_path / "chats.jsonl", rows)
    folder = _adapter(tmp_path / "ad", data=data, heldout=[f"c{i}" for i in range(12)])
    options = {"input": str(data), "human_col": "thumb", "heldout_of": str(folder)}
    prompted, _ = _run(tmp_path, options, script=_learned)
    learned, _ = _run(tmp_path, {**options, "judge_adapter": str(folder)}, script=_learned)
    con = connect(str(tmp_path / "j.duckdb"), read_only=True)
    assert compare.arm_pairs(con, [learned.run_id, prompted.run_id]) == [(prompted.run_id, learned.run_id)]
    section = next(s for s in build_report(con, db=str(tmp_path / "j.duckdb")).sections if s.key == "judge")
    table = section.groups[0].tables[0]
    assert table.title.startswith("Learned vs prompted judge")
    by_name = {r[0]: r for r in table.rows}
    base = compare.agreement("label", verdict_rows(con, prompted.run_id, "label", "overall", "judge"))
    assert by_name["accuracy"][1:4] == (f"{base['accuracy']:.3f}", "1.000", f"{1 - base['accuracy']:+.3f}")
    assert base["accuracy"] < 1.0
    reliability = next(f for f in section.figures if f.key == "judge-reliability")
    assert "prompted base" in reliability.svg and "learned adapter" in reliability.svg
