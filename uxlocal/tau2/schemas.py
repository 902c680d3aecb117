"""OpenAI function schemas from tool argument models.

pydantic's JSON schema is correct but noisy for a prompt: ``title`` on every node, ``$defs`` with
``$ref`` pointers, and ``anyOf [X, null]`` for optional arguments. Models read these schemas in
their prompt, so we inline references, drop titles and write an optional argument as plain ``X``
that is simply not ``required``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_KEYS = ("items", "additionalProperties", "not")


def function_schema(name: str, description: str, args_model: type[BaseModel]) -> dict[str, Any]:
    """``{"type": "function", "function": {name, description, parameters}}`` for one tool."""
    raw = args_model.model_json_schema()
    defs = raw.pop("$defs", {})
    parameters = clean_schema(raw, defs)
    parameters.setdefault("properties", {})
    parameters.setdefault("required", [])
    parameters["additionalProperties"] = False
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def clean_schema(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """One schema node made prompt-friendly; ``properties`` keys are argument names, never dropped."""
    node = _unwrap_optional(node)
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return clean_schema({**target, **rest}, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value is None):
            continue
        if key == "properties":
            out[key] = {prop: clean_schema(schema, defs) for prop, schema in value.items()}
        elif key in _SUBSCHEMA_LISTS:
            out[key] = [clean_schema(item, defs) for item in value]
        elif key in _SUBSCHEMA_KEYS and isinstance(value, dict):
            out[key] = clean_schema(value, defs)
        else:
            out[key] = value
    return out


def _unwrap_optional(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [X, {"type": "null"}]`` becomes ``X`` (keeping the node's description and default)."""
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2:
        return node
    non_null = [o for o in options if o != {"type": "null"}]
    if len(non_null) != 1:
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    return {**non_null[0], **rest}
