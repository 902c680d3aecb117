"""What the per-domain tool tests share: the refusal check, its parametrization, retail's tool list."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from uxlocal.tau2 import Environment

RETAIL_TOOLS = (  # spec §B.4.4: the agent's 16 tools, in the order the environment lists them
    "calculate",
    "cancel_pending_order",
    "exchange_delivered_order_items",
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_item_details",
    "get_order_details",
    "get_product_details",
    "get_user_details",
    "list_all_product_types",
    "modify_pending_order_address",
    "modify_pending_order_items",
    "modify_pending_order_payment",
    "modify_user_address",
    "return_delivered_order_items",
    "transfer_to_human_agents",
)


def refused(env: Environment, name: str, arguments: dict[str, Any], fragment: str) -> None:
    """Assert the agent's call is refused (not an internal error) naming ``fragment``, the DB untouched."""
    before = env.db_hash()
    result = env.call(name, arguments)
    assert not result.ok and not result.internal, result
    assert fragment in (result.error or ""), result.error
    assert env.db_hash() == before  # a refused write leaves the DB as it was


def refusal_cases(cases: Sequence[tuple[str, dict[str, Any], str]]) -> Callable[..., Any]:
    """Parametrize a test over (name, arguments, fragment) refusal cases, each id'd by its tool."""
    return pytest.mark.parametrize(("name", "arguments", "fragment"), cases,
                                   ids=[f"{case[0]}-{i}" for i, case in enumerate(cases)])
