"""``uxlocal run uxbench --upstream DIR`` on a scripted engine and a made-up checkout (issue 43).

The checkout is ``upstream_fixture``'s (our placeholder words in UXBench's layout), so these
tests run in a clone without ``../shared``; the recorded comparison with upstream's own output
is ``tests/conformance/test_uxbench_conformance.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.unit.uxbench.upstream_fixture import write_checkout
from uxlocal.config import RunConfig
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.errors import InputError
from uxlocal.grammar import Choice
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.suites.uxbench import metrics, protocol
from uxlocal.suites.uxbench.data import SAMPLE_DIR
from uxlocal.suites.uxbench.suite import UPSTREAM_KEY, UXBench, UXBenchConfig, run_checkout
from uxlocal.suites.uxbench.upstream import ENV_VAR

FREE_ANSWERS = ["好", "<think>先看看……</think>差", "嗯，整体差一点，但好在有用。嗯", "我说不清"]
"""Free T1 answers the script cycles through: exact, after a think block, rfind, unparseable."""


def _h(prepared: PreparedRequest) -> int:
    return sum(prepared.prompt.encode()) % 1009


def script(prepared: PreparedRequest) -> Any:
    """Free T1 answers, 好/差 label-arm answers with probabilities, replies, GRM answers with logprobs."""
    tag, h = prepared.request.tag, _h(prepared)
    if isinstance(prepared.request.constraint, Choice):
        p = (h % 100) / 100
        return {"text": "好" if p >= 0.5 else "差", "label_probs": {"好": p, "差": 1 - p}}
    if tag == "t1_upstream":
        return FREE_ANSWERS[h % len(FREE_ANSWERS)]
    if tag.endswith("_reply"):
        return f"reply {h} " + "x" * 60  # longer than the fixture ladder's second-rung reply limits
    if tag.endswith("_grm"):
        if h % 3 == 0 and "...[截断]" not in prepared.prompt:
            return {"text": "", "finish_reason": "context_window"}
        good, bad = -0.1 - (h % 7) / 10, -0.2 - (h % 5) / 10
        first = "好" if good >= bad else "差"
        return {"text": first, "top_logprobs": [[(first, max(good, bad)), ("差" if first == "好" else "好",
                                                                              min(good, bad))]]}
    raise AssertionError(f"unexpected request {tag}")


def _run(tmp_path: Path, engine: FakeEngine, **config: Any) -> Any:
    cfg = RunConfig(suite="uxbench", suite_config={"bootstrap": 0, **config},
                    db=str(tmp_path / "ux.duckdb"), progress=False)
    return run_suite(cfg, pool=ModelPool.from_engines({"judge": engine, "candidate": FakeEngine(script)}))


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return write_checkout(tmp_path / "UXBench")


def _sample_rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (SAMPLE_DIR / name).read_text(encoding="utf-8").splitlines() if line]


def test_upstream_t1_sends_the_checkout_prompt_with_its_settings(tmp_path: Path, checkout: Path) -> None:
    judge = FakeEngine(script, identity="fake-judge")
    _run(tmp_path, judge, tasks="judge", upstream=str(checkout))
    template = (checkout / "src/utils/prompts.py").read_text(encoding="utf-8")
    assert "JUDGE" in template
    free = [p for p in judge.requests if p.request.tag == "t1_upstream"]
    label = [p for p in judge.requests if p.request.tag == "t1_label"]
    assert len(free) == len(label) == 80
    assert {(p.request.sampling.temperature, p.request.sampling.max_tokens) for p in free} == {(0.3, 900)}
    rows = [row for name in ("bad", "good") for row in _sample_rows(f"uxbench_task1_judge_{name}_1k.jsonl")]
    from uxlocal.suites.uxbench.upstream import read_checkout

    words = read_checkout(checkout)
    expected = {protocol.t1_messages(r, words.t1_template).text for r in rows}
    assert {p.request.messages[-1]["content"] for p in free} == expected
    assert all(p.request.messages == q.request.messages for p, q in zip(free, label, strict=True))


def test_upstream_t1_stores_parse_notes_and_reads_auroc_ece_from_the_label_arm(tmp_path: Path,
                                                                                checkout: Path) -> None:
    result = _run(tmp_path, FakeEngine(script, identity="fake-judge"), tasks="judge", upstream=str(checkout))
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    notes = dict(con.execute("SELECT value->>'$.parse_note', count(*) FROM verdicts WHERE run_id = ? "
                             "AND name = 't1' GROUP BY 1", [result.run_id]).fetchall())
    assert set(notes) <= {"exact_content", "ends_content", "rfind_content", "cannot_parse"}
    assert notes.get("cannot_parse", 0) > 0 and sum(notes.values()) == 80
    invalid = con.execute("SELECT count(*) FROM verdicts WHERE run_id = ? AND name = 't1' AND NOT valid",
                          [result.run_id]).fetchone()[0]
    assert invalid == notes["cannot_parse"]
    mode, auroc, ece = con.execute("SELECT mode, auroc, ece FROM uxbench_t1 WHERE run_id = ?",
                                   [result.run_id]).fetchone()
    arm = con.execute("SELECT v.item_id, CAST(i.data->>'$.ground_truth' AS INTEGER), v.label, v.score "
                      "FROM verdicts v JOIN items i USING (run_id, item_id) WHERE v.run_id = ? "
                      "AND v.name = 't1_label'", [result.run_id]).fetchall()
    rows = [metrics.JudgeVerdict(i, gt, 1 if label == "good" else -1, score) for i, gt, label, score in arm]
    assert mode == "upstream"
    assert math.isclose(auroc, metrics.auroc(rows) or -1, abs_tol=1e-9)
    assert math.isclose(ece, metrics.expected_calibration_error(rows) or -1, abs_tol=1e-9)


def test_upstream_t2_t3_score_by_the_grm_rule_and_climb_down_the_ladder(tmp_path: Path,
                                                                        checkout: Path) -> None:
    judge = FakeEngine(script, identity="fake-judge")
    result = _run(tmp_path, judge, tasks="eval,recovery", upstream=str(checkout))
    grm = [p for p in judge.requests if p.request.tag.endswith("_grm")]
    assert {(p.request.sampling.temperature, p.request.sampling.max_tokens, p.request.sampling.logprobs)
            for p in grm} == {(0.0, 3, 7)}
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    stored = con.execute("SELECT name, valid, label, score, value FROM verdicts WHERE run_id = ? "
                         "AND name IN ('t2', 't3')", [result.run_id]).fetchall()
    assert len(stored) == 60
    rungs = {json.loads(v)["rung"] for *_, v in stored}
    assert rungs == {0, 1}  # a prompt over the window is asked again one rung down
    for _name, valid, label, score, value in stored:
        details = json.loads(value)
        good, bad = details["good_logprob"], details["bad_logprob"]
        assert valid and details["protocol"] == "upstream"
        assert math.isclose(score, math.exp(good) / (math.exp(good) + math.exp(bad)), abs_tol=1e-12)
        assert label == ("good" if details["content"] == "好" else "bad")


def test_upstream_t3_chat_has_no_system_turn_and_upstream_settings(tmp_path: Path, checkout: Path) -> None:
    candidate = FakeEngine(script, identity="fake-candidate")
    options = {"bootstrap": 0, "tasks": "recovery", "upstream": str(checkout)}
    cfg = RunConfig(suite="uxbench", suite_config=options, db=str(tmp_path / "ux.duckdb"), progress=False)
    run_suite(cfg, pool=ModelPool.from_engines({"judge": FakeEngine(script), "candidate": candidate}))
    replies = [p for p in candidate.requests if p.request.tag == "t3_reply"]
    assert len(replies) == 20 and {(p.request.sampling.temperature, p.request.sampling.max_tokens)
                                   for p in replies} == {(0.8, 200)}
    assert all(m["role"] != "system" for p in replies for m in p.request.messages)


def test_run_without_upstream_says_it_is_not_comparable(tmp_path: Path) -> None:
    result = _run(tmp_path, FakeEngine(script, identity="fake-judge"), tasks="judge")
    assert any("NOT comparable" in note for note in result.notes)
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    assert run_checkout(con, result.run_id) is None
    table = result.tables[-1]
    assert table.title == "UXBench protocol" and table.rows[0][1] == "NOT comparable"


def test_upstream_path_and_file_hashes_enter_the_run_identity(tmp_path: Path, checkout: Path) -> None:
    hashes = UXBench().prompt_hashes(UXBenchConfig(tasks="judge", upstream=str(checkout)))
    assert hashes[f"{UPSTREAM_KEY}{checkout.resolve()}"] and "upstream/src/utils/prompts.py" in hashes
    own = UXBench().prompt_hashes(UXBenchConfig(tasks="judge"))
    assert not any(k.startswith(UPSTREAM_KEY) for k in own)
    other = write_checkout(tmp_path / "other", eval_ladder="[(0, 0), (9, 9)]")
    moved = UXBench().prompt_hashes(UXBenchConfig(tasks="judge", upstream=str(other)))
    assert moved != hashes


def test_checkout_comes_from_the_environment_unless_switched_off(checkout: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(checkout))
    assert UXBenchConfig().checkout() == checkout.resolve()
    assert UXBenchConfig(upstream="").checkout() is None
    assert UXBench().demo().config["upstream"] == ""  # the demo plays uxlocal's words, checkout or not


@pytest.mark.parametrize(("option", "flag"), [
    ({"judge_mode": "reason"}, "--judge-mode"),  # upstream's T1 is free generation plus the label arm
    ({"max_history_turns": 4}, "--max-history-turns"),  # upstream truncates by its own ladder
    ({"temperature": 1.0}, "--temperature"),  # the checkout sets the candidates' settings
])
def test_upstream_refuses_options_that_change_its_protocol(tmp_path: Path, checkout: Path,
                                                           option: dict[str, Any], flag: str) -> None:
    with pytest.raises(InputError, match=f"--upstream runs UXBench's own protocol; {flag}"):
        _run(tmp_path, FakeEngine(script), tasks="judge", upstream=str(checkout), **option)


def test_unreadable_checkout_is_an_error_naming_file_and_name(tmp_path: Path, checkout: Path) -> None:
    (checkout / "scripts/grm_judge/run_grm_judge_task3.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"task3\.py: no module-level string POINTWISE_GRM_TEMPLATE"):
        _run(tmp_path, FakeEngine(script), tasks="judge", upstream=str(checkout))
