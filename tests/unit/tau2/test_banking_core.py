"""banking_knowledge core (issue 16): the domain, its 14 agent and 6+4 user tools, grading versions.

Reads the pinned data in ``../shared/data/tau2/domains/banking_knowledge`` (skips without it). The
discoverable agent tools come from the cards and accounts modules; tests of the discoverable
machinery register two probe tools of their own, so they run whichever of those modules exist.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from click.testing import CliRunner

from uxlocal.cli.main import cli
from uxlocal.config import RunConfig
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.errors import InputError
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.tau2 import Domain, Environment, Message, Task, ToolCall, load_domain, load_tasks
from uxlocal.tau2.domains.banking_knowledge.agent_tools import read_log_allowlist
from uxlocal.tau2.domains.banking_knowledge.db import BankingDB
from uxlocal.tau2.domains.banking_knowledge.discoverable import DISCOVERABLE_AGENT
from uxlocal.tau2.episode.options import Tau2Options, user_tool_schemas
from uxlocal.tau2.episode.prompts import fill
from uxlocal.tau2.episode.user_proxy import guidelines
from uxlocal.tau2.registry import DomainSpec, expand_domains
from uxlocal.tau2.replay import replay_task, scripted_trajectory, total_line
from uxlocal.tau2.reward import action_matches, score_episode
from uxlocal.tau2.tasks import Action
from uxlocal.tau2.termination import USER_STOP
from uxlocal.tau2.toolkit import Toolkit, ToolSpec, arg

BANKING = "banking_knowledge"
DISCOVERABLE_CALLS = ("unlock_discoverable_agent_tool", "call_discoverable_agent_tool")
USER_ONLY_WRITE_TASKS = ("task_001", "task_002", "task_003", "task_006", "task_007", "task_024", "task_025")
ACTION_TRANSFER_TASKS = ("task_004", "task_008", "task_012", "task_014", "task_034")


@pytest.fixture(scope="module")
def banking(data_dir: Path) -> Domain:
    return load_domain(data_dir, BANKING)


@pytest.fixture(scope="module")
def banking_101(data_dir: Path) -> Domain:
    return load_domain(data_dir, BANKING, tau2_version="1.0.1")


@pytest.fixture(scope="module")
def tasks(data_dir: Path) -> dict[str, Task]:
    return {t.id: t for t in load_tasks(data_dir, BANKING)}


def _probe_read_0001(db: BankingDB, user_id: Annotated[str, arg("Whose profile to read.")]) -> str:
    """Read one customer's profile (a test probe)."""
    row = db.users.get(user_id)
    return f"Error: no user {user_id}" if row is None else str(row)


def _probe_write_0002(
    db: BankingDB,
    user_id: Annotated[str, arg("Whose email to change.")],
    amount: Annotated[float, arg("A number stored as sent.")],
) -> str:
    """Store a number on a customer's row (a test probe); refuses unknown users, as upstream, in words."""
    if user_id not in db.users:
        return f"Error: no user {user_id}"
    db.users.edit(user_id)["probe_amount"] = amount
    return "stored"


@pytest.fixture()
def probes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two discoverable agent tools that exist only during the test."""
    scratch = Toolkit("probes")
    scratch.tool("read", (_probe_read_0001.__doc__ or "").split("(")[0].strip())(_probe_read_0001)
    scratch.tool("write", (_probe_write_0002.__doc__ or "").split(";")[0])(_probe_write_0002)
    for spec in scratch.tools():
        renamed = ToolSpec(spec.name.lstrip("_"), spec.kind, spec.description, spec.args_model, spec.func)
        monkeypatch.setitem(DISCOVERABLE_AGENT._specs, renamed.name, renamed)
    yield


def _db(env: Environment) -> BankingDB:
    assert isinstance(env.agent_db, BankingDB)
    return env.agent_db


def _called(env: Environment) -> list[str]:
    return [row["tool_name"] for row in _db(env).agent_discoverable_tools.values()]


def _missing_discoverable(tasks: dict[str, Task], always: set[str]) -> list[str]:
    """Name the discoverable tools the gold uses that no module has registered yet.

    Direct tools are left out: task_077 calls one through the wrapper, which fails by design.
    """
    actions = [a for t in tasks.values() if t.evaluation_criteria
               for a in t.evaluation_criteria.actions or []]
    used = {str(a.arguments.get("agent_tool_name")) for a in actions if a.name in DISCOVERABLE_CALLS}
    return sorted(used - set(DISCOVERABLE_AGENT.names()) - always)


# --- the domain ----------------------------------------------------------------------------------


def test_banking_domain_offers_14_agent_and_6_user_tools(banking: Domain) -> None:
    env = Environment(banking)
    agent = {s.name for s in env.tool_specs("assistant")} - {"KB_search"}
    assert len(agent) == 14 and "call_discoverable_agent_tool" in agent
    assert len(env.tool_specs("user")) == 6
    assert env.user_db is None and env.user_db_hash() is None  # one shared DB, one hash


def test_banking_policy_resolves_component_includes_from_the_data_dir(banking: Domain) -> None:
    policy = banking.policy_text()
    header = (banking.folder / "prompts/components/policy_header.md").read_text(encoding="utf-8")
    assert "{{component:" not in policy and header.strip() in policy and "KB_search" in policy


def test_banking_tasks_load_from_task_files_in_name_order(tasks: dict[str, Task]) -> None:
    ids = list(tasks)
    assert len(ids) == 97 and ids == sorted(ids) and ids[0] == "task_001"
    assert tasks["task_053"].user_tools == ["call_discoverable_user_tool"]  # the 8ebb749 file, not tasks.json


def test_banking_task_file_errors_name_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "domains" / BANKING / "tasks"
    folder.mkdir(parents=True)
    (folder / "task_001.json").write_text('{"id": "task_001",\n "user_scenario": ', encoding="utf-8")
    with pytest.raises(InputError, match="task_001.json:2"):
        load_tasks(tmp_path, BANKING)


def test_domain_spec_rejects_a_shared_db_with_its_own_user_db() -> None:
    with pytest.raises(ValueError, match="shared DB"):
        DomainSpec(name="x", agent_db=BankingDB, agent_tools=Toolkit("a"), user_tools=Toolkit("u"),
                   user_db=BankingDB, user_db_file="u.json", shared_db=True)


# --- discoverable agent tools ------------------------------------------------------------------


# Upstream answers the doors' refusals as ordinary results (no error flag), so a model reads them as
# text and they never count as tool errors; issue 29 made ours do the same (they were error results).


def test_calling_a_locked_tool_is_refused_in_the_answer(banking: Domain, probes: None) -> None:
    env = Environment(banking)
    result = env.call("call_discoverable_agent_tool",
                      {"agent_tool_name": "probe_read_0001", "arguments": '{"user_id": "123"}'})
    assert result.ok and "has not been unlocked" in result.content
    assert _called(env) == []


@pytest.mark.parametrize("tool", DISCOVERABLE_CALLS)  # both doors refuse a name the bank has no tool for
def test_unknown_agent_tool_is_refused_in_the_answer(banking: Domain, tool: str) -> None:
    env = Environment(banking)
    result = env.call(tool, {"agent_tool_name": "downgrade_credit_card_3847"})
    assert result.ok and result.content == ("Error: Unknown agent tool 'downgrade_credit_card_3847'. "
                                            "This tool is not available.")


def test_unlock_describes_the_tool_and_enables_the_call(banking: Domain, probes: None) -> None:
    env = Environment(banking)
    unlocked = env.call("unlock_discoverable_agent_tool", {"agent_tool_name": "probe_write_0002"})
    assert (
        unlocked.ok and "Description: Store a number on a customer's row (a test probe)" in unlocked.content
    )
    assert "  - user_id: string (required) - Whose email to change." in unlocked.content
    assert "  - amount: number (required) - A number stored as sent." in unlocked.content
    before = env.db_hash()
    assert _db(env).unlocked_agent_tools == ["probe_write_0002"] and env.db_hash() == before  # not hashed
    called = env.call("call_discoverable_agent_tool",
                      {"agent_tool_name": "probe_write_0002", "arguments": '{"user_id": "123", "amount": 5}'})
    assert called.ok and _called(env) == ["probe_write_0002"]
    assert _db(env).users.get("123")["probe_amount"] == 5  # type: ignore[index]


@pytest.mark.parametrize(
    "arguments, ok, answer, logged",
    [
        # the tool refused in words: the call ran, so it is logged
        ('{"user_id": "nobody", "amount": 1}', True, "Error: no user nobody", True),
        # missing argument: Python's own message, as upstream's; the tool never ran
        (
            '{"user_id": "123"}',
            True,
            "Error: Invalid arguments: KnowledgeTools.probe_write_0002() "
            "missing 1 required positional argument: 'amount'",
            False,
        ),
        # unexpected argument
        (
            '{"user_id": "123", "amount": 1, "extra": 2}',
            True,
            "Error: Invalid arguments: KnowledgeTools.probe_write_0002() "
            "got an unexpected keyword argument 'extra'",
            False,
        ),
        # unreadable arguments
        (
            "not json",
            True,
            "Error: Invalid JSON in arguments: Expecting value: line 1 column 1 (char 0)",
            False,
        ),
        # arguments as a JSON object rather than text: json.loads raises, an error result as upstream
        (
            {"user_id": "123", "amount": 1},
            False,
            "Error: the JSON object must be str, bytes or bytearray, not dict",
            False,
        ),
    ],
)
def test_discoverable_call_refusals_are_answers_logged_only_when_the_tool_ran(
    banking: Domain, probes: None, arguments: object, ok: bool, answer: str, logged: bool
) -> None:
    env = Environment(banking)
    env.call("unlock_discoverable_agent_tool", {"agent_tool_name": "probe_write_0002"})
    _probe_owner = DISCOVERABLE_AGENT.spec("probe_write_0002").func  # type: ignore[union-attr]
    _probe_owner.__qualname__ = "KnowledgeTools.probe_write_0002"
    result = env.call("call_discoverable_agent_tool", {"agent_tool_name": "probe_write_0002",
                                                        "arguments": arguments})
    assert (result.ok, result.content, result.internal) == (ok, answer, False)
    assert _called(env) == (["probe_write_0002"] if logged else [])


def test_grading_versions_differ_in_logging_reads_and_in_numbers(
    banking: Domain, banking_101: Domain, probes: None
) -> None:
    def play(domain: Domain) -> Environment:
        env = Environment(domain)
        for name, args in (("probe_read_0001", '{"user_id": "123"}'),
                           ("probe_write_0002", '{"user_id": "123", "amount": 100000}')):
            env.call("unlock_discoverable_agent_tool", {"agent_tool_name": name})
            assert env.call("call_discoverable_agent_tool", {"agent_tool_name": name, "arguments": args}).ok
        return env

    pinned, later = play(banking), play(banking_101)
    assert _called(pinned) == ["probe_read_0001", "probe_write_0002"]
    assert _called(later) == ["probe_write_0002"]  # a read outside the allowlist leaves no row
    amounts = [_db(e).users.get("123")["probe_amount"] for e in (pinned, later)]  # type: ignore[index]
    assert amounts == [100000, 100000.0] and type(amounts[0]) is int and type(amounts[1]) is float
    _db(later).grading.read_log_allowlist = frozenset({"probe_read_0001"})
    later.call("call_discoverable_agent_tool", {"agent_tool_name": "probe_read_0001",
                                                "arguments": '{"user_id": "123"}'})
    assert _called(later) == ["probe_write_0002", "probe_read_0001"]


def test_read_log_allowlist_is_the_gold_discoverable_calls(tasks: dict[str, Task],
                                                          banking_101: Domain) -> None:
    task = tasks["task_077"]
    expected = {a.arguments["agent_tool_name"] for a in task.evaluation_criteria.actions or []  # type: ignore[union-attr]
                if a.name == "call_discoverable_agent_tool"}
    assert read_log_allowlist(task) == expected and "get_bank_account_transactions_9173" in expected
    grading = _db(Environment.for_task(banking_101, task)).grading
    assert grading.later and grading.read_log_allowlist == expected


# --- user tools ---------------------------------------------------------------------------------


def test_user_discoverable_tool_needs_the_agent_to_give_it(banking: Domain) -> None:
    env = Environment(banking)
    call = {"discoverable_tool_name": "get_card_last_4_digits",
            "arguments": '{"credit_card_account_id": "cc_lj82d4f1a9_silver"}'}
    refused = env.call("call_discoverable_user_tool", call, "user")
    assert (
        refused.ok and "has not been given to you by the agent" in refused.content
    )  # an answer, as upstream
    assert len(_db(env).user_discoverable_tool_calls) == 0
    given = env.call("give_discoverable_user_tool", {"discoverable_tool_name": "get_card_last_4_digits"})
    assert given.ok and "Description: Look up the last four digits" in given.content
    for _ in range(2):  # the same call twice: one log row, keyed by name + sorted arguments
        answer = env.call("call_discoverable_user_tool", call, "user")
        assert answer.ok and re.search(r"Last 4 digits of card: \d{4}$", answer.content)
    logged = [r["tool_name"] for r in _db(env).user_discoverable_tool_calls.values()]
    assert logged == ["get_card_last_4_digits"]


@pytest.mark.parametrize("name, arguments, requestor, ok, answer", [
    # a discoverable user tool called by name runs as upstream's does, and checks it was given
    ("get_card_last_4_digits", {"credit_card_account_id": "x"}, "user", True,
     "Error: Tool 'get_card_last_4_digits' has not been given to you by the agent."),
    # no such user tool: refused in the answer
    ("call_discoverable_user_tool", {"discoverable_tool_name": "open_webpage"}, "user", True,
     "Error: Unknown discoverable tool 'open_webpage'."),
    ("give_discoverable_user_tool", {"discoverable_tool_name": "open_webpage"}, "assistant", True,
     "Error: Unknown discoverable tool 'open_webpage'."),
    # a user tool for the agent: the seat has no such tool, an error result
    ("apply_for_credit_card", {"card_type": "Gold Rewards Card"}, "assistant", False,
     "Error: Tool 'apply_for_credit_card' not found."),
])
def test_tool_outside_a_seats_tools_answers_as_upstream(banking: Domain, name: str, arguments: dict[str, Any],
                                                        requestor: str, ok: bool, answer: str) -> None:
    result = Environment(banking).call(name, arguments, requestor)  # type: ignore[arg-type]
    assert result.ok is ok and result.content.startswith(answer) and not result.internal


def test_user_tools_filter_follows_the_task(banking: Domain, tasks: dict[str, Task]) -> None:
    only_apply = tasks["task_001"]
    env = Environment.for_task(banking, only_apply)
    assert [s.name for s in env.tool_specs("user")] == ["apply_for_credit_card"]
    # not among the tools this task gives the user, yet it runs when called, as in tau2
    result = env.call("submit_referral", {"user_id": "123", "account_type": "Gold Rewards Card"}, "user")
    assert result.ok
    no_tools = next(t for t in tasks.values() if t.user_tools == [])
    assert user_tool_schemas(banking, no_tools) == []
    assert guidelines(user_tool_schemas(banking, no_tools)) == fill("user.md")  # the plain contract
    unknown = only_apply.model_copy(update={"user_tools": ["apply_for_credit_card", "teleport"]})
    assert user_tool_schemas(banking, unknown) == []  # as upstream: the user is left with no tools


def test_user_writes_land_in_the_shared_db(banking: Domain) -> None:
    env = Environment(banking)
    before = env.db_hash()
    result = env.call("submit_referral", {"user_id": "123", "account_type": "Gold Rewards Card"}, "user")
    assert result.ok and env.db_hash() != before
    assert _db(env).referrals.find(referrer_id="123", referred_account_type="Gold Rewards Card")


def test_each_transfer_request_is_a_row_so_the_count_is_hashed(banking: Domain) -> None:
    hashes = []
    env = Environment(banking)
    for _ in range(3):
        hashes.append(env.db_hash())
        assert env.call("request_human_agent_transfer", {}, "user").ok
    hashes.append(env.db_hash())
    assert len(set(hashes)) == 4
    assert list(_db(env).human_transfer_requests.keys()) == [f"transfer_request_{n}" for n in (1, 2, 3)]


def test_banking_tool_errors_do_not_count_toward_max_errors(banking: Domain) -> None:
    assert banking.spec.tool_errors_count is False  # upstream answers refusals as text
    assert load_domain(banking.folder.parents[1], "mock").spec.tool_errors_count is True


# --- reward and replay -------------------------------------------------------------------------


def test_action_matching_ignores_the_seat_and_compares_the_calls_own_keys() -> None:
    gold = Action(action_id="a", requestor="assistant", name="t", arguments={"x": 1, "y": 2})
    by_user = ToolCall(id="1", name="t", arguments={"x": 1}, requestor="user")
    assert action_matches(gold, by_user, any_seat=True) and not action_matches(gold, by_user)
    extra = ToolCall(id="2", name="t", arguments={"x": 1, "y": 2, "z": 3}, requestor="assistant")
    assert not action_matches(gold, extra, any_seat=True) and action_matches(gold, extra)


def _gold_without_discoverable(tasks: dict[str, Task]) -> list[Task]:
    return [t for t in tasks.values() if t.evaluation_criteria and not any(
        a.name in DISCOVERABLE_CALLS for a in t.evaluation_criteria.actions or [])]


def test_gold_replay_scores_1_on_tasks_that_use_only_core_tools(banking: Domain,
                                                                tasks: dict[str, Task]) -> None:
    chosen = _gold_without_discoverable(tasks)
    assert {*USER_ONLY_WRITE_TASKS, *ACTION_TRANSFER_TASKS} <= {t.id for t in chosen}
    for task in chosen:
        env = Environment.for_task(banking, task)
        start = env.db_hash()
        messages = scripted_trajectory(env, task, "gold")
        failed = [m.content for m in messages if m.role == "tool" and m.error]
        assert not failed, task.id  # the gold calls succeed
        if "DB" in task.evaluation_criteria.reward_basis:  # type: ignore[union-attr]
            assert env.db_hash() != start, task.id  # the gold changed the DB: the DB check is not vacuous
        outcome = replay_task(banking, task, "gold")
        if task.id == "task_102":  # NL_ASSERTION: left to the judge; its model-free part must pass
            assert outcome.reward is None and outcome.model_free == 1.0
        else:
            assert outcome.reward == 1.0, (task.id, outcome.failing)


def test_empty_trajectory_scores_0_on_all_97(banking: Domain, tasks: dict[str, Task]) -> None:
    for task in tasks.values():
        draft = score_episode(banking, task, [], USER_STOP)
        assert draft.partial.reward == 0.0, task.id


def _with_income(task: Task, banking: Domain, income: float) -> list[Message]:
    env = Environment.for_task(banking, task)
    messages = []
    for action in task.evaluation_criteria.actions or []:  # type: ignore[union-attr]
        arguments = {**action.arguments, "annual_income": income}
        call = ToolCall(id=action.action_id, name=action.name, arguments=arguments,
                        requestor=action.requestor)
        messages += [Message.calls(call.requestor, [call]),
                     Message.tool_result(call, env.call_tool(call).content, error=False)]
    return messages


def test_income_sent_as_float_fails_at_8ebb749_and_passes_at_1_0_1(
    banking: Domain, banking_101: Domain, tasks: dict[str, Task]
) -> None:
    task = tasks["task_001"]
    gold = task.evaluation_criteria.actions[0]  # type: ignore[union-attr, index]
    assert gold.name == "apply_for_credit_card" and gold.arguments["annual_income"] == 100000
    assert type(gold.arguments["annual_income"]) is int
    rewards = [score_episode(d, task, _with_income(task, d, 100000.0), USER_STOP).finish().reward
               for d in (banking, banking_101)]
    assert rewards == [0.0, 1.0]


def test_extra_discoverable_read_fails_at_8ebb749_and_passes_at_1_0_1(
    banking: Domain, banking_101: Domain, tasks: dict[str, Task]
) -> None:
    extra = "get_all_user_accounts_by_user_id_3847"
    if DISCOVERABLE_AGENT.spec(extra) is None:
        pytest.skip(f"discoverable tool {extra} is not registered on this branch (bank-accounts)")
    task = tasks["task_058"]
    rewards = []
    for domain in (banking, banking_101):
        env = Environment.for_task(domain, task)
        messages = scripted_trajectory(env, task, "gold")
        for name, args in (("unlock_discoverable_agent_tool", {"agent_tool_name": extra}),
                           ("call_discoverable_agent_tool", {"agent_tool_name": extra,
                                                             "arguments": '{"user_id": "lj82d4f1a9"}'})):
            call = ToolCall(id=name, name=name, arguments=args, requestor="assistant")
            answer = env.call_tool(call)
            messages += [Message.calls("assistant", [call]), Message.tool_result(call, answer.content,
                                                                                 error=not answer.ok)]
        rewards.append(score_episode(domain, task, messages, USER_STOP).finish().reward)
    assert rewards == [0.0, 1.0]


@pytest.mark.parametrize("version", ["8ebb749", "1.0.1"])  # gold and predicted follow the same grading
def test_gold_replay_scores_1_on_all_97(data_dir: Path, tasks: dict[str, Task], version: str) -> None:
    banking = load_domain(data_dir, BANKING, tau2_version=version)
    always = set(banking.spec.agent_tools.names())
    missing = _missing_discoverable(tasks, always)
    if missing:
        pytest.skip(f"{len(missing)} discoverable agent tools used by the gold are not registered yet: "
                    f"{', '.join(missing)}")
    outcomes = {t.id: replay_task(banking, t, "gold") for t in tasks.values()}
    assert [i for i, o in outcomes.items() if o.reward not in (1.0, None)] == []
    assert [i for i, o in outcomes.items() if o.reward is None] == ["task_102"]
    assert outcomes["task_102"].model_free == 1.0


def test_gold_calls_that_fail_by_design_are_replayed_as_they_are(banking: Domain,
                                                                  tasks: dict[str, Task]) -> None:
    if _missing_discoverable(tasks, set(banking.spec.agent_tools.names())):
        pytest.skip("needs every discoverable agent tool the gold uses")
    failing = {}
    for task in tasks.values():
        messages = scripted_trajectory(Environment.for_task(banking, task), task, "gold")
        errors = [m.content for m in messages if m.role == "tool" and (m.content or "").startswith("Error")]
        if errors:
            failing[task.id] = len(errors)
            assert replay_task(banking, task, "gold").reward == 1.0, task.id
    # 051 repeats a credit-limit request; 077 calls a direct tool through the wrapper (twice);
    # 083's gold omits a required argument of the dispute tool (four calls)
    assert failing == {"task_051": 1, "task_077": 2, "task_083": 4}


def test_data_hashes_cover_task_files_and_policy_components(data_dir: Path) -> None:
    from uxlocal.tau2.data import data_hashes

    keys = set(data_hashes(data_dir, [BANKING]))
    prefix = f"tau2-data/{BANKING}/"
    assert f"{prefix}tasks/task_001.json" in keys and f"{prefix}tasks.json" not in keys
    assert f"{prefix}prompts/components/policy_header.md" in keys and f"{prefix}db.json" in keys
    assert sum(1 for k in keys if k.startswith(f"{prefix}tasks/")) == 97


# --- options and CLI -----------------------------------------------------------------------------


def test_tau2_version_option_reaches_every_environment(data_dir: Path, tasks: dict[str, Task]) -> None:
    domain = Tau2Options(tau2_version="1.0.1").load_domain(data_dir, BANKING)
    assert domain.tau2_version == "1.0.1"
    assert _db(Environment.for_task(domain, tasks["task_001"])).grading.version == "1.0.1"
    assert Tau2Options().tau2_version == "8ebb749"
    with pytest.raises(ValueError, match="unknown tau2 version"):
        load_domain(data_dir, BANKING, tau2_version="2.0")


def test_replay_cli_takes_the_version_and_prints_a_total(data_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["tau2", "replay", "--domain", "mock", "--domain", "banking_knowledge",
                                      "--agent", "empty", "--tau2-version", "1.0.1",
                                      "--tau2-data", str(data_dir)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    mock = re.match(r"mock empty: (\d+) / (\d+)", lines[0])
    assert mock is not None
    assert ("banking_knowledge empty: 0 / 97 on the model-free checks (fully scored: 0 / 96; 1 more carry "
            "NL assertions a replay cannot judge)") in lines
    assert lines[-1] == (
        f"total empty: {mock[1]} / {int(mock[2]) + 97} on the model-free checks (fully "
        f"scored: {mock[1]} / {int(mock[2]) + 96}; 1 more carry NL assertions a replay cannot judge)"
    )


def test_gold_replay_of_all_375_userproxybench_tasks_passes_every_check_a_replay_can_score(
    data_dir: Path,
) -> None:
    result = CliRunner().invoke(cli, ["tau2", "replay", "--domain", "all", "--agent", "gold",
                                      "--tau2-data", str(data_dir)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:2] == ["telecom gold: 114 / 114", "airline gold: 50 / 50"]
    assert lines[-1] == ("total gold: 375 / 375 on the model-free checks (fully scored: 334 / 334; "
                         "41 more carry NL assertions a replay cannot judge)")


def test_domain_all_expands_to_the_four_userproxybench_domains() -> None:
    assert expand_domains(["all", "retail"]) == ["telecom", "airline", "retail", "banking_knowledge"]
    assert total_line([]) == "total replay: 0 / 0"


def test_run_commands_offer_the_tau2_version_option() -> None:
    for command in (["run", "tau2", "-h"], ["run", "userproxy", "-h"], ["tau2", "replay", "-h"]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 0 and "--tau2-version" in result.output, command
        assert json.dumps("1.0.1").strip('"') in result.output


# --- a whole episode through the suite (fake engines) ---------------------------------------------


def _applying_user(income: float | int) -> Any:
    """User: apply for task_001's card with ``income``, then stop; agent: one message."""

    def script(prepared: Any) -> str:
        request = prepared.request
        if request.role == "judge":
            return json.dumps({"justification": "seen", "met": True})
        if request.role != "user":
            return json.dumps({"message": "You can apply for the card yourself."})
        if any(m["content"].startswith("Tool result") for m in request.messages):
            return json.dumps({"message": "###STOP###"})
        return json.dumps({"tool": "apply_for_credit_card", "arguments": {
            "card_type": "Gold Rewards Card", "customer_name": "Sarah Bosch", "annual_income": income,
            "rho_bank_subscription": True}})

    return script


@pytest.mark.parametrize("version, income, reward", [
    ("8ebb749", 100000, 1.0),  # the gold's own call
    ("8ebb749", 100000.0, 0.0),  # the pinned grading tells the float apart
    ("1.0.1", 100000.0, 1.0),  # the later grading reads both as a float
])
def test_suite_plays_a_banking_episode_with_a_user_tool_on_the_shared_db(
    tmp_path: Path, data_dir: Path, tasks: dict[str, Task], version: str, income: float, reward: float
) -> None:
    gold = tasks["task_001"].evaluation_criteria.actions[0].arguments  # type: ignore[union-attr, index]
    assert (gold["card_type"], gold["customer_name"], gold["rho_bank_subscription"]) == (
        "Gold Rewards Card", "Sarah Bosch", True)
    pool = ModelPool.from_engines({role: FakeEngine(_applying_user(income), identity=f"fake-{role}")
                                   for role in ("agent", "user", "judge")})
    config = {"tau2_data": str(data_dir), "domain": BANKING, "tasks": "task_001", "tau2_version": version}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / "s.duckdb"), progress=False)
    result = run_suite(run, pool=pool)
    con = connect(tmp_path / "s.duckdb")
    row = con.execute("SELECT reward, info FROM episodes WHERE run_id = ?", [result.run_id]).fetchone()
    assert row is not None and row[0] == reward
    assert json.loads(row[1])["tau2_version"] == version
