"""Environment contract: tool lists and schemas per seat, calls that never raise, setup and replay."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.tau2.tool_cases import RETAIL_TOOLS
from uxlocal.tau2 import Domain, Environment, InitialStateError, Message, ToolCall, load_tasks
from uxlocal.tau2.tasks import EnvFunctionCall, InitialState


@pytest.mark.parametrize(
    ("domain", "requestor", "names"),
    [
        ("retail", "assistant", list(RETAIL_TOOLS)),  # spec §B.4.4: 16 tools
        (
            "airline",
            "assistant",
            [  # spec §B.4.5: 14 tools
                "book_reservation",
                "calculate",
                "cancel_reservation",
                "get_flight_status",
                "get_reservation_details",
                "get_user_details",
                "list_all_airports",
                "search_direct_flight",
                "search_onestop_flight",
                "send_certificate",
                "transfer_to_human_agents",
                "update_reservation_baggages",
                "update_reservation_flights",
                "update_reservation_passengers",
            ],
        ),
        ("mock", "assistant", ["create_task", "get_users", "transfer_to_human_agents", "update_task_status"]),
        ("mock", "user", ["check_notifications", "dismiss_notification"]),  # spec §B.4.6 user tools
        ("retail", "user", []),  # retail users have no tools
    ],
)
def test_tool_schemas_offer_exactly_the_spec_tools(
    request: pytest.FixtureRequest, domain: str, requestor: str, names: list[str]
) -> None:
    env = Environment(request.getfixturevalue(domain))
    schemas = env.tool_schemas(requestor)
    assert [s["function"]["name"] for s in schemas] == names


@pytest.mark.parametrize("domain", ["retail", "airline", "mock"])
def test_tool_schemas_are_openai_functions_with_described_arguments(
    request: pytest.FixtureRequest, domain: str
) -> None:
    env = Environment(request.getfixturevalue(domain))
    for schema in env.tool_schemas("assistant") + env.tool_schemas("user"):
        assert schema["type"] == "function"
        function = schema["function"]
        assert function["description"]
        parameters = function["parameters"]
        assert parameters["type"] == "object" and parameters["additionalProperties"] is False
        assert set(parameters["required"]) <= set(parameters["properties"])
        for name, prop in parameters["properties"].items():
            assert prop.get("description"), f"{function['name']}.{name} has no description"
            assert "$ref" not in str(prop) and "title" not in prop


def test_optional_argument_is_plain_type_and_not_required(mock: Domain) -> None:
    create = next(s for s in Environment(mock).tool_schemas() if s["function"]["name"] == "create_task")
    parameters = create["function"]["parameters"]
    assert parameters["required"] == ["user_id", "title"]
    assert parameters["properties"]["description"]["type"] == "string"
    assert "title" in parameters["properties"]  # an argument named "title" survives title-stripping


def test_nested_argument_schemas_are_inlined(airline: Domain) -> None:
    book = next(
        s for s in Environment(airline).tool_schemas() if s["function"]["name"] == "book_reservation"
    )
    flights = book["function"]["parameters"]["properties"]["flights"]
    leg, any_object = flights["items"]["anyOf"]  # tau2's shape: a leg, or any object
    assert leg["properties"]["flight_number"]["type"] == "string" and "$ref" not in leg
    assert any_object == {"additionalProperties": True, "type": "object"}
    cabin = book["function"]["parameters"]["properties"]["cabin"]
    assert cabin["enum"] == ["business", "economy", "basic_economy"]  # tau2's order


@pytest.mark.parametrize(
    ("name", "arguments", "requestor", "fragment"),
    [
        ("delete_order", {}, "assistant", "Tool 'delete_order' not found."),
        ("get_order_details", {}, "assistant",
         "RetailTools.get_order_details() missing 1 required positional argument: 'order_id'"),
        # wrong types are not refused up front, as in tau2: the lookup fails
        ("get_order_details", {"order_id": 5}, "assistant", "Order not found"),
        ("get_order_details", {"order_id": ["#W6247578"]}, "assistant", "unhashable type: 'list'"),
        (
            "get_order_details",
            {"order_id": "#W0", "verbose": True},
            "assistant",
            "RetailTools.get_order_details() got an unexpected keyword argument 'verbose'",
        ),
        ("get_order_details", {"order_id": "#W0000000"}, "assistant", "Order not found"),
        ("get_order_details", "{not json", "assistant", "arguments are not valid JSON"),
        ("get_order_details", "[1, 2]", "assistant", "arguments must be a JSON object"),
        ("get_order_details", {"order_id": "#W6247578"}, "user", "User tools not available"),
        ("get_order_details", {"order_id": "#W6247578"}, "system", "unknown requestor 'system'"),
        (
            "modify_pending_order_items",
            {
                "order_id": "#W6247578",
                "item_ids": "3799046073",
                "new_item_ids": ["9647292434"],
                "payment_method_id": "credit_card_9513926",
            },
            "assistant",
            "3 not found",  # a string where a list belongs: tau2 walks its characters
        ),
    ],
)
def test_call_returns_error_result_instead_of_raising(
    retail: Domain, name: str, arguments: Any, requestor: str, fragment: str
) -> None:
    result = Environment(retail).call(name, arguments, requestor)  # type: ignore[arg-type]
    assert not result.ok and not result.internal
    assert result.content == f"Error: {result.error}"
    assert fragment in (result.error or "")


def test_call_accepts_json_string_arguments(retail: Domain) -> None:
    result = Environment(retail).call("get_order_details", '{"order_id": "#W6247578"}')
    assert result.ok and '"order_id": "#W6247578"' in result.content


def test_helpers_are_not_callable_by_models(mock: Domain) -> None:
    env = Environment(mock)
    assert not env.call("assert_task_status", {"task_id": "task_1", "expected_status": "pending"}).ok
    assert not env.call("add_notification", {"notification_id": "n", "message": "m"}, "user").ok
    assert (
        env.invoke("assistant", "assert_task_status", {"task_id": "task_1", "expected_status": "pending"})
        is True
    )


def test_user_tools_follow_the_task_allow_list(mock: Domain) -> None:
    env = Environment(mock)
    env.restrict_user_tools(["check_notifications"])
    assert [s["function"]["name"] for s in env.tool_schemas("user")] == ["check_notifications"]
    # as in tau2, only the prompt leaves the tool out: a call still runs
    result = env.call("dismiss_notification", {"notification_id": "notif_1"}, "user")
    assert result.ok and result.content == "Notification notif_1 dismissed"
    assert not env.call("fly", {}, "user").ok
    env.restrict_user_tools([])
    assert env.tool_schemas("user") == []
    with pytest.raises(ValueError, match="no user tools named fly"):
        env.restrict_user_tools(["fly"])


def test_policy_text_is_read_from_the_data_dir(retail: Domain, data_dir: Any) -> None:
    assert Environment(retail).policy_text() == (data_dir / "domains/retail/policy.md").read_text()


def test_set_state_replays_history_writes_without_mismatch(data_dir: Any, mock: Domain) -> None:
    task = load_tasks(data_dir, "mock", task_ids=["update_task_with_message_history"])[0]
    env = Environment(mock)
    assert env.set_state(task.initial_state, strict=True) == []
    assert env.agent_db.dump()["tasks"]["task_2"]["title"] == "Project Review"


def test_set_state_reports_history_whose_outputs_differ(mock: Domain) -> None:
    call = ToolCall(id="c1", name="create_task", arguments={"user_id": "user_1", "title": "A"})
    state = InitialState(
        message_history=[
            Message.calls("assistant", [call]),
            Message.tool_result(call, '{"task_id": "task_7"}', error=False),
        ]
    )
    mismatches = Environment(mock).set_state(state)
    assert [m.tool for m in mismatches] == ["create_task"]
    with pytest.raises(InitialStateError, match="history replay differs"):
        Environment(mock).set_state(state, strict=True)


def test_set_state_runs_user_side_setup_helpers(data_dir: Any, mock: Domain) -> None:
    task = load_tasks(data_dir, "mock", task_ids=["update_task_with_user_tools"])[0]
    env = Environment.for_task(mock, task)
    assert env.user_db is not None
    assert env.user_db.dump()["notifications"]["notif_1"]["status"] == "unread"


def test_set_state_failing_setup_call_raises(mock: Domain) -> None:
    state = InitialState(
        initialization_actions=[
            EnvFunctionCall(
                env_type="assistant",
                func_name="update_task_status",
                arguments={"task_id": "task_9", "status": "completed"},
            ),
        ]
    )
    with pytest.raises(InitialStateError, match="Task task_9 not found"):
        Environment(mock).set_state(state)


def test_replay_skips_reads_and_unknown_tools_and_counts_user_calls_on_user_side(mock: Domain) -> None:
    env = Environment(mock)
    messages = [
        Message.calls("assistant", [ToolCall(id="1", name="get_users")]),
        Message.calls("assistant", [ToolCall(id="2", name="fly_to_moon", arguments={})]),
        Message(
            role="user",
            tool_calls=[
                ToolCall(id="3", name="dismiss_notification", arguments={"notification_id": "notif_1"})
            ],
        ),
    ]
    assert env.replay(messages) == []
    assert env.user_db is not None
    assert env.user_db.dump()["notifications"]["notif_1"]["status"] == "read"
    assert env.db_hash() == Environment(mock).db_hash()
