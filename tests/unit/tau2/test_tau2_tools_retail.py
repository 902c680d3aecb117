"""Retail tools (spec §B.4.4): one happy path and at least one refusal per tool, on the real DB."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.tau2.tool_cases import RETAIL_TOOLS, refusal_cases, refused
from uxlocal.tau2 import Domain, Environment

YUSUF = "yusuf_rossi_9620"  # one credit card; pending #W6247578, delivered #W2378156
YUSUF_CARD = "credit_card_9513926"
ANYA = "anya_garcia_3271"  # gift card with 51.0; pending #W6436609 paid 3005.33 by that gift card
ANYA_GIFT = "gift_card_4374071"
ANYA_CARD = "credit_card_8955149"


@pytest.fixture
def env(retail: Domain) -> Environment:
    return Environment(retail)


def _gift_balance(content: Callable[..., Any], env: Environment, user_id: str, card: str) -> float:
    return float(content(env, "get_user_details", {"user_id": user_id})["payment_methods"][card]["balance"])


HAPPY = set(RETAIL_TOOLS)

REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("calculate", {"expression": "9 ** 9 ** 9"}, "too large"),  # a huge power would stall a run
    ("calculate", {"expression": "1 / 0"}, "division by zero"),
    ("calculate", {"expression": "__import__('os')"}, "Invalid characters in expression"),
    ("calculate", {"expression": "-" * 999 + "1"}, "too large or too deeply nested"),  # parser recursion
    ("calculate", {"expression": "1+" * 600 + "1"}, "longer than 1000 characters"),
    ("cancel_pending_order", {"order_id": "#W6247578", "reason": "too expensive"}, "Invalid reason"),
    (
        "cancel_pending_order",
        {"order_id": "#W2378156", "reason": "no longer needed"},
        "Non-pending order cannot be cancelled",
    ),
    (
        "exchange_delivered_order_items",
        {
            "order_id": "#W2378156",
            "item_ids": ["1151293680"],
            "new_item_ids": ["9647292434"],
            "payment_method_id": YUSUF_CARD,
        },
        "Variant not found",
    ),  # a T-shirt is not a keyboard variant
    (
        "exchange_delivered_order_items",
        {
            "order_id": "#W6247578",
            "item_ids": ["3799046073"],
            "new_item_ids": ["9647292434"],
            "payment_method_id": YUSUF_CARD,
        },
        "Non-delivered order cannot be exchanged",
    ),
    (
        "exchange_delivered_order_items",
        {
            "order_id": "#W2378156",
            "item_ids": ["1151293680", "1151293680"],
            "new_item_ids": ["7706410293", "7706410293"],
            "payment_method_id": YUSUF_CARD,
        },
        "Number of 1151293680 not found.",
    ),
    (
        "find_user_id_by_name_zip",
        {"first_name": "Yusuf", "last_name": "Rossi", "zip": "00000"},
        "User not found",
    ),
    ("find_user_id_by_email", {"email": "nobody@example.com"}, "User not found"),
    ("get_item_details", {"item_id": "0000000000"}, "Item not found"),
    ("get_order_details", {"order_id": "W6247578"}, "Order not found"),  # the '#' is part of the id
    ("get_product_details", {"product_id": "0"}, "Product not found"),
    ("get_user_details", {"user_id": "nobody_1"}, "User not found"),
    (
        "list_all_product_types",
        {"category": "shirts"},
        "RetailTools.list_all_product_types() got an unexpected keyword argument 'category'",
    ),
    (
        "modify_pending_order_address",
        {
            "order_id": "#W2378156",
            "address1": "1 A St",
            "address2": "",
            "city": "X",
            "state": "PA",
            "country": "USA",
            "zip": "19122",
        },
        "Non-pending order cannot be modified",
    ),
    (
        "modify_pending_order_items",
        {
            "order_id": "#W6247578",
            "item_ids": ["3799046073"],
            "new_item_ids": ["3799046073"],
            "payment_method_id": YUSUF_CARD,
        },
        "The new item id should be different from the old item id",
    ),
    (
        "modify_pending_order_items",
        {
            "order_id": "#W6247578",
            "item_ids": ["3799046073"],
            "new_item_ids": ["5047954489"],
            "payment_method_id": YUSUF_CARD,
        },
        "New item 5047954489 not found or available",
    ),  # 5047954489 exists but is unavailable
    (
        "modify_pending_order_items",
        {
            "order_id": "#W6247578",
            "item_ids": ["3799046073"],
            "new_item_ids": ["9647292434", "8349118980"],
            "payment_method_id": YUSUF_CARD,
        },
        "The number of items to be exchanged should match",
    ),
    (
        "modify_pending_order_items",
        {
            "order_id": "#W6247578",
            "item_ids": ["3799046073"],
            "new_item_ids": ["9647292434"],
            "payment_method_id": "paypal_0",
        },
        "Payment method not found",
    ),
    (
        "modify_pending_order_payment",
        {"order_id": "#W6436609", "payment_method_id": ANYA_GIFT},
        "The new payment method should be different from the current one",
    ),
    (
        "modify_pending_order_payment",
        {"order_id": "#W2378156", "payment_method_id": YUSUF_CARD},
        "Non-pending order cannot be modified",
    ),
    (
        "modify_user_address",
        {
            "user_id": "nobody_1",
            "address1": "1 A St",
            "address2": "",
            "city": "X",
            "state": "PA",
            "country": "USA",
            "zip": "1",
        },
        "User not found",
    ),
    (
        "return_delivered_order_items",
        {"order_id": "#W6247578", "item_ids": ["3799046073"], "payment_method_id": YUSUF_CARD},
        "Non-delivered order cannot be returned",
    ),
    (
        "return_delivered_order_items",
        {"order_id": "#W2378156", "item_ids": ["4202497723"], "payment_method_id": ANYA_CARD},
        "Payment method not found",
    ),
    (
        "return_delivered_order_items",
        {"order_id": "#W2378156", "item_ids": ["3799046073"], "payment_method_id": YUSUF_CARD},
        "Some item not found",  # an item of another order
    ),
    (
        "transfer_to_human_agents",
        {},
        "RetailTools.transfer_to_human_agents() missing 1 required positional argument: 'summary'",
    ),
]


@refusal_cases(REFUSALS)
def test_retail_tool_refuses_bad_request(env: Environment, name: str, arguments: dict[str, Any],
                                         fragment: str) -> None:
    refused(env, name, arguments, fragment)


def test_every_retail_tool_has_a_happy_and_a_refusal_case(env: Environment) -> None:
    names = {s["function"]["name"] for s in env.tool_schemas()}
    assert names == HAPPY
    assert names == {r[0] for r in REFUSALS}


def test_calculate_rounds_to_two_decimals(content: Callable[..., Any], env: Environment) -> None:
    assert content(env, "calculate", {"expression": "(2 + 3) * 4.5"}) == 22.5
    assert env.call("calculate", {"expression": "10 / 3"}).content == "3.33"
    assert env.call("calculate", {"expression": "-(1.5 - 4)"}).content == "2.5"


def test_lookups_find_users_case_insensitively(content: Callable[..., Any], env: Environment) -> None:
    assert (
        content(
            env, "find_user_id_by_name_zip", {"first_name": "YUSUF", "last_name": "rossi", "zip": "19122"}
        )
        == YUSUF
    )
    assert content(env, "find_user_id_by_email", {"email": "Yusuf.Rossi7301@Example.com"}) == YUSUF


def test_get_tools_return_stored_records(content: Callable[..., Any], env: Environment) -> None:
    assert content(env, "get_user_details", {"user_id": YUSUF})["orders"][0] == "#W6247578"
    assert content(env, "get_order_details", {"order_id": "#W6247578"})["status"] == "pending"
    product = content(env, "get_product_details", {"product_id": "9523456873"})
    assert product["name"] == "T-Shirt" and "9647292434" in product["variants"]
    assert content(env, "get_item_details", {"item_id": "9647292434"})["price"] == 53.48


def test_list_all_product_types_is_sorted_name_to_id(content: Callable[..., Any], env: Environment) -> None:
    types = content(env, "list_all_product_types", {})
    assert len(types) == 50 and list(types) == sorted(types)
    assert types["T-Shirt"] == "9523456873"


def test_cancel_pending_order_refunds_gift_card_at_once(
    content: Callable[..., Any], env: Environment
) -> None:
    order = content(env, "cancel_pending_order", {"order_id": "#W6436609", "reason": "no longer needed"})
    assert order["status"] == "cancelled" and order["cancel_reason"] == "no longer needed"
    assert order["payment_history"][-1] == {
        "transaction_type": "refund",
        "amount": 3005.33,
        "payment_method_id": ANYA_GIFT,
    }
    assert _gift_balance(content, env, ANYA, ANYA_GIFT) == 3056.33


def test_exchange_records_request_without_moving_money(content: Callable[..., Any], env: Environment) -> None:
    order = content(
        env,
        "exchange_delivered_order_items",
        {
            "order_id": "#W2378156",
            "item_ids": ["4983901480", "1151293680"],
            "new_item_ids": ["7747408585", "7706410293"],
            "payment_method_id": YUSUF_CARD,
        },
    )
    assert order["status"] == "exchange requested"
    assert order["exchange_items"] == ["1151293680", "4983901480"]  # stored sorted
    assert order["exchange_new_items"] == ["7706410293", "7747408585"]
    assert order["exchange_payment_method_id"] == YUSUF_CARD
    assert isinstance(order["exchange_price_difference"], float)
    assert len(order["payment_history"]) == 1


def test_exchange_refuses_gift_card_that_cannot_cover_difference(retail: Domain) -> None:
    # retail task 105's gold call: a $21.10 difference against a $17.00 gift card
    env = Environment(retail)
    refused(
        env,
        "exchange_delivered_order_items",
        {
            "order_id": "#W4316152",
            "item_ids": ["7292993796", "7292993796"],
            "new_item_ids": ["3761330360", "9647374798"],
            "payment_method_id": "gift_card_7245904",
        },
        "Insufficient gift card balance to pay for the price difference",
    )


def test_modify_pending_order_address_replaces_order_address(
    content: Callable[..., Any], env: Environment
) -> None:
    address = {
        "address1": "1 Elm St",
        "address2": "",
        "city": "Austin",
        "state": "TX",
        "country": "USA",
        "zip": "73301",
    }
    order = content(env, "modify_pending_order_address", {"order_id": "#W6247578", **address})
    assert order["address"] == address
    assert content(env, "get_user_details", {"user_id": YUSUF})["address"]["city"] == "Philadelphia"


def test_modify_pending_order_items_charges_difference_and_locks_order(
    content: Callable[..., Any], env: Environment
) -> None:
    order = content(
        env,
        "modify_pending_order_items",
        {
            "order_id": "#W6247578",
            "item_ids": ["3799046073"],
            "new_item_ids": ["9647292434"],
            "payment_method_id": YUSUF_CARD,
        },
    )
    assert order["status"] == "pending (item modified)"
    assert order["items"][0]["item_id"] == "9647292434" and order["items"][0]["price"] == 53.48
    assert order["payment_history"][-1] == {
        "transaction_type": "payment",
        "amount": 53.48 - 53.27,  # unrounded, as tau2 records it (0.20999999999999375)
        "payment_method_id": YUSUF_CARD,
    }
    refused(
        env,
        "modify_pending_order_items",
        {
            "order_id": "#W6247578",
            "item_ids": ["9647292434"],
            "new_item_ids": ["8349118980"],
            "payment_method_id": YUSUF_CARD,
        },
        "Non-pending order cannot be modified",
    )
    refused(
        env,
        "cancel_pending_order",
        {"order_id": "#W6247578", "reason": "ordered by mistake"},
        "Non-pending order cannot be cancelled",
    )


def test_modify_pending_order_items_copies_last_variant_onto_every_item(
    content: Callable[..., Any], env: Environment
) -> None:
    # tau2 parity quirk (spec §B.4.4): price/options come from the last new variant looked up
    before = content(env, "get_order_details", {"order_id": "#W4776164"})
    other = before["items"][1]
    product = content(env, "get_product_details", {"product_id": other["product_id"]})
    replacement = next(v for k, v in product["variants"].items() if v["available"] and k != other["item_id"])
    order = content(
        env,
        "modify_pending_order_items",
        {
            "order_id": "#W4776164",
            "item_ids": ["8349118980", other["item_id"]],
            "new_item_ids": ["9647292434", replacement["item_id"]],
            "payment_method_id": YUSUF_CARD,
        },
    )
    assert [i["price"] for i in order["items"]] == [replacement["price"]] * 2
    assert order["items"][0]["options"] == replacement["options"]
    expected = 0 + (53.48 - 53.43) + (replacement["price"] - other["price"])  # summed unrounded, pair by pair
    assert order["payment_history"][-1]["amount"] == abs(expected)  # the charge itself is per item


def test_modify_pending_order_items_refuses_gift_card_short_of_difference(
    content: Callable[..., Any], env: Environment
) -> None:
    order = content(env, "get_order_details", {"order_id": "#W6436609"})
    laptop = order["items"][3]
    variants = content(env, "get_product_details", {"product_id": laptop["product_id"]})["variants"]
    dearer = max((v for v in variants.values() if v["available"]), key=lambda v: v["price"])
    assert dearer["price"] - laptop["price"] > 51.0
    refused(
        env,
        "modify_pending_order_items",
        {
            "order_id": "#W6436609",
            "item_ids": [laptop["item_id"]],
            "new_item_ids": [dearer["item_id"]],
            "payment_method_id": ANYA_GIFT,
        },
        "Insufficient gift card balance to pay for the new item",
    )


def test_modify_pending_order_payment_moves_both_gift_card_balances(
    content: Callable[..., Any], env: Environment
) -> None:
    order = content(
        env, "modify_pending_order_payment", {"order_id": "#W6436609", "payment_method_id": ANYA_CARD}
    )
    assert order["payment_history"][-2:] == [
        {"transaction_type": "payment", "amount": 3005.33, "payment_method_id": ANYA_CARD},
        {"transaction_type": "refund", "amount": 3005.33, "payment_method_id": ANYA_GIFT},
    ]
    assert _gift_balance(content, env, ANYA, ANYA_GIFT) == 3056.33
    refused(
        env,
        "modify_pending_order_payment",
        {"order_id": "#W6436609", "payment_method_id": ANYA_GIFT},
        "exactly one payment",
    )


def test_modify_user_address_changes_profile_only(content: Callable[..., Any], env: Environment) -> None:
    address = {
        "address1": "9 Oak Rd",
        "address2": "Apt 2",
        "city": "Reno",
        "state": "NV",
        "country": "USA",
        "zip": "89501",
    }
    user = content(env, "modify_user_address", {"user_id": YUSUF, **address})
    assert user["address"] == address
    assert content(env, "get_order_details", {"order_id": "#W6247578"})["address"]["city"] == "Philadelphia"


def test_return_delivered_order_items_records_sorted_request(
    content: Callable[..., Any], env: Environment
) -> None:
    order = content(
        env,
        "return_delivered_order_items",
        {"order_id": "#W2378156", "item_ids": ["4602305039", "4202497723"], "payment_method_id": YUSUF_CARD},
    )
    assert order["status"] == "return requested"
    assert order["return_items"] == ["4202497723", "4602305039"]
    assert order["return_payment_method_id"] == YUSUF_CARD


def test_return_refund_must_go_to_original_method_or_gift_card(retail: Domain) -> None:
    env = Environment(retail)
    dump = env.agent_db.dump()
    for order in dump["orders"].values():
        methods = dump["users"][order["user_id"]]["payment_methods"]
        original = order["payment_history"][0]["payment_method_id"]
        other = next((m for m, v in methods.items() if m != original and v["source"] != "gift_card"), None)
        if order["status"] == "delivered" and other:
            break
    else:
        pytest.fail("no delivered order whose user has a second non-gift-card method")
    refused(
        env,
        "return_delivered_order_items",
        {
            "order_id": order["order_id"],
            "item_ids": [order["items"][0]["item_id"]],
            "payment_method_id": other,
        },
        "Payment method should be the original payment method",
    )


def test_transfer_to_human_agents_changes_nothing(env: Environment) -> None:
    before = env.db_hash()
    assert env.call("transfer_to_human_agents", {"summary": "wants a refund to another card"}).content == (
        "Transfer successful"
    )
    assert env.db_hash() == before
