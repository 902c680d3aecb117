"""Registries of banking_knowledge's discoverable tools (spec §B.2-B.3).

Discoverable tools are not offered to a model as functions. The agent learns their names from the
knowledge base, unlocks one (``unlock_discoverable_agent_tool``), reads its description, and calls it
through ``call_discoverable_agent_tool(agent_tool_name, arguments)``; the user can only call one the
agent gave them (``give_discoverable_user_tool``), through ``call_discoverable_user_tool``.

A discoverable tool is a plain function ``f(db: BankingDB, *, arg: Annotated[type, arg("…")], …)``
registered with ``@agent_tool(kind)`` or ``@user_tool(kind)``; its docstring is the description the
agent reads when it unlocks the tool, so write it for the agent. Refusals raise ``ToolError``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import ValidationError

from ...toolkit import ToolError, ToolKind, Toolkit, ToolSpec, arg, describe_validation_error

if TYPE_CHECKING:
    from .db import BankingDB

DISCOVERABLE_AGENT = Toolkit("banking_knowledge discoverable agent tools")
DISCOVERABLE_USER = Toolkit("banking_knowledge discoverable user tools")


def _registrar(toolkit: Toolkit, kind: ToolKind) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        doc = inspect.getdoc(func)
        if not doc:
            raise TypeError(f"discoverable tool {func.__name__} needs a docstring: it is what the agent reads")
        return toolkit.tool(kind, doc)(func)

    return register


def agent_tool(kind: ToolKind) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a discoverable agent tool (``read`` or ``write``; ``generic`` for transfers)."""
    return _registrar(DISCOVERABLE_AGENT, kind)


def user_tool(kind: ToolKind) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a discoverable user tool."""
    return _registrar(DISCOVERABLE_USER, kind)


ArgumentsJson = Annotated[str, arg('The arguments as a JSON object in a string, e.g. \'{"user_id": "123"}\'; '
                                   "'{}' when the tool takes none.")]
"""How both doors (``call_discoverable_agent_tool``, ``call_discoverable_user_tool``) take arguments."""


def parse_arguments_json(db: BankingDB, text: str) -> dict[str, Any]:
    """Parse a discoverable call's arguments; at 1.0.1 every JSON number is read as a float."""
    try:
        value = json.loads(text, parse_int=float) if db.grading.later else json.loads(text)
    except json.JSONDecodeError as err:
        raise ToolError(f"arguments are not valid JSON: {err.msg}") from None
    if not isinstance(value, dict):
        raise ToolError("arguments must be a JSON object, e.g. '{\"user_id\": \"123\"}'")
    return value


def validated_kwargs(spec: ToolSpec, given: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments to call a discoverable tool with; bad arguments are a ``ToolError``."""
    try:
        parsed = spec.args_model.model_validate(given)
    except ValidationError as err:
        raise ToolError(describe_validation_error(spec.name, err)) from None
    return {name: getattr(parsed, name) for name in type(parsed).model_fields}
