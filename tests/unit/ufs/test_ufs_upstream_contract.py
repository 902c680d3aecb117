"""Issue 42 part 4: UFS criteria grounded in what the proxy reads under upstream's protocol.

With a tau2-bench checkout and the upstream protocol, the blueprint criteria are written and checked
against carries tau2-bench's guidelines file (the ``_tools`` variant when the user has tools) and the
user tool schemas built from upstream's docstrings; with our protocol it keeps ours. The checkout is
linked together from ``../shared/upstream/tau2-bench-8ebb749`` and ``../shared/data/tau2`` (skipped
with the reason when either is absent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.config import RunConfig
from uxlocal.errors import InputError
from uxlocal.store.db import connect
from uxlocal.suites.base import SuitePlan, get_suite
from uxlocal.suites.userproxy.ufs.criteria import Blueprint
from uxlocal.suites.userproxy.ufs.sets import domain_blueprints, resolve_contract
from uxlocal.suites.userproxy.ufs.store import load_criteria
from uxlocal.tau2 import load_domain, load_tasks
from uxlocal.tau2.conformance.episode_check import assemble_checkout
from uxlocal.tau2.episode import user_tool_schemas
from uxlocal.tau2.episode.user_proxy import guidelines
from uxlocal.tau2.upstream_words import Tau2Words

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
UPSTREAM = SHARED / "upstream" / "tau2-bench-8ebb749"
DATA = SHARED / "data" / "tau2"
TELECOM = "[mobile_data_issue]airplane_mode_on|data_mode_off[PERSONA:None]"
TASKS = f"telecom/{TELECOM},mock/create_task_1"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for path in (UPSTREAM / "src" / "tau2", DATA / "domains" / "telecom", DATA / "user_simulator"):
        if not path.exists():
            pytest.skip(f"{path} is absent (upstream source and tau2 data are needed)")
    return assemble_checkout(UPSTREAM, DATA, tmp_path_factory.mktemp("checkout"))


def _guidelines_file(tools: bool) -> str:
    name = "simulation_guidelines_tools.md" if tools else "simulation_guidelines.md"
    return (DATA / "user_simulator" / name).read_text(encoding="utf-8")


def _plan(tmp_path: Path, checkout: Path, **options: Any) -> SuitePlan:
    suite = get_suite("userproxy")
    config = suite.config_cls(**{"tau2_data": str(checkout), "domains": "telecom,mock", "tasks": TASKS,
                                 "proxies": "P1", **options})
    return suite.plan(config, RunConfig(suite="userproxy", db=str(tmp_path / "s.duckdb"), progress=False))


def _stored_sha(tmp_path: Path, set_name: str, domain: str, task_id: str) -> str:
    con = connect(tmp_path / "s.duckdb")
    try:
        return load_criteria(con, set_name)[(domain, task_id)].blueprint_sha256
    finally:
        con.close()


def test_upstream_blueprint_holds_tau2_benchs_guidelines_file_and_user_tool_words(checkout: Path) -> None:
    words = Tau2Words.load(checkout, "telecom")
    domain = load_domain(checkout, "telecom")
    task = next(t for t in load_tasks(checkout, "telecom", task_ids=[TELECOM]))
    bp = resolve_contract("auto", data_dir=checkout, domain_name="telecom").blueprint(domain, task)
    upstream_tools = words.tool_schemas("user", task.user_tools)
    assert upstream_tools and len(bp.user_tools) == len(upstream_tools) == 30
    assert list(bp.user_tools) == upstream_tools  # upstream's order and words, not ours
    ours = user_tool_schemas(domain, task)
    assert [t["function"]["name"] for t in ours] != [t["function"]["name"] for t in upstream_tools]
    assert bp.contract == _guidelines_file(tools=True).strip()
    assert bp.sections == Blueprint.from_task(task, domain="telecom").sections  # the scenario, verbatim
    retail = domain_blueprints(checkout, "retail", contract="tau2", task_ids=["0"])[("retail", "0")]
    assert retail.contract == _guidelines_file(tools=False).strip() and retail.user_tools == ()  # no tools
    ours_bps = domain_blueprints(checkout, "telecom", contract="ours", task_ids=[TELECOM])
    ours_bp = ours_bps[("telecom", TELECOM)]
    assert ours_bp.contract == guidelines(ours).strip() and list(ours_bp.user_tools) == ours
    assert len({bp.sha256(), ours_bp.sha256()}) == 2


def test_upstream_run_writes_template_criteria_against_the_checkouts_words(tmp_path: Path,
                                                                           checkout: Path) -> None:
    plan = _plan(tmp_path, checkout, criteria_template=True)
    task = next(t for t in load_tasks(checkout, "telecom", task_ids=[TELECOM]))
    tools = Tau2Words.load(checkout, "telecom").tool_schemas("user", task.user_tools) or []
    expected = Blueprint.from_task(task, domain="telecom", contract=_guidelines_file(tools=True),
                                   user_tools=tools)
    assert _stored_sha(tmp_path, "template", "telecom", TELECOM) == expected.sha256()
    assert sum("upstream protocol, comparable" in note for note in plan.notes) == 2
    grounded = "criteria grounded in tau2-bench's guidelines and tool words"
    assert sum(grounded in note for note in plan.notes) == 2
    coverage = {item["item_id"]: item["data"]["ufs_coverage"] for item in plan.items}
    assert coverage[f"telecom/{TELECOM}"]["n_fields"] == 3  # reason_for_call, known_info, task_instructions
    assert any(note.startswith("criteria coverage: ") for note in plan.notes)


def test_our_protocol_keeps_our_guidelines_and_tool_words_on_a_checkout(tmp_path: Path,
                                                                         checkout: Path) -> None:
    _plan(tmp_path, checkout, criteria_template=True, protocol="ours")
    domain = load_domain(checkout, "telecom")
    task = next(t for t in load_tasks(checkout, "telecom", task_ids=[TELECOM]))
    tools = user_tool_schemas(domain, task)
    expected = Blueprint.from_task(task, domain="telecom", contract=guidelines(tools), user_tools=tools)
    assert _stored_sha(tmp_path, "template", "telecom", TELECOM) == expected.sha256()


def test_criteria_written_for_one_protocol_are_refused_for_the_other_naming_both(tmp_path: Path,
                                                                                checkout: Path) -> None:
    _plan(tmp_path, checkout, criteria_set="up", criteria_template=True)  # upstream (auto on a checkout)
    with pytest.raises(InputError) as refused:
        _plan(tmp_path, checkout, criteria_set="up", protocol="ours")
    text = str(refused.value)
    assert "written for the tau2-bench checkout user contract" in text and "2 task(s)" in text
    assert "--contract ours" in text and "--protocol upstream" in text
    _plan(tmp_path, checkout, criteria_set="ours", criteria_template=True, protocol="ours")
    with pytest.raises(InputError) as refused:
        _plan(tmp_path, checkout, criteria_set="ours", protocol="upstream")
    text = str(refused.value)
    assert "written for the ours user contract" in text and "tau2-bench's guidelines" in text
    assert "--contract tau2" in text and "--protocol ours" in text
    _plan(tmp_path, checkout, criteria_set="ours", protocol="ours")  # the protocol it was written for


def test_ufs_criteria_commands_default_to_the_contract_a_userproxy_run_plays(tmp_path: Path,
                                                                           checkout: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    base = ["ufs", "criteria", "--tasks", TELECOM, "--domain", "telecom", "--template", "--tau2-data",
            str(checkout), "--db", db]
    for name, extra in (("auto", []), ("ours", ["--contract", "ours"])):
        result = CliRunner().invoke(cli, [*base, "--set", name, *extra])
        assert result.exit_code == 0, result.output
        assert "criteria coverage: " in result.output and "3 scenario fields of 1 task(s)" in result.output
    _plan(tmp_path, checkout, criteria_set="auto", tasks=f"telecom/{TELECOM}")  # accepted as written
    with pytest.raises(InputError, match="written for the ours user contract"):
        _plan(tmp_path, checkout, criteria_set="ours", tasks=f"telecom/{TELECOM}")
    row = {"domain": "telecom", "task_id": TELECOM, "criterion_id": "c1", "family": "premature_disclosure",
           "mode": "volunteers_unasked_info", "text": "The user gives its phone number only when asked.",
           "grounding_span": "You are John Smith with phone number 555-123-2002.", "applies_when": "always"}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(row) + "\n")
    imported = CliRunner().invoke(cli, ["ufs", "criteria-import", str(path), "--set", "hand", "--tau2-data",
                                        str(checkout), "--db", db])
    assert imported.exit_code == 0, imported.output
    hand, auto = (_stored_sha(tmp_path, name, "telecom", TELECOM) for name in ("hand", "auto"))
    assert hand == auto  # criteria-import grounds in the same contract by default


def test_criteria_runs_name_the_resolved_contract_in_their_identity(checkout: Path) -> None:
    from uxlocal.suites.userproxy.criteria_run import CriteriaConfig, CriteriaSuite

    hashes = {name: CriteriaSuite().prompt_hashes(CriteriaConfig(domain="telecom", tau2_data=checkout,
                                                                  contract=name))["ufs-contract/telecom"]
              for name in ("auto", "tau2", "ours")}
    words = Tau2Words.load(checkout, "telecom")
    assert words.source is not None
    upstream = f"tau2-bench:{words.source.sha256}"
    assert hashes == {"auto": upstream, "tau2": upstream, "ours": "ours"}
    bare = CriteriaSuite().prompt_hashes(CriteriaConfig(domain="telecom", tau2_data=DATA, contract="auto"))
    assert bare["ufs-contract/telecom"] == "ours"  # a bare data folder: our protocol, our contract
