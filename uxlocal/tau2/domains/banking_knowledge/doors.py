"""The agent's four doors to the discoverable tools: give, unlock, call, list (spec §B.2).

Upstream's behaviour, which a model can tell apart, kept as is:
- every refusal is an ordinary answer (``Error: …``), never an error result;
- ``arguments`` is JSON text: a dict (or any non-text) is Python's ``TypeError`` from ``json.loads``,
  an error result, as upstream; broken JSON is the "Invalid JSON in arguments" answer;
- the call door binds the parsed arguments to the tool as Python does, so a missing or unknown
  argument (or a ``TypeError`` raised inside the tool) is "Error: Invalid arguments: …" and is not
  logged; a call that ran is logged in ``agent_discoverable_tools`` (one row per tool name);
- give accepts any subset of the user tool's arguments (the user fills in the rest).

Unlock state lives in ``db.unlocked_agent_tools`` (not hashed). Unlock and give are ``write`` tools
so that the reward's replay of the trajectory, which runs only writes, rebuilds that state.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from ...toolkit import Toolkit, ToolSpec, arg
from .db import BankingDB, seeded_id
from .discoverable import (
    DISCOVERABLE_AGENT,
    DISCOVERABLE_USER,
    card_description,
    describe_for_agent,
    parameter_names,
)
from .records import add_row, query_text

AGENT = Toolkit("banking_knowledge", "KnowledgeTools", raw=True)
"""The listed agent tools; they run on the values as sent, and argument errors name upstream's class."""

ArgumentsJson = Annotated[
    str,
    arg(
        'The arguments as a JSON object in a string, e.g. \'{"user_id": "123"}\'; '
        "'{}' when the tool takes none."
    ),
]
"""How the call doors (``call_discoverable_agent_tool``, ``call_discoverable_user_tool``) take arguments."""


def parse_arguments(db: BankingDB, text: Any) -> Any:
    """``json.loads`` as upstream calls it; at 1.0.1 every JSON number is read as a float."""
    return json.loads(text, parse_int=float) if db.grading.later else json.loads(text)


def user_discoverable(name: Any) -> ToolSpec | None:
    """Look up a discoverable user tool as upstream looks up an attribute (non-text: TypeError)."""
    if not isinstance(name, str):
        raise TypeError(f"attribute name must be string, not '{type(name).__name__}'")
    return DISCOVERABLE_USER.spec(name)


@AGENT.tool(
    "write",
    "Give the customer one of their discoverable tools named in the knowledge base, so "
    "they can perform that action themselves (they call it with the same name).",
)
def give_discoverable_user_tool(
    db: BankingDB,
    discoverable_tool_name: Annotated[str, arg("The user tool's name, as the knowledge base writes it.")],
    arguments: Annotated[str, arg("Suggested arguments for the user, as a JSON object in a string.")] = "{}",
) -> str:
    """Write a ``GIVEN`` row keyed by the tool's name only (giving it twice changes nothing)."""
    spec = user_discoverable(discoverable_tool_name)
    if spec is None:
        return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
    try:
        given = parse_arguments(db, arguments)
    except json.JSONDecodeError as err:
        return f"Error: Invalid JSON in arguments: {err}"
    known = {"self", *parameter_names(spec)}
    for name in given:
        if name not in known:
            return f"Error: Unexpected parameter: {name}"
    key = seeded_id(f"user_discoverable_tool:{discoverable_tool_name}")
    add_row(db, "user_discoverable_tools", key, {"tool_name": discoverable_tool_name, "status": "GIVEN"})
    shown = json.dumps(given, indent=2) if given else "(no arguments)"
    return (
        f"Tool given to user: {discoverable_tool_name}\n"
        f"Description: {db.words.description(spec)}\n"
        f"Arguments: {shown}\n\n"
        "The user can now execute this action by calling `call_discoverable_user_tool` with "
        f"discoverable_tool_name='{discoverable_tool_name}' and the same arguments."
    )


def _unknown_agent_tool(name: object) -> str:
    return f"Error: Unknown agent tool '{name}'. This tool is not available."


@AGENT.tool(
    "write",
    "Unlock an internal tool the knowledge base names for a procedure; the answer "
    "describes the tool and its arguments. Then call it with call_discoverable_agent_tool.",
)
def unlock_discoverable_agent_tool(
    db: BankingDB,
    agent_tool_name: Annotated[
        str,
        arg("The tool's name as the knowledge base gives it, e.g. 'get_all_user_accounts_by_user_id_3847'."),
    ],
) -> str:
    """State in memory only (``db.unlocked_agent_tools``); the DB hash does not see it."""
    spec = DISCOVERABLE_AGENT.spec(agent_tool_name)
    if spec is None:
        return _unknown_agent_tool(agent_tool_name)
    if agent_tool_name not in db.unlocked_agent_tools:
        db.unlocked_agent_tools.append(agent_tool_name)
    return (
        f"Tool unlocked: {agent_tool_name}\n"
        f"Description: {card_description(spec, db.words)}\n\n"
        f"{describe_for_agent(spec, db.words)}\n\n"
        "You can now use this tool by calling `call_discoverable_agent_tool` with "
        f"agent_tool_name='{agent_tool_name}' and the required arguments."
    )


@AGENT.tool("write", "Call an internal tool you unlocked with unlock_discoverable_agent_tool.")
def call_discoverable_agent_tool(
    db: BankingDB,
    agent_tool_name: Annotated[str, arg("The unlocked tool's name.")],
    arguments: ArgumentsJson = "{}",
) -> object:
    """Run an unlocked tool on the parsed arguments and log the call as the grading version says."""
    spec = DISCOVERABLE_AGENT.spec(agent_tool_name)
    if spec is None:
        return _unknown_agent_tool(agent_tool_name)
    if agent_tool_name not in db.unlocked_agent_tools:
        return (
            f"Error: Tool '{agent_tool_name}' has not been unlocked. You must first use "
            "`unlock_discoverable_agent_tool` to unlock this tool before calling it."
        )
    try:
        given = parse_arguments(db, arguments)
    except json.JSONDecodeError as err:
        return f"Error: Invalid JSON in arguments: {err}"
    try:
        result = spec.func(db, **given)
    except TypeError as err:
        return f"Error: Invalid arguments: {err}"
    _log_agent_call(db, spec)
    return result


def _log_agent_call(db: BankingDB, spec: ToolSpec) -> None:
    """One row per tool name; at 1.0.1 only writes and the task's gold reads are logged."""
    grading = db.grading
    if grading.later and spec.kind != "write" and spec.name not in grading.read_log_allowlist:
        return
    key = seeded_id(f"agent_discoverable_tool:{spec.name}")
    add_row(db, "agent_discoverable_tools", key, {"tool_name": spec.name, "status": "CALLED"})


@AGENT.tool("read", "List the internal tools you have called in this conversation.")
def list_discoverable_agent_tools(db: BankingDB) -> str:
    """Read called tools from the DB log, so at 1.0.1 an unlogged read is not listed."""
    return f"Your called agent tools:\n{query_text(db, 'agent_discoverable_tools')}"
