"""Tool words from data: upstream's descriptions over our tools' structure.

Our code owns each tool's structure (name, arguments, types, required, defaults, enums, nesting):
it is the validator. The words a model reads (tool and argument descriptions, titles) come, when
available, from a tools file written by tau2 itself, ``tools_agent.json`` / ``tools_user.json``
(``{"tools": [openai schema, ...], "discoverable"?: [...]}``, the recording's layout), so that the
model sees exactly what upstream shows. Where they are looked for, first hit wins:

1. an explicit folder holding ``<domain>/tools_agent.json`` (``load_domain(tools_dir=…)``, the
   CLI's ``--tau2-tools``), else the folder the ``UXLOCAL_TAU2_TOOLS`` variable names;
2. ``tools_agent.json`` / ``tools_user.json`` inside the domain's data folder;
3. none: our own words (``homenet``, or tau2 data without a tools file).

Loading compares the structure of every tool in the file with ours (``structure`` strips the
words and resolves ``$ref``) and raises ``ToolWordsError`` naming the file, the tool and the first
field that differs, so what a model is shown and what our validator accepts cannot drift apart.
When they agree the file's schema is what the model sees (its words, its layout).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uxlocal import settings

from .toolkit import ToolSpec

TOOLS_ENV = "UXLOCAL_TAU2_TOOLS"
"""Names a folder with ``<domain>/tools_agent.json`` and ``<domain>/tools_user.json``."""

SEAT_FILES: dict[str, str] = {"assistant": "tools_agent.json", "user": "tools_user.json"}
"""The tools file of each seat, as tau2's recording names them."""

WORD_KEYS = frozenset({"description", "title"})
"""Schema keys that are words, not structure: the only things a tools file may change."""


class ToolWordsError(ValueError):
    """A tools file is unreadable, or a tool in it is shaped unlike our tool of the same name."""


@dataclass(frozen=True)
class SeatWords:
    """One seat's tools file: listed tools and (banking) discoverable ones, by name."""

    path: Path
    listed: dict[str, dict[str, Any]] = field(default_factory=dict)
    discoverable: dict[str, dict[str, Any]] = field(default_factory=dict)

    def lookup(self, name: str) -> dict[str, Any] | None:
        """The file's schema for tool ``name``, listed or discoverable; ``None`` when it has none."""
        return self.listed.get(name) or self.discoverable.get(name)


@dataclass(frozen=True)
class ToolWords:
    """Upstream's words for a domain's tools, per seat (``assistant``, ``user``)."""

    seats: dict[str, SeatWords]

    @property
    def source(self) -> Path | None:
        """The folder the words were read from."""
        first = next(iter(self.seats.values()), None)
        return first.path.parent if first is not None else None

    def schema(self, seat: str, spec: ToolSpec) -> dict[str, Any]:
        """The schema a model sees for one of our tools: the file's when it has the tool, else ours."""
        words = self.seats.get(seat)
        theirs = words.lookup(spec.name) if words is not None else None
        return copy.deepcopy(theirs) if theirs is not None else spec.openai_schema()

    def check(self, seat: str, specs: Iterable[ToolSpec], *, discoverable: bool = False) -> None:
        """Raise ``ToolWordsError`` unless every file tool of the seat has our structure.

        ``specs`` are our tools of that seat (listed ones, or with ``discoverable`` the discoverable
        ones); a file tool we do not have is an error too.
        """
        words = self.seats.get(seat)
        if words is None:
            return
        ours = {spec.name: spec for spec in specs}
        theirs = words.discoverable if discoverable else words.listed
        for name, schema in theirs.items():
            if name not in ours:
                raise ToolWordsError(f"{words.path}: tool {name!r} is not one of ours "
                                     f"({', '.join(sorted(ours)) or 'none'})")
            check_structure(ours[name].openai_schema(), schema, f"{words.path}: tool {name!r}")


def find_tools_dir(domain_folder: Path, name: str, explicit: str | Path | None = None) -> Path | None:
    """The folder holding ``name``'s tools files, by the precedence of the module docstring."""
    chosen = explicit if explicit is not None else settings.current().tau2_tools
    candidates = ([Path(chosen) / name] if chosen is not None else []) + [domain_folder]
    for folder in candidates:
        if any((folder / file).is_file() for file in SEAT_FILES.values()):
            return folder
    return None


def load_tool_words(folder: Path | None) -> ToolWords | None:
    """Read a domain's tools files from ``folder`` (``None`` or no files: ``None``, our own words)."""
    if folder is None:
        return None
    seats = {seat: _read_seat(folder / file) for seat, file in SEAT_FILES.items() if (folder / file).is_file()}
    return ToolWords(seats) if seats else None


def _read_seat(path: Path) -> SeatWords:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ToolWordsError(f"{path}:{err.lineno}: not valid JSON: {err.msg}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("tools"), list):
        raise ToolWordsError(f"{path}: expected an object with a 'tools' list")
    return SeatWords(path, _by_name(path, data["tools"], "tools"),
                     _by_name(path, data.get("discoverable") or [], "discoverable"))


def _by_name(path: Path, schemas: list[Any], key: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for index, schema in enumerate(schemas):
        function = schema.get("function") if isinstance(schema, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ToolWordsError(f"{path}: {key}[{index}] is not an OpenAI function schema "
                                 "(needs function.name)")
        if function["name"] in out:
            raise ToolWordsError(f"{path}: {key}[{index}]: tool {function['name']!r} listed twice")
        out[function["name"]] = dict(schema)
    return out


def structure(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A function schema without its words: ``$ref`` resolved, descriptions and titles dropped.

    Also dropped, as they say nothing a validator does differently: a ``null`` default, and on
    the arguments object itself ``additionalProperties: false`` and an empty ``required`` (every
    call with an unknown argument is refused, on either side).
    """
    function = schema.get("function", schema)
    params = dict(function.get("parameters") or {})
    defs = params.pop("$defs", {})
    shape = _strip(params, defs)
    if shape.get("additionalProperties") is False:
        del shape["additionalProperties"]
    if shape.get("required") == []:
        del shape["required"]
    return {"type": schema.get("type", "function"), "name": function.get("name"), "parameters": shape}


def _strip(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_strip(item, defs) for item in node]
    if not isinstance(node, Mapping):
        return node
    if "$ref" in node:
        target = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in WORD_KEYS or (key == "default" and value is None):
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: _strip(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _strip(value, defs)
    return _unwrap_nullable(out)


def _unwrap_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [X, null]`` as ``X``: our prompt schemas write an optional field so (``schemas.py``),
    pydantic's (upstream's) keep the ``anyOf``; a validator treats both alike (telecom's nested
    ``APNSettings`` is where they meet)."""
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return node
    (kept,) = [o for o in options if o != {"type": "null"}] or [{}]
    return {**kept, **{k: v for k, v in node.items() if k != "anyOf"}}


def check_structure(ours: Mapping[str, Any], theirs: Mapping[str, Any], where: str) -> None:
    """Raise ``ToolWordsError`` at the first field where the two schemas' structures differ."""
    difference = first_difference(structure(ours), structure(theirs))
    if difference is not None:
        path, mine, other = difference
        raise ToolWordsError(f"{where}: field {path or '/'} differs from our tool's structure: "
                             f"ours {_short(mine)}, the file's {_short(other)}")


_MISSING = object()


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """``(json-pointer, a's value, b's value)`` of the first difference, or ``None`` when equal."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in list(a) + [k for k in b if k not in a]:
            found = first_difference(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}/{key}")
            if found is not None:
                return found
        if list(a) != list(b) and path.endswith("/properties"):
            return f"{path} (order)", list(a), list(b)
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}/{index}")
            if found is not None:
                return found
        return None
    if type(a) is type(b) and a == b:
        return None
    return path, a, b


def _short(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."
