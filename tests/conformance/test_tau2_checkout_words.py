"""Issue 42 part 1: a tau2-bench checkout is the source of upstream's words, with no tools file.

The checkout is assembled in a temporary folder from ``../shared/upstream/tau2-bench-8ebb749``
(``src/``) and ``../shared/data/tau2`` (``data/tau2``), linked in, never copied into the project.
Skipped with the reason when ``../shared`` lacks either.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from uxlocal.tau2.conformance import CONFORMANCE_DOMAINS, compare_domain, details
from uxlocal.tau2.registry import load_domain
from uxlocal.tau2.tool_words import ToolWordsError
from uxlocal.tau2.upstream_tools import checkout_seat_schemas

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
UPSTREAM = SHARED / "upstream" / "tau2-bench-8ebb749"
DATA = SHARED / "data" / "tau2"
RECORDING = SHARED / "conformance" / "tau2"
SEAT_FILES = {"assistant": "tools_agent.json", "user": "tools_user.json"}


def _need_shared() -> None:
    for path in (UPSTREAM / "src" / "tau2", DATA / "domains", RECORDING / "mock"):
        if not path.is_dir():
            pytest.skip(f"{path} is absent (upstream source, tau2 data and the recording are needed)")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    _need_shared()
    root = tmp_path / "tau2-bench"
    (root / "data").mkdir(parents=True)
    (root / "src").symlink_to(UPSTREAM / "src")
    (root / "data" / "tau2").symlink_to(DATA)
    return root


def test_all_100_tool_schemas_equal_the_recording_in_upstreams_key_order(checkout: Path) -> None:
    equal = total = discoverable = 0
    for domain in CONFORMANCE_DOMAINS:
        seats = checkout_seat_schemas(checkout, domain)
        assert seats is not None
        for seat, file in SEAT_FILES.items():
            recorded = json.loads((RECORDING / domain / file).read_text(encoding="utf-8"))
            _, listed, hidden = seats.get(seat, (None, [], []))
            total += len(recorded["tools"])
            assert len(listed) == len(recorded["tools"]), (domain, seat)
            pairs = zip(listed, recorded["tools"], strict=True)
            equal += sum(json.dumps(ours) == json.dumps(theirs) for ours, theirs in pairs)
            assert json.dumps(hidden) == json.dumps(recorded.get("discoverable", [])), (domain, seat)
            discoverable += len(hidden)
    assert (equal, total, discoverable) == (100, 100, 48)


def test_load_domain_takes_the_checkouts_words_without_a_tools_file(checkout: Path) -> None:
    domain = load_domain(checkout, "telecom", tools_dir=checkout / "no-tools-here")
    assert domain.tool_words is not None
    recorded = json.loads((RECORDING / "telecom" / "tools_user.json").read_text(encoding="utf-8"))["tools"]
    spec = domain.spec.user_tools.spec("set_apn_settings")  # type: ignore[union-attr]
    shown = domain.tool_schema("user", spec)  # type: ignore[arg-type]
    assert shown == next(t for t in recorded if t["function"]["name"] == "set_apn_settings")
    bare = load_domain(DATA, "telecom", tools_dir=checkout / "no-tools-here")
    assert bare.tool_words is None  # a data folder without src/: our own words
    explicit = load_domain(checkout, "telecom", tools_dir=RECORDING)  # --tau2-tools wins over src/
    assert explicit.tool_words is not None
    assert explicit.tool_words.seats["user"].path == RECORDING / "telecom" / "tools_user.json"


def test_a_checkout_whose_tool_differs_is_refused_naming_file_tool_field_version(tmp_path: Path) -> None:
    _need_shared()
    root = tmp_path / "other-version"
    for part in ("domains/mock", "environment"):  # what mock's tools module reads
        shutil.copytree(UPSTREAM / "src" / "tau2" / part, root / "src" / "tau2" / part)
    (root / "data").mkdir()
    (root / "data" / "tau2").symlink_to(DATA)
    tools = root / "src" / "tau2" / "domains" / "mock" / "tools.py"
    text = tools.read_text(encoding="utf-8")
    assert "task_id: str, status: TaskStatus" in text
    tools.write_text(text.replace("task_id: str, status: TaskStatus", "task_id: int, status: TaskStatus"),
                     encoding="utf-8")
    with pytest.raises(ToolWordsError) as err:
        load_domain(root, "mock", tools_dir=tmp_path / "none")
    message = str(err.value)
    assert str(tools) in message and "'update_task_status'" in message
    assert "/properties/task_id/type" in message and "8ebb749" in message


@pytest.mark.slow
@pytest.mark.parametrize("domain", CONFORMANCE_DOMAINS)
def test_call_level_suite_stays_at_100_percent_on_the_checkouts_words(checkout: Path, domain: str) -> None:
    report = compare_domain(domain, RECORDING, checkout, words="data")
    why = details(report, show=3)
    assert report.words_error is None, why
    assert report.schemas_agent[0] == report.schemas_agent[1] > 0, why
    assert report.schemas_user[0] == report.schemas_user[1], why
    assert report.setup_errors == 0, why
    assert (report.error_same, report.text_same, report.state_same) == (report.calls,) * 3, why
    assert report.reward_same == report.components_same == report.scored > 0, why
