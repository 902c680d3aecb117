"""Registries of banking_knowledge's discoverable tools and how they are described (spec §B.2-B.3).

Discoverable tools are not offered to a model as functions. The agent learns their names from the
knowledge base, unlocks one (``unlock_discoverable_agent_tool``), reads its description, and calls it
through ``call_discoverable_agent_tool(agent_tool_name, arguments)``; the user calls one the agent
gave them (``give_discoverable_user_tool``) through ``call_discoverable_user_tool``. As upstream,
either seat may also call its discoverable tools directly by name.

A discoverable tool is a plain function ``f(db, arg, …)`` registered with ``@agent_tool(kind)`` or
``@user_tool(kind)``. Its parameters are positional on purpose: the tools take the arguments as
sent, unvalidated, as upstream's do, and a missing or unknown argument is Python's own
``TypeError`` (``KnowledgeTools.f() missing 1 required positional argument: 'x'``), which the doors
turn into their "Invalid arguments" answer. The owner names in those messages (``KnowledgeTools``,
``KnowledgeUserTools``) are part of the text a model reads, so registration sets them as the
functions' qualified names.

Words: a tool's description and its arguments' descriptions are upstream's when the domain has
tool words (``uxlocal/tau2/tool_words.py``: the tools file's ``discoverable`` list); otherwise our
docstring's first paragraph and our ``arg(...)`` texts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...tool_words import ToolWords
from ...toolkit import ToolKind, Toolkit, ToolSpec

AGENT_OWNER = "KnowledgeTools"
USER_OWNER = "KnowledgeUserTools"
"""The class names upstream's argument errors carry; a model reads them in those errors."""

DISCOVERABLE_AGENT = Toolkit("banking_knowledge discoverable agent tools", AGENT_OWNER, raw=True)
DISCOVERABLE_USER = Toolkit("banking_knowledge discoverable user tools", USER_OWNER, raw=True)


def owned(func: Callable[..., Any], owner: str) -> Callable[..., Any]:
    """Give ``func`` the qualified name ``owner.name`` so Python's argument errors read as upstream's."""
    func.__qualname__ = f"{owner}.{func.__name__}"
    return func


RETURNS: dict[str, str] = {}
"""What a tool without arguments answers, by name: upstream's tool card shows it (``card_description``)."""


def _registrar(
    toolkit: Toolkit, kind: ToolKind, owner: str, returns: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        doc = inspect.getdoc(func)
        if not doc:
            raise TypeError(
                f"discoverable tool {func.__name__} needs a docstring: it is what the agent reads"
            )
        if returns is not None:
            RETURNS[func.__name__] = returns
        return toolkit.tool(kind, doc.split("\n\n")[0])(owned(func, owner))

    return register


def agent_tool(
    kind: ToolKind, *, returns: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a discoverable agent tool (``read``, ``write``, or ``generic`` for transfers).

    ``returns``: for a tool without arguments, the answer's first line (it shows on the tool card).
    """
    return _registrar(DISCOVERABLE_AGENT, kind, AGENT_OWNER, returns)


def user_tool(kind: ToolKind) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a discoverable user tool."""
    return _registrar(DISCOVERABLE_USER, kind, USER_OWNER)


def parameter_names(spec: ToolSpec) -> list[str]:
    """List a discoverable tool's argument names, in order (the DB parameter left out)."""
    return list(inspect.signature(spec.func).parameters)[1:]


def required_names(spec: ToolSpec) -> list[str]:
    """List the arguments without a default."""
    params = list(inspect.signature(spec.func).parameters.values())[1:]
    return [p.name for p in params if p.default is inspect.Parameter.empty]


# --- words ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiscoverableWords:
    """The descriptions a tool card shows: upstream's from the domain's tool words, else ours."""

    words: ToolWords | None = None

    def _function(self, spec: ToolSpec) -> dict[str, Any]:
        seat = "user" if DISCOVERABLE_USER.spec(spec.name) is spec else "assistant"
        schema = self.words.schema(seat, spec) if self.words is not None else spec.openai_schema()
        function: dict[str, Any] = schema["function"]
        return function

    def description(self, spec: ToolSpec) -> str:
        """Give the tool's description."""
        return str(self._function(spec).get("description", ""))

    def argument(self, spec: ToolSpec, name: str) -> str:
        """Give an argument's description."""
        prop = self._function(spec).get("parameters", {}).get("properties", {}).get(name, {})
        return str(prop.get("description", ""))


NO_WORDS = DiscoverableWords()


def _type_word(schema: Mapping[str, Any]) -> str:
    """Name the type as an argument's docstring does: the JSON type, the non-null one of an optional."""
    if "type" in schema:
        return str(schema["type"])
    kinds = [str(o.get("type")) for o in schema.get("anyOf", []) if o.get("type") not in (None, "null")]
    return kinds[0] if kinds else "string"


def card_description(spec: ToolSpec, words: DiscoverableWords) -> str:
    """Give the description on a tool card.

    For a tool without arguments upstream's docstring parser keeps the ``Returns:`` section too, so
    the card also says what the tool will answer.
    """
    description = words.description(spec)
    if not parameter_names(spec) and spec.name in RETURNS:
        description = f"{description}\n\nReturns:\n    {RETURNS[spec.name]}"
    return description


def describe_for_agent(spec: ToolSpec, words: DiscoverableWords) -> str:
    """Write the tool card upstream shows: name, description, then one line per argument."""
    properties = spec.openai_schema()["function"]["parameters"].get("properties", {})
    required = set(required_names(spec))
    lines = []
    for name in parameter_names(spec):
        need = "required" if name in required else "optional"
        lines.append(
            f"  - {name}: {_type_word(properties.get(name, {}))} ({need}) - {words.argument(spec, name)}"
        )
    parameters = "\n".join(lines) if lines else "  (no parameters)"
    return f"Tool: {spec.name}\nDescription: {card_description(spec, words)}\nParameters:\n{parameters}"
