"""Deterministic pre-checks flag planted violations and pass clean trajectories (issue 5, item 3)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from uxlocal.suites.userproxy.ufs.episodes import user_tool_names, user_write_tools
from uxlocal.suites.userproxy.ufs.prechecks import (
    gold_user_actions,
    known_values,
    opening_disclosure,
    run_prechecks,
    unexecuted_action_claim,
    unknown_info_leak,
    unknown_kinds,
)
from uxlocal.tau2 import Action, Message, Task

GREETING = "Hi! How can I help you today?"
Convo = Callable[..., list[Message]]


@pytest.fixture
def retail0(tasks: Callable[[str], dict[str, Task]]) -> Task:
    return tasks("retail")["0"]  # Yusuf Rossi, zip 19122; does not remember his email


@pytest.fixture
def airline0(tasks: Callable[[str], dict[str, Task]]) -> Task:
    return tasks("airline")["0"]  # Emma Kim, user id emma_kim_9957


@pytest.fixture
def mock_tools(tasks: Callable[[str], dict[str, Task]]) -> Task:
    return tasks("mock")["update_task_with_user_tools"]


# --- value extraction -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("known", "expected"),
    [
        ("You are Yusuf Rossi in zip code 19122.", {"name": ["Yusuf Rossi"], "zip": ["19122"]}),
        (
            "You are Emma Kim.\nYour user id is emma_kim_9957.",
            {"name": ["Emma Kim"], "user_id": ["emma_kim_9957"]},
        ),
        (
            "You name is Lucas Brown and your email is lucas.brown9344@example.com.",
            {"name": ["Lucas Brown"], "email": ["lucas.brown9344@example.com"]},
        ),
        (
            "You are an interesting guy called Noah Patel, living in the Big Apple in 10108.",
            {"name": ["Noah Patel"], "zip": ["10108"]},
        ),
        ("Reservation confirmation number is H8Q05L.", {"reservation_id": ["H8Q05L"]}),
        ("Your phone number is 555-123-2002.", {"phone": ["555-123-2002"]}),  # no zip read out of a phone
    ],
)
def test_known_values_are_read_from_known_info(known: str, expected: dict[str, list[str]]) -> None:
    assert known_values(known) == expected


@pytest.mark.parametrize(
    ("unknown", "kinds"),
    [
        ("You do not remember your email address", ["email"]),
        ("You do not know your email. You do not know order numbers.", ["email", "order_id"]),
        ("You don't remember your reservation id.", ["reservation_id"]),
        ("You can't remember Ivan Smith's DOB but it is in your profile.", ["date"]),
        ("You do not know the cabin for the upcoming flight.", []),  # not a value we can recognise
    ],
)
def test_unknown_kinds(unknown: str, kinds: list[str]) -> None:
    assert unknown_kinds(unknown) == kinds


# --- opening disclosure ---------------------------------------------------------------------------


def test_opening_disclosure_flags_identity_given_before_any_question(
    retail0: Task, make_convo: Convo
) -> None:
    messages = make_convo(
        ("assistant", GREETING), ("user", "Hi, I'm Yusuf Rossi from 19122 and I need to exchange two items.")
    )
    result = opening_disclosure(retail0, messages)
    assert result.label == "flagged"
    assert result.turns == (1,)
    assert result.details["disclosed"] == {"zip": ["19122"], "name": ["Yusuf Rossi"]}


def test_opening_disclosure_passes_an_opening_that_waits_to_be_asked(
    retail0: Task, make_convo: Convo
) -> None:
    messages = make_convo(
        ("assistant", GREETING),
        ("user", "Hi, I'd like to exchange two items from an order."),
        ("assistant", "Sure, what is your name and zip code?"),
        ("user", "Yusuf Rossi, 19122."),
    )
    assert opening_disclosure(retail0, messages).label == "clean"


def test_opening_disclosure_flags_user_ids_case_insensitively(airline0: Task, make_convo: Convo) -> None:
    messages = make_convo(("assistant", GREETING), ("user", "Cancel my trip please, user id EMMA_KIM_9957."))
    assert opening_disclosure(airline0, messages).details["disclosed"] == {"user_id": ["emma_kim_9957"]}


def test_opening_disclosure_does_not_apply_after_an_agent_question(retail0: Task, make_convo: Convo) -> None:
    messages = make_convo(
        ("assistant", "Welcome back. Can I have your name and zip code?"), ("user", "Yusuf Rossi, 19122.")
    )
    assert opening_disclosure(retail0, messages).label == "not_applicable"


def test_opening_disclosure_does_not_apply_without_known_values(
    tasks: Callable[[str], dict[str, Task]], make_convo: Convo
) -> None:
    task = tasks("mock")["create_task_1"]
    assert (
        opening_disclosure(task, make_convo(("user", "Create a task for user_1."))).label == "not_applicable"
    )


# --- unknown-info leak ----------------------------------------------------------------------------


def test_unknown_info_leak_flags_an_invented_email(retail0: Task, make_convo: Convo) -> None:
    messages = make_convo(
        ("assistant", GREETING),
        ("user", "I want to exchange items."),
        ("assistant", "What's your email?"),
        ("user", "It's yusuf.rossi@example.com."),
    )
    result = unknown_info_leak(retail0, messages)
    assert result.label == "flagged" and result.turns == (3,)
    assert result.details["values"] == {"email": ["yusuf.rossi@example.com"]}


def test_unknown_info_leak_allows_repeating_what_the_agent_said(retail0: Task, make_convo: Convo) -> None:
    messages = make_convo(
        ("assistant", GREETING),
        ("user", "I forgot my email, sorry."),
        ("call", "assistant", "get_user_details", {"user_id": "yusuf_rossi_9620"}),
        ("result", '{"email": "yusuf.rossi7301@example.com"}'),  # agent-only: the user never saw it
        ("assistant", "I found your account under yusuf.rossi7301@example.com."),
        ("user", "Yes, yusuf.rossi7301@example.com is mine."),
    )
    assert unknown_info_leak(retail0, messages).label == "clean"


def test_unknown_info_leak_flags_values_the_user_only_could_have_read_from_agent_tools(
    retail0: Task, make_convo: Convo
) -> None:
    messages = make_convo(
        ("assistant", GREETING),
        ("call", "assistant", "get_user_details", {"user_id": "yusuf_rossi_9620"}),
        ("result", '{"email": "yusuf.rossi7301@example.com"}'),
        ("user", "My email is yusuf.rossi7301@example.com."),
    )
    assert unknown_info_leak(retail0, messages).label == "flagged"


def test_unknown_info_leak_does_not_apply_without_unknown_kinds(airline0: Task, make_convo: Convo) -> None:
    assert unknown_info_leak(airline0, make_convo(("user", "a@b.com"))).label == "not_applicable"


# --- unexecuted action claims ---------------------------------------------------------------------


def test_user_tool_names_come_from_the_domain(mock_tools: Task, retail0: Task) -> None:
    assert user_tool_names("mock", mock_tools) == ["check_notifications", "dismiss_notification"]
    assert user_tool_names("retail", retail0) == []
    assert user_write_tools("mock") == ["dismiss_notification"]
    assert user_write_tools("nowhere") is None


def test_unexecuted_action_claim_flags_a_claim_without_a_call(mock_tools: Task, make_convo: Convo) -> None:
    tools = user_tool_names("mock", mock_tools)
    messages = make_convo(
        ("assistant", GREETING),
        ("call", "user", "check_notifications", {}),
        ("result", '[{"id": "notif_1"}]'),
        ("user", "I finished task_1, please mark it completed."),
        ("assistant", "Done, it is completed."),
        ("user", "Great, I've dismissed the notification too. ###STOP###"),
    )
    result = unexecuted_action_claim(messages, tools)
    assert result.label == "flagged" and result.turns == (5,)
    assert result.details["claims"][0]["tool"] == "dismiss_notification"


def test_unexecuted_action_claim_passes_claims_backed_by_calls(mock_tools: Task, make_convo: Convo) -> None:
    tools = user_tool_names("mock", mock_tools)
    messages = make_convo(
        ("assistant", GREETING),
        ("user", "I'm checking my notifications now."),  # the call follows at once
        ("call", "user", "check_notifications", {}),
        ("result", "[]"),
        ("call", "user", "dismiss_notification", {"notification_id": "notif_1"}),
        ("result", "{}"),
        ("user", "I have dismissed the notification. ###STOP###"),
    )
    assert unexecuted_action_claim(messages, tools).label == "clean"


def test_unexecuted_action_claim_ignores_other_peoples_actions(mock_tools: Task, make_convo: Convo) -> None:
    messages = make_convo(
        ("user", "You dismissed the notification? Thanks."), ("user", "Please check my notifications for me.")
    )
    assert unexecuted_action_claim(messages, user_tool_names("mock", mock_tools)).label == "clean"


def test_unexecuted_action_claim_needs_user_tools(make_convo: Convo) -> None:
    assert unexecuted_action_claim(make_convo(("user", "I dismissed it.")), []).label == "not_applicable"


# --- gold user actions ------------------------------------------------------------------------------


def _with_user_gold(task: Task) -> Task:
    assert task.evaluation_criteria is not None
    gold = Action(
        action_id="u1",
        requestor="user",
        name="dismiss_notification",
        arguments={"notification_id": "notif_1"},
    )
    criteria = task.evaluation_criteria.model_copy(
        update={"actions": [*(task.evaluation_criteria.actions or []), gold]}
    )
    return task.model_copy(update={"evaluation_criteria": criteria})


def test_gold_user_actions_flags_a_missed_user_write(mock_tools: Task, make_convo: Convo) -> None:
    task = _with_user_gold(mock_tools)
    messages = make_convo(
        ("call", "user", "dismiss_notification", {"notification_id": "notif_2"}),
        ("result", "{}"),
        ("call", "assistant", "dismiss_notification", {"notification_id": "notif_1"}),
    )
    result = gold_user_actions(task, messages, write_tools=user_write_tools("mock"))
    assert result.label == "flagged"
    assert result.details["missed"] == [
        {"action_id": "u1", "name": "dismiss_notification", "arguments": {"notification_id": "notif_1"}}
    ]


def test_gold_user_actions_passes_when_the_user_did_it(mock_tools: Task, make_convo: Convo) -> None:
    task = _with_user_gold(mock_tools)
    messages = make_convo(
        ("call", "user", "dismiss_notification", {"notification_id": "notif_1"}), ("result", "{}")
    )
    assert gold_user_actions(task, messages).label == "clean"
    assert gold_user_actions(mock_tools, messages).label == "not_applicable"  # no user gold actions at all


def test_run_prechecks_on_a_clean_retail_conversation(retail0: Task, make_convo: Convo) -> None:
    messages = make_convo(
        ("assistant", GREETING),
        ("user", "Hello, I'd like to exchange a couple of items."),
        ("assistant", "Can you tell me your email or your name and zip?"),
        ("user", "I don't remember my email. I'm Yusuf Rossi, zip 19122."),
        ("assistant", "Thanks, found you."),
        ("user", "Thanks! ###STOP###"),
    )
    results = {r.kind: r.label for r in run_prechecks(retail0, messages)}
    assert results == {
        "opening_disclosure": "clean",
        "unknown_info_leak": "clean",
        "unexecuted_action_claim": "not_applicable",
        "gold_user_actions": "not_applicable",
    }


def test_a_flight_number_is_not_taken_for_a_reservation_id(
    tasks: Callable[[str], dict[str, Task]], make_convo: Convo
) -> None:
    task = next(
        t
        for t in tasks("airline").values()
        if not isinstance(t.user_scenario.instructions, str)
        and "reservation id" in (t.user_scenario.instructions.unknown_info or "")
    )
    said = make_convo(("user", "It was flight HAT136, I think."))
    assert unknown_info_leak(task, said).label == "clean"
    assert unknown_info_leak(task, make_convo(("user", "The reservation is ZZ9Q7X."))).label == "flagged"


def test_free_text_scenarios_use_identity_values_and_not_know_sentences(make_convo: Convo) -> None:
    task = Task.model_validate(
        {
            "id": "v1",
            "user_scenario": {
                "instructions": (
                    "You are mia_li_3668. You want to cancel reservation ABC123. "
                    "You do not remember your email address."
                )
            },
        }
    )
    opening = make_convo(("user", "Hi, I'm mia_li_3668 and I want to cancel ABC123."))
    result = opening_disclosure(task, opening)
    assert result.details["disclosed"] == {
        "user_id": ["mia_li_3668"]
    }  # the reservation is what the call is about
    leak = make_convo(("user", "Hi."), ("assistant", "Your email?"), ("user", "mia@example.com"))
    assert unknown_info_leak(task, leak).details["values"] == {"email": ["mia@example.com"]}
