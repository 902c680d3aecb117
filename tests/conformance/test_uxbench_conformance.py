"""UXBench as upstream asks and reads it: issue 43's conformance checks, every recorded row.

The recording (``../shared/conformance/uxbench``, upstream mengze-hong/UXBench at 51e31b6) holds
what upstream's own functions produced on our bundled sample rows (named by ``cid``) and on edge
rows given in full. Our code reads the words from ``../shared/upstream/UXBench-51e31b6`` (parsed,
never imported) and renders them with our own functions. Skipped with the reason when absent.

Rows where upstream raised (a history given as a JSON string: T1 ``ux_sample_judge_0014`` and
``_0064``, T3 ``ux_sample_recovery_0015`` and ``_0016``): we parse the string and render the list,
and the result names the deviation; the checks below pin exactly that.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from uxlocal.suites.uxbench import protocol
from uxlocal.suites.uxbench.data import SAMPLE_DIR
from uxlocal.suites.uxbench.upstream import UPSTREAM_COMMIT, read_checkout

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
RECORDING = SHARED / "conformance" / "uxbench"
CHECKOUT = SHARED / "upstream" / f"UXBench-{UPSTREAM_COMMIT}"

pytestmark = pytest.mark.skipif(
    not (RECORDING / "README.md").is_file() or not CHECKOUT.is_dir(),
    reason=f"the UXBench recording or checkout is not at {RECORDING} / {CHECKOUT}")


def _recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RECORDING / name).read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def checkout() -> Any:
    return read_checkout(CHECKOUT)


@pytest.fixture(scope="module")
def sample_rows() -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for path in sorted(SAMPLE_DIR.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["cid"]] = row
    return rows


def _row(case: dict[str, Any], sample_rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return case["row"] if case["row"] is not None else sample_rows[case["cid"]]


def _as_upstream_after_parsing(row: dict[str, Any], key: str) -> dict[str, Any]:
    return {**row, key: protocol.parse_history_field(row[key])}


def test_t1_messages_equal_upstream_for_every_rendered_row(checkout: Any, sample_rows: Any) -> None:
    cases = _recorded("t1_prompts.jsonl")
    rendered = [c for c in cases if c["upstream_error"] is None]
    same = [c["cid"] for c in rendered
            if protocol.t1_messages(_row(c, sample_rows), checkout.t1_template).messages == c["messages"]]
    assert len(same) == len(rendered) == 83, sorted({c["cid"] for c in rendered} - set(same))
    for case in rendered:
        assert protocol.t1_messages(_row(case, sample_rows), checkout.t1_template).deviations == ()


def test_t1_rows_upstream_raised_on_are_parsed_and_flagged(checkout: Any, sample_rows: Any) -> None:
    raised = [c for c in _recorded("t1_prompts.jsonl") if c["upstream_error"] is not None]
    assert [c["cid"] for c in raised] == ["ux_sample_judge_0014", "ux_sample_judge_0064"]
    for case in raised:
        row = _row(case, sample_rows)
        ours = protocol.t1_messages(row, checkout.t1_template)
        assert ours.deviations == (protocol.HISTORY_STRING_PARSED,)
        as_list = _as_upstream_after_parsing(row, "selected_history")
        listed = protocol.t1_messages(as_list, checkout.t1_template)
        assert ours.messages == listed.messages and listed.text.count("**") >= 4


def test_grm_prompts_equal_upstream_at_every_truncation_level(checkout: Any, sample_rows: Any) -> None:
    cases = _recorded("grm_prompts.jsonl")
    by_level: dict[tuple[str, tuple[int, ...]], list[bool]] = {}
    for case in cases:
        row, task = _row(case, sample_rows), case["task"]
        if task == "eval":
            level = (case["max_history_turns"], case["max_response_chars"])
        else:
            level = (case["max_failed_chars"], case["max_complaint_chars"], case["max_response_chars"])
        ours = protocol.grm_prompt(task, row, case["response"], checkout.grm_templates[task], level)
        by_level.setdefault((task, level), []).append(ours == case["prompt"])
    assert {k: (sum(v), len(v)) for k, v in by_level.items()} == {
        ("eval", (0, 0)): (96, 96), ("eval", (2, 10)): (96, 96),
        ("recovery", (0, 0, 0)): (52, 52), ("recovery", (5, 3, 4)): (52, 52)}


def test_t3_requests_equal_upstream_for_every_rendered_row(checkout: Any, sample_rows: Any) -> None:
    cases = _recorded("t3_messages.jsonl")
    settings = checkout.generation["recovery"]
    same = 0
    for case in (c for c in cases if c["upstream_error"] is None):
        ours = protocol.t3_messages(_row(case, sample_rows))
        request = case["request"]
        wanted = (request["messages"], request["temperature"], request["max_tokens"])
        same += (ours.messages, settings.temperature, settings.max_tokens) == wanted and ours.deviations == ()
    assert same == sum(c["upstream_error"] is None for c in cases) == 21


def test_t3_rows_upstream_raised_on_are_parsed_and_flagged(sample_rows: Any) -> None:
    raised = [c for c in _recorded("t3_messages.jsonl") if c["upstream_error"] is not None]
    assert [c["cid"] for c in raised] == ["ux_sample_recovery_0015", "ux_sample_recovery_0016"]
    for case in raised:
        row = _row(case, sample_rows)
        ours = protocol.t3_messages(row)
        assert ours.deviations == (protocol.HISTORY_STRING_PARSED,)
        assert ours.messages == protocol.t3_messages(_as_upstream_after_parsing(row, "history")).messages
        assert ours.messages[-1] == {"role": "user", "content": row["user_complaint"]}


def test_verdict_parsing_equals_upstream_on_all_128_pairs() -> None:
    cases = _recorded("verdicts.jsonl")
    ours = [protocol.extract_verdict(c["content"], c["reasoning"]) for c in cases]
    wrong = [(c["content"][:40], c["reasoning"][-40:], c["verdict"], c["parse_note"], got)
             for c, got in zip(cases, ours, strict=True) if got != (c["verdict"], c["parse_note"])]
    assert len(cases) == 128 and wrong == []


def test_grm_scores_equal_upstream_to_1e12() -> None:
    cases = _recorded("grm_scores.jsonl")
    assert len(cases) == 9
    for case in cases:
        positions = [(p["token"], [(t["token"], t["logprob"]) for t in p["top_logprobs"]])
                     for p in case["logprobs_content"]]
        got = protocol.grm_score(positions)
        recorded = (case["good_logprob"], case["bad_logprob"])
        assert (got.good_logprob, got.bad_logprob) == recorded, case["case"]
        if case["score"] is None:
            assert got.score is None, case["case"]
        else:
            assert got.score is not None and math.isclose(got.score, case["score"], rel_tol=0, abs_tol=1e-12)


def test_request_settings_equal_upstream_payload_and_calls(checkout: Any) -> None:
    payloads = {json.dumps(c["payload"], sort_keys=True) for c in _recorded("grm_scores.jsonl")}
    assert len(payloads) == 1
    payload = json.loads(payloads.pop())
    for task in ("eval", "recovery"):
        grm = checkout.grm_call[task]
        assert (grm.temperature, grm.max_tokens, grm.top_logprobs) == (
            payload["temperature"], payload["max_tokens"], payload["top_logprobs"])
        assert payload["logprobs"] is True
    t3 = [c["request"] for c in _recorded("t3_messages.jsonl") if c["request"]]
    assert {(r["temperature"], r["max_tokens"]) for r in t3} == {
        (checkout.generation["recovery"].temperature, checkout.generation["recovery"].max_tokens)}
    assert (checkout.t1_call.temperature, checkout.t1_call.max_tokens) == (0.2, 4096)
    assert checkout.generation["eval"] == checkout.generation["recovery"]
    assert checkout.truncation["eval"][0] == (0, 0) and checkout.truncation["recovery"][0] == (0, 0, 0)
