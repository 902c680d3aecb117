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
from collections.abc import Callable
from typing import Any

from .toolkit import ToolKind, Toolkit

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
