"""Learning a judge (issue 30).

Examples in `uxlocal judge`'s prompt layout, loss on label tokens only, the group split, input
checks before training, and a tiny training run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel
from uxlocal.suites.judge import train as jt
from uxlocal.suites.judge.inputs import Columns, JudgeItem
from uxlocal.suites.judge.prompts import judge_messages
from uxlocal.suites.judge.rubrics import load_rubric
from uxlocal.train.examples import IGNORE
from uxlocal.train.lora import TrainSettings

from .conftest import chat, write_jsonl

pytest.importorskip("peft")
from _tiny_model import tiny_model_folder  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> ResolvedModel:
    folder = tiny_model_folder(tmp_path_factory.mktemp("tiny"))
    return ResolvedModel(name="tiny", path=str(folder), backend="hf", dtype="float32", max_model_len=4096,
                         identity="tiny-random-llama")


def _rows(n: int = 30, per_group: int = 3) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "conversation": chat(i), "thumb": "liked" if i % 2 else "disliked",
             "grp": f"g{i // per_group}", "score": 1 + i % 5} for i in range(n)]


def _spec(path: Path, rubric: str = "ux-liked", human: str | None = "thumb", heldout: float = 0.34,
          seed: int = 0) -> jt.JudgeTrainSpec:
    return jt.JudgeTrainSpec(
        str(path), Columns(human=human, group="grp"), load_rubric(rubric), heldout=heldout, seed=seed
    )


def _decode(renderer: Any, ids: list[int]) -> str:
    return str(renderer.tokenizer.decode(ids, skip_special_tokens=False))


def test_judge_examples_put_loss_only_on_the_human_label_tokens(tmp_path: Path, tiny: ResolvedModel) -> None:
    prepared = jt.prepare(_spec(write_jsonl(tmp_path / "a.jsonl", _rows())), tiny)
    rubric = prepared.spec.rubric
    for item, example in zip(prepared.split.train, prepared.train, strict=True):
        cut = next(i for i, label in enumerate(example.labels) if label != IGNORE)
        assert all(label == IGNORE for label in example.labels[:cut])
        assert _decode(prepared.renderer, example.ids[cut:]) == item.human  # the label, nothing after it
        assert example.labels[cut:] == example.ids[cut:]
        messages = judge_messages(rubric, rubric.criteria_list()[0], item.conversation)
        # the very prompt `uxlocal judge` sends
        assert example.ids[:cut] == prepared.renderer.render(messages)[1]
    assert _decode(prepared.renderer, prepared.train[0].ids).count("<|im_start|>assistant\n") == 1


def test_judge_examples_teach_both_orders_for_pairwise(tmp_path: Path, tiny: ResolvedModel) -> None:
    rows = [
        {
            "id": f"p{i}",
            "prompt": f"question {i}",
            "response_a": f"first {i}",
            "response_b": f"second {i}",
            "pref": "A" if i % 3 else "B",
            "grp": f"g{i // 2}",
        }
        for i in range(30)
    ]
    spec = jt.JudgeTrainSpec(str(write_jsonl(tmp_path / "p.jsonl", rows)), Columns(human="pref", group="grp"),
                             load_rubric("preference"), heldout=0.34)
    prepared = jt.prepare(spec, tiny)
    assert len(prepared.train) == 2 * len(prepared.split.train)
    item, ab, ba = prepared.split.train[0], prepared.train[0], prepared.train[1]
    assert [t for t in ab.labels if t != IGNORE] == prepared.renderer.encode(item.human)
    assert [t for t in ba.labels if t != IGNORE] == prepared.renderer.encode({"A": "B", "B": "A"}[item.human])
    text_ab, text_ba = _decode(prepared.renderer, ab.ids), _decode(prepared.renderer, ba.ids)
    assert text_ab.index(item.response_a) < text_ab.index(item.response_b)
    assert text_ba.index(item.response_b) < text_ba.index(item.response_a)


def test_judge_examples_round_likert_scores_to_points(tmp_path: Path, tiny: ResolvedModel) -> None:
    rows = [{**r, "score": 2.5 if i == 0 else r["score"]} for i, r in enumerate(_rows())]
    spec = _spec(write_jsonl(tmp_path / "l.jsonl", rows), rubric="helpfulness", human="score")
    prepared = jt.prepare(spec, tiny)
    targets = {i.item_id: _decode(prepared.renderer, [t for t in e.labels if t != IGNORE])
               for i, e in zip(prepared.split.train, prepared.train, strict=True)}
    assert all(targets[i.item_id] == str(int(i.human + 0.5)) for i in prepared.split.train)


def test_split_by_group_keeps_groups_whole_and_holds_out_enough() -> None:
    items = [JudgeItem(f"c{i}", tuple(chat(i)), human="liked", group=f"g{i // 4}") for i in range(40)]
    split = jt.split_by_group(items, 0.2, seed=1)
    held = {i.group for i in split.heldout}
    assert held == set(split.heldout_groups) and not held & {i.group for i in split.train}
    assert 8 <= len(split.heldout) <= 11 and len(split.train) + len(split.heldout) == 40
    assert jt.split_by_group(items, 0.2, seed=1).heldout_groups == split.heldout_groups
    assert any(
        jt.split_by_group(items, 0.2, seed=s).heldout_groups != split.heldout_groups for s in range(2, 6)
    )


@pytest.mark.parametrize(
    ("rows", "human", "message"),
    [
        # no human column given at all
        (_rows(), None, r"a\.jsonl: no human column"),
        # a label the rubric does not have, on the file's third line
        (
            [*_rows()[:2], {**_rows()[2], "thumb": "meh"}, *_rows()[3:]],
            "thumb",
            r"a\.jsonl:3: thumb: 'meh' is not one of \['liked', 'disliked'\]",
        ),
        # the human column missing from the first row
        (
            [{k: v for k, v in r.items() if k != "thumb"} for r in _rows()],
            "thumb",
            r"a\.jsonl:1: thumb: is missing",
        ),
        # every row liked: one class in the training part
        (
            [{**r, "thumb": "liked"} for r in _rows()],
            "thumb",
            r"a\.jsonl:\d+: thumb: every training row says 'liked'",
        ),
        # 12 rows: the held-out part has 3 rows (4 with rounding up by groups)
        (_rows(12), "thumb", r"a\.jsonl:\d+: grp: the held-out part has \d rows"),
    ],
)
def test_prepare_stops_with_file_line_column_problem_before_training(
        tmp_path: Path, tiny: ResolvedModel, rows: list[dict[str, Any]], human: str | None, message: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jt.lora, "load_base", lambda *_: pytest.fail("loaded the model before checking"))
    with pytest.raises(InputError, match=message):
        jt.prepare(_spec(write_jsonl(tmp_path / "a.jsonl", rows), human=human), tiny)


def test_prepare_refuses_likert_scores_off_the_scale(tmp_path: Path, tiny: ResolvedModel) -> None:
    rows = [{**r, "score": 9 if i == 4 else r["score"]} for i, r in enumerate(_rows())]
    with pytest.raises(InputError, match=r"l\.jsonl:5: score: score 9 is off the rubric's scale 1\.\.5"):
        jt.prepare(_spec(write_jsonl(tmp_path / "l.jsonl", rows), rubric="helpfulness", human="score"), tiny)


SETTINGS = TrainSettings(steps=10, batch_size=4, lr=5e-2, warmup=2, rank=4, alpha=8, dropout=0.0, seed=5)


def _judge(tiny: ResolvedModel, db: Path) -> jt.HeldoutJudge:
    """Held-out judge runs of the tiny model on the hf backend (no vLLM in unit tests)."""
    from uxlocal.cli.common import run_configured

    return jt.heldout_judge(run_configured, f"{tiny.path}@hf", db, "label", "overall")


def test_train_judge_lowers_loss_writes_metadata_and_repeats_by_seed(
    tmp_path: Path, tiny: ResolvedModel
) -> None:
    prepared = jt.prepare(_spec(write_jsonl(tmp_path / "a.jsonl", _rows())), tiny)
    steps: list[int] = []
    judge = _judge(tiny, tmp_path / "j.duckdb")
    first = jt.train_judge(prepared, tiny, tmp_path / "one", judge=judge, settings=SETTINGS,
                           on_step=lambda r: steps.append(r.step))
    again = jt.train_judge(prepared, tiny, tmp_path / "two", judge=judge, settings=SETTINGS)
    assert steps == list(range(1, 11))
    assert sum(first.losses[-3:]) < 0.7 * sum(first.losses[:3])
    assert first.adapter["loss"] < first.base["loss"]  # on held-out label tokens
    assert set(first.base) == {"loss", "accuracy", "kappa", "macro_f1", "auroc", "ece"}
    assert first.weights_sha256 == again.weights_sha256
    assert set(first.intervals) == {"accuracy", "kappa", "macro_f1", "auroc", "ece"}
    meta = json.loads((tmp_path / "one" / jt.META_FILE).read_text())
    assert meta["base_identity"] == "tiny-random-llama"
    assert meta["rubric_sha256"] == prepared.spec.rubric.sha256() and len(meta["data_sha256"]) == 64
    assert meta["split"]["heldout_groups"] == prepared.split.heldout_groups and meta["split"]["seed"] == 0
    assert meta["settings"]["steps"] == 10 and meta["weights_sha256"] == first.weights_sha256
    assert meta["heldout_adapter"]["loss"] == first.adapter["loss"]


def _thumbs(tmp_path: Path) -> str:
    """Return a label rubric without an abstain label.

    A random tiny model would otherwise abstain on every row, and abstentions are left out of the
    agreement statistics.
    """
    rubric = tmp_path / "thumbs.toml"
    rubric.write_text('name = "thumbs"\nkind = "label"\nquestion = "Would the user like the last reply?"\n'
                      'positive = "liked"\n[[labels]]\nname = "liked"\n[[labels]]\nname = "disliked"\n',
                      encoding="utf-8")
    return str(rubric)


def _cli(args: list[str]) -> Any:
    from click.testing import CliRunner

    from uxlocal.cli import cli

    return CliRunner().invoke(cli, ["judge", "train", *args])


def test_judge_train_cli_exits_2_naming_file_line_and_column_before_training(
        tmp_path: Path, tiny: ResolvedModel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jt.lora, "load_base", lambda *_: pytest.fail("loaded the model before checking"))
    path = write_jsonl(tmp_path / "a.jsonl", [*_rows()[:6], {**_rows()[6], "thumb": "so-so"}, *_rows()[7:]])
    result = _cli([str(path), "--human-col", "thumb", "--group-col", "grp", "--base", tiny.path,
                   "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "a.jsonl:7: thumb: 'so-so' is not one of" in result.output
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, tiny: ResolvedModel) -> tuple[Path, Any]:
    """One ``uxlocal judge train`` through the CLI (tiny model, hf backend); its folder and result."""
    folder = tmp_path_factory.mktemp("trained")
    path = write_jsonl(folder / "a.jsonl", _rows())
    result = _cli(
        [
            str(path),
            "--rubric",
            _thumbs(folder),
            "--human-col",
            "thumb",
            "--group-col",
            "grp",
            "--base",
            f"{tiny.path}@hf",
            "--heldout",
            "0.34",
            "--out",
            str(folder / "out"),
            "--steps",
            "4",
            "--batch-size",
            "2",
            "--rank",
            "2",
            "--lr",
            "0.05",
            "--top-layers",
            "1",
            "--db",
            str(folder / "train.duckdb"),
        ]
    )
    return folder, result


def test_judge_train_cli_trains_and_prints_base_and_adapter_side_by_side(trained: tuple[Path, Any]) -> None:
    folder, result = trained
    assert result.exit_code == 0, result.output
    assert "step 4/4" in result.output  # log lines when not on a terminal
    for name in ("accuracy", "kappa", "auroc", "ece", "loss", "95% interval"):
        assert name in result.output
    meta = json.loads((folder / "out" / jt.META_FILE).read_text())
    assert meta["settings"]["steps"] == 4 and meta["settings"]["rank"] == 2 and meta["settings"]["alpha"] == 4
    # the top layer alone: the layer below ran once per example (the frozen prefix), not once per step
    assert meta["settings"]["top_layers"] == 1 and meta["frozen_prefix"] is True
    assert "frozen layers, train examples" in result.output
    assert meta["split"]["heldout_rows"] >= 10 and (folder / "out" / "adapter_model.safetensors").is_file()
    assert meta["heldout_judged"] == meta["split"]["heldout_rows"]
    assert (
        f"{meta['heldout_judged']} of {meta['heldout_judged']} held-out rows judged by both arms"
        in result.output
    )
    with duckdb.connect(str(folder / "train.duckdb"), read_only=True) as con:  # both arms are judge runs
        assert con.execute("SELECT count(*) FROM runs WHERE suite = 'judge'").fetchone() == (2,)
        arms = con.execute(
            "SELECT list(label_probs::VARCHAR ORDER BY item_id) FROM verdicts GROUP BY run_id"
        ).fetchall()
    assert len(arms) == 2 and arms[0] != arms[1]  # the adapter run really ran with the adapter


@pytest.mark.parametrize("arm, extra", [
    ("heldout_adapter", ["--judge-adapter"]),  # the learned judge
    ("heldout_base", []),  # the prompted base on the same rows
])
def test_uxlocal_judge_with_the_adapter_repeats_the_heldout_statistics_judge_train_printed(
        trained: tuple[Path, Any], tiny: ResolvedModel, tmp_path: Path, arm: str, extra: list[str]) -> None:
    from click.testing import CliRunner

    from uxlocal.cli import cli
    from uxlocal.suites.judge.report import verdict_rows

    folder, result = trained
    assert result.exit_code == 0, result.output
    out = folder / "out"
    judged = CliRunner().invoke(
        cli,
        [
            "judge",
            str(folder / "a.jsonl"),
            "-m",
            f"judge={tiny.path}@hf",
            "--rubric",
            str(folder / "thumbs.toml"),
            "--human-col",
            "thumb",
            "--group-col",
            "grp",
            "--heldout-of",
            str(out),
            *extra,
            *([str(out)] if extra else []),
            "--db",
            str(tmp_path / "fresh.duckdb"),
        ],
    )  # a new store: no cache to replay
    assert judged.exit_code == 0, judged.output
    meta = json.loads((out / jt.META_FILE).read_text())
    with duckdb.connect(str(tmp_path / "fresh.duckdb"), read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
        rows = verdict_rows(con, run_id, "label", "overall", "judge")
        view = con.execute("SELECT accuracy, kappa, auroc, ece FROM judge_label_agreement").fetchone()
    assert len(rows) == meta["split"]["heldout_rows"]
    stats = jt.agreement("label", rows)
    assert stats == {k: meta[arm][k] for k in stats}  # the same numbers, not close ones
    assert view == pytest.approx(tuple(meta[arm][k] for k in ("accuracy", "kappa", "auroc", "ece")))
    assert f"{meta[arm]['auroc']:.3f}" in judged.output


def _label_rows(labels: list[str], humans: list[str], scores: list[float]) -> list[dict[str, Any]]:
    return [
        {
            "label": lab,
            "human_label": h,
            "score": s,
            "confidence": max(s, 1 - s),
            "positive": "liked",
            "grp": None,
        }
        for lab, h, s in zip(labels, humans, scores, strict=True)
    ]


def test_difference_intervals_pair_the_arms_on_the_same_items() -> None:
    humans = ["liked", "disliked"] * 20
    base = _label_rows(["liked"] * 40, humans, [0.6] * 40)  # always liked: accuracy 0.5, AUROC 0.5
    adapter = _label_rows(humans, humans, [0.9 if h == "liked" else 0.1 for h in humans])  # always right
    intervals = jt.difference_intervals("label", base, adapter, n_resamples=200)
    low, high = intervals["accuracy"]
    assert low is not None and high is not None and 0.3 <= low <= 0.5 <= high <= 0.7
    assert intervals["auroc"] == (0.5, 0.5)  # paired: every resample has AUROC 1.0 vs 0.5
    assert jt.difference_intervals("label", base, base, n_resamples=50)["accuracy"] == (0.0, 0.0)


def test_training_prompts_are_the_token_ids_uxlocal_judge_sends(tmp_path: Path, tiny: ResolvedModel) -> None:
    from uxlocal.config import RunConfig
    from uxlocal.engine.fake import FakeEngine
    from uxlocal.engine.pool import ModelPool
    from uxlocal.engine.render import make_renderer
    from uxlocal.runner import run_suite

    path = write_jsonl(tmp_path / "a.jsonl", _rows())
    sent: list[tuple[int, ...]] = []

    def judge(prep: Any) -> dict[str, Any]:
        sent.append(tuple(prep.prompt_ids))
        return {"text": "liked", "label_probs": {"liked": 0.7, "disliked": 0.2, "unclear": 0.1}}

    pool = ModelPool.from_engines({"judge": FakeEngine(judge)}, renderer=make_renderer(tiny.path))
    config = RunConfig(
        suite="judge",
        suite_config={
            "input": str(path),
            "rubric": "ux-liked",
            "human_col": "thumb",
            "group_col": "grp",
            "bootstrap": 0,
        },
        db=str(tmp_path / "j.duckdb"),
        progress=False,
    )
    run_suite(config, pool=pool)
    prepared = jt.prepare(_spec(path), tiny)
    trained = {tuple(e.ids[:len(e.ids) - e.targets]) for e in prepared.train + prepared.heldout}
    assert len(sent) == 30 and trained == set(sent)


def test_prepare_refuses_a_prompt_longer_than_max_length(tmp_path: Path, tiny: ResolvedModel) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", _rows())
    with pytest.raises(
        InputError, match=r"a\.jsonl:\d+: the judge prompt is \d+ tokens, more than max_length 20"
    ):
        jt.prepare(_spec(path), tiny, max_length=20)
