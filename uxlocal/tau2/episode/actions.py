"""The turn protocol of the seats: each turn is one JSON object, a message or exactly one tool call.

tau2 uses the providers' native function calling; local models get the same contract through a
JSON-schema constraint instead: a union (``anyOf``) of ``{"message": str}`` and, per tool,
``{"tool": <name>, "arguments": <that tool's argument schema>}``. xgrammar and outlines both
compile these unions for the mock, retail and airline tools in milliseconds (checked against every
domain's schemas), so ``strict`` is the default; ``loose`` constrains only the tool name and lets
the arguments be any object, for grammar engines or future tools whose argument schemas they
reject (the environment still validates every call and answers a bad one with an error result).

The message string, and every free string argument of a tool, is capped at ``text_cap(max_tokens)``
characters, so a rambling model has to close the JSON object before its token budget runs out
instead of being cut off mid-string (the cap is generous for real models: 2 characters per token,
about half of English's average; ids, names and summaries are far shorter).

Parsing is independent of the grammar: an engine without constraints (or the fake engine) can
return anything, and whatever is not a usable turn raises ``TurnFormatError``, which the
orchestrator counts as an error (see its docstring).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from uxlocal.engine.base import GenResult
from uxlocal.grammar import JsonSchema

ToolGrammar = Literal["strict", "loose"]
MESSAGE_KEY = "message"
TOOL_KEY = "tool"
ARGUMENTS_KEY = "arguments"
CHARS_PER_TOKEN = 2
"""Characters of free text allowed per token of budget: low enough that the JSON closes in time."""
JSON_OVERHEAD_TOKENS = 16
"""Tokens left for the JSON around the text (braces, key, quotes, the whitespace grammars allow)."""


def text_cap(max_tokens: int) -> int:
    """Return the longest free-text field (characters) that fits a budget of ``max_tokens``."""
    return max(16, (max_tokens - JSON_OVERHEAD_TOKENS) * CHARS_PER_TOKEN)


class TurnFormatError(ValueError):
    """A seat's output is not a usable turn (bad JSON, truncated, empty, neither message nor call)."""


@dataclass(frozen=True)
class TurnAction:
    """One parsed turn: text for the other party, or one tool call."""

    kind: Literal["message", "tool"]
    text: str = ""
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


def _message_schema(max_chars: int | None) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "string", "minLength": 1}
    if max_chars is not None:
        text["maxLength"] = max_chars
    return {
        "type": "object",
        "properties": {MESSAGE_KEY: text},
        "required": [MESSAGE_KEY],
        "additionalProperties": False,
    }


def _tool_schema(name: str | list[str], parameters: dict[str, Any]) -> dict[str, Any]:
    tool = {"const": name} if isinstance(name, str) else {"type": "string", "enum": name}
    return {
        "type": "object",
        "properties": {TOOL_KEY: tool, ARGUMENTS_KEY: parameters},
        "required": [TOOL_KEY, ARGUMENTS_KEY],
        "additionalProperties": False,
    }


def turn_schema(
    tool_schemas: Sequence[dict[str, Any]], grammar: ToolGrammar = "strict", *, max_chars: int | None = None
) -> dict[str, Any]:
    """Build the JSON schema of one turn for a seat offered ``tool_schemas`` (OpenAI functions).

    Without tools the seat may only write a message; ``max_chars`` caps the message's length.
    """
    message = _message_schema(max_chars)
    if not tool_schemas:
        return message
    functions = [schema["function"] for schema in tool_schemas]
    if grammar == "loose":
        calls = [_tool_schema([f["name"] for f in functions], {"type": "object"})]
    else:
        calls = [_tool_schema(f["name"], _cap_strings(f.get("parameters") or {"type": "object"}, max_chars))
                 for f in functions]
    return {"anyOf": [message, *calls]}


def _cap_strings(node: Any, max_chars: int | None) -> Any:
    """Copy an argument schema, capping its free strings (those without an enum or a cap of their own)."""
    if max_chars is None:
        return node
    if isinstance(node, list):
        return [_cap_strings(item, max_chars) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _cap_strings(value, max_chars) if key != "properties" else
           {name: _cap_strings(sub, max_chars) for name, sub in value.items()} for key, value in node.items()}
    if out.get("type") == "string" and not {"enum", "const", "maxLength"} & set(out):
        out["maxLength"] = max_chars
    return out


def turn_constraint(
    tool_schemas: Sequence[dict[str, Any]], grammar: ToolGrammar = "strict", *, max_tokens: int | None = None
) -> JsonSchema:
    """``turn_schema`` as a request constraint, its message capped to fit ``max_tokens``.

    It parses as plain JSON; ``parse_turn`` checks the shape.
    """
    cap = text_cap(max_tokens) if max_tokens is not None else None
    return JsonSchema(schema=turn_schema(tool_schemas, grammar, max_chars=cap))


def calls_only_constraint(
    tool_schemas: Sequence[dict[str, Any]], grammar: ToolGrammar = "strict", *, max_tokens: int | None = None
) -> JsonSchema:
    """``turn_constraint`` without the message alternative: the turn must call one of ``tool_schemas``."""
    cap = text_cap(max_tokens) if max_tokens is not None else None
    union = turn_schema(tool_schemas, grammar, max_chars=cap)["anyOf"][1:]
    return JsonSchema(schema=union[0] if len(union) == 1 else {"anyOf": union})


def parse_turn(result: GenResult) -> TurnAction:
    """Read a constrained seat's output as a turn, or raise ``TurnFormatError`` saying why not.

    A call whose tool name or argument values are wrong is *not* a format error: it is a real
    call, and the environment answers it with an error result (as tau2 does for a hallucinated
    tool). Only outputs that cannot be read as a call at all are format errors.
    """
    if not result.valid:
        raise TurnFormatError(result.error or "the output does not match the turn format")
    value = result.parsed
    if not isinstance(value, dict):
        raise TurnFormatError(f"expected a JSON object, got {type(value).__name__}")
    if TOOL_KEY in value:
        return _tool_action(value)
    if MESSAGE_KEY in value:
        return message_action(value[MESSAGE_KEY])
    raise TurnFormatError(f"expected a {MESSAGE_KEY!r} or a {TOOL_KEY!r} key")


def _tool_action(value: dict[str, Any]) -> TurnAction:
    name = value[TOOL_KEY]
    if not isinstance(name, str) or not name.strip():
        raise TurnFormatError("the tool name must be a non-empty string")
    arguments = value.get(ARGUMENTS_KEY, {})
    if isinstance(arguments, str):  # some models double-encode the arguments
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as err:
            raise TurnFormatError(f"the arguments are not a JSON object: {err.msg}") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise TurnFormatError("the arguments must be a JSON object")
    return TurnAction("tool", tool=name.strip(), arguments=arguments)


def message_action(text: object) -> TurnAction:
    """Build a message turn; an empty or non-text message is a format error (tau2 rejects them)."""
    if not isinstance(text, str) or not text.strip():
        raise TurnFormatError("the message is empty")
    return TurnAction("message", text=text.strip())


def parse_text(result: GenResult) -> TurnAction:
    """Read an unconstrained (plain text) seat's output as a message turn.

    Text cut off by the token budget is kept as it is: it is still something the user said.
    """
    return message_action(result.text)


def action_json(action: TurnAction) -> str:
    """Write a turn back in the protocol's JSON, as the seat sees its own past turns."""
    if action.kind == "message":
        return json.dumps({MESSAGE_KEY: action.text}, ensure_ascii=False)
    return json.dumps({TOOL_KEY: action.tool, ARGUMENTS_KEY: action.arguments}, ensure_ascii=False)
