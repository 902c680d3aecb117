"""banking_knowledge against the recorded upstream suite (issue 29): every case, every call.

Replays ``../shared/conformance/tau2/banking_knowledge`` (691 cases, 3,623 calls from both seats)
through our runtime with the team's reference checker (``../shared/tools/tau2_conformance.py``) and
asserts what issue 29 requires: the same error flag, output text, state digest and reward as
upstream on every call and case. Skips, with the reason, without ``../shared``.

The tools file (upstream's words) sits in the recording, not in the data folder; the test builds a
data folder in ``tmp_path`` of links to the shared data plus links to the two tools files, which is
how a user adds them (``tools_agent.json`` / ``tools_user.json`` beside ``db.json``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from uxlocal.tau2 import Environment, load_domain
from uxlocal.tau2.domains.banking_knowledge.discoverable import DISCOVERABLE_AGENT, DISCOVERABLE_USER

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
RECORDING = SHARED / "conformance" / "tau2" / "banking_knowledge"
DATA = SHARED / "data" / "tau2"
CHECKER = SHARED / "tools" / "tau2_conformance.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (RECORDING / "cases.json").is_file()
        or not CHECKER.is_file()
        or not (DATA / "domains" / "banking_knowledge").is_dir(),
        reason="needs ../shared (the recorded tau2 conformance suite, its checker and the data)",
    ),
]

OPTIONAL_ARGUMENT_SCHEMAS = {"file_credit_card_transaction_dispute_4829", "order_debit_card_5739"}
"""Tools with an optional argument: upstream's schema says ``anyOf [number, null]`` with default
null, our shared schema builder (``uxlocal/tau2/schemas.py``, tau2-core's) writes plain ``number``.
Banking's structure is otherwise upstream's; the builder's change belongs to every domain."""


@pytest.fixture(scope="module")
def checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tau2_conformance", CHECKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tau2_conformance"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data_with_tool_words(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the shared data dir with the recording's two tools files beside banking's ``db.json``."""
    root = tmp_path_factory.mktemp("tau2")
    domains = root / "domains"
    domains.mkdir()
    for entry in (DATA / "domains").iterdir():
        if entry.name != "banking_knowledge":
            (domains / entry.name).symlink_to(entry)
    banking = domains / "banking_knowledge"
    banking.mkdir()
    for entry in (DATA / "domains" / "banking_knowledge").iterdir():
        (banking / entry.name).symlink_to(entry)
    for name in ("tools_agent.json", "tools_user.json"):
        (banking / name).symlink_to(RECORDING / name)
    return root


@pytest.fixture(scope="module")
def stats(checker: ModuleType, data_with_tool_words: Path) -> dict[str, Any]:
    open_domain = checker.project_adapter(REPO, data_with_tool_words)
    result: dict[str, Any] = checker.compare_domain(
        "banking_knowledge", RECORDING, open_domain, set(checker.KINDS), None
    )
    return result


def test_every_recorded_call_and_case_is_covered(stats: dict[str, Any]) -> None:
    counts = stats["stats"]
    assert (counts["cases"], counts["calls"], counts["scored"]) == (691, 3623, 691)
    assert counts.get("setup_errors", 0) == 0 and counts["initial_state_same"] == 691


@pytest.mark.parametrize("measure", ["error_same", "text_same", "state_same", "delta_same"])  # each per call
def test_every_call_matches_upstream(stats: dict[str, Any], measure: str) -> None:
    counts = stats["stats"]
    assert counts[measure] == counts["calls"], stats["mismatches"].get(measure.split("_")[0], [])[:3]


def test_every_case_reward_matches_upstream(stats: dict[str, Any]) -> None:
    counts = stats["stats"]
    assert counts["reward_same"] == counts["scored"], stats["mismatches"].get("reward", [])[:3]


def _structure(node: Any) -> Any:
    """Strip a schema of its words (descriptions, titles) and without the generic strictness markers."""
    if isinstance(node, dict):
        return {
            k: _structure(v)
            for k, v in node.items()
            if k not in ("description", "title", "additionalProperties") and not (k == "required" and v == [])
        }
    if isinstance(node, list):
        return [_structure(v) for v in node]
    return node


@pytest.mark.parametrize("seat, file", [("assistant", "tools_agent.json"), ("user", "tools_user.json")])
def test_tool_structure_matches_upstream_for_listed_and_discoverable_tools(seat: str, file: str) -> None:
    recorded = json.loads((RECORDING / file).read_text(encoding="utf-8"))
    env = Environment(load_domain(DATA, "banking_knowledge"))
    listed = {s["function"]["name"]: s for s in env.tool_schemas(seat)}  # type: ignore[arg-type]
    hidden = DISCOVERABLE_AGENT if seat == "assistant" else DISCOVERABLE_USER
    discoverable = {s.name: s.openai_schema() for s in hidden.tools()}
    for group, ours in (("tools", listed), ("discoverable", discoverable)):
        theirs = {t["function"]["name"]: t for t in recorded[group]}
        assert sorted(ours) == sorted(theirs), group
        differ = sorted(n for n in theirs if _structure(ours[n]) != _structure(theirs[n]))
        assert set(differ) <= OPTIONAL_ARGUMENT_SCHEMAS, differ
