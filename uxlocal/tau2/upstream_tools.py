"""Tool schemas built from a tau2-bench checkout's source, as upstream builds them.

Upstream shows a model each tool as ``Tool.openai_schema``: the docstring's short and long
description, and ``create_model("parameters", …).model_json_schema()`` over the method's signature,
each documented parameter wrapped in ``Field(default, description=…)``. We do the same without
importing upstream: the toolkit class and its bases are read with ``ast`` (``upstream_source``),
their annotations are rebuilt as real Python types (``typing`` forms, ``Literal`` aliases, enums and
pydantic models rebuilt from their class bodies: fields, ``Field(...)`` arguments, ``model_config``,
docstrings), and pydantic itself lays the schema out, so titles, ``$defs``, ``anyOf``, defaults and
key order are pydantic's. Tools are listed in upstream's order: each class's decorated methods in
definition order along the method resolution order, first occurrence wins.

What we rebuild is only what a schema can show; methods, validators and tool bodies are never
evaluated. A construct we cannot rebuild raises ``CheckoutError`` with the file and line.
"""

from __future__ import annotations

import ast
import enum
import typing
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, create_model

from .docstrings import DocstringError, parse_docstring
from .upstream_source import Checkout, CheckoutError, Module

TOOLKITS: dict[str, dict[str, tuple[str, str]]] = {
    "mock": {"assistant": ("tau2.domains.mock.tools", "MockTools"),
             "user": ("tau2.domains.mock.user_tools", "MockUserTools")},
    "airline": {"assistant": ("tau2.domains.airline.tools", "AirlineTools")},
    "retail": {"assistant": ("tau2.domains.retail.tools", "RetailTools")},
    "telecom": {"assistant": ("tau2.domains.telecom.tools", "TelecomTools"),
                "user": ("tau2.domains.telecom.user_tools", "TelecomUserTools")},
    "banking_knowledge": {
        "assistant": ("tau2.domains.banking_knowledge.retrieval_toolkits", "KnowledgeToolsWithKBSearch"),
        "user": ("tau2.domains.banking_knowledge.tools", "KnowledgeUserTools")},
}
"""Per domain and seat, the toolkit class upstream's environment gives that seat (banking: the
``bm25`` retrieval variant, ``KB_search`` mixed in). Which class, not what it says: the words are read."""

_CALLS = ("Field", "ConfigDict")
"""The calls a field default or a model config may be written as."""

_TOOL_DECORATORS = {"is_tool": False, "is_discoverable_tool": True}
"""Decorator name -> whether it marks a discoverable tool (banking's, never listed in a prompt)."""

_TYPING: dict[str, Any] = {
    "List": typing.List, "Dict": typing.Dict, "Optional": typing.Optional, "Union": typing.Union,  # noqa: UP006
    "Literal": typing.Literal, "Any": typing.Any, "Annotated": typing.Annotated, "Tuple": typing.Tuple,  # noqa: UP006
    "Set": typing.Set,  # noqa: UP006
}
_BUILTINS: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict, "list": list,
                             "tuple": tuple, "set": set, "bytes": bytes, "None": None, "Any": typing.Any}
_EXTERNAL_BASES: dict[str, Any] = {"BaseModel": BaseModel, "Enum": enum.Enum, "str": str, "int": int,
                                   "StrEnum": enum.StrEnum, "object": object}


@dataclass(frozen=True)
class UpstreamTool:
    """One tool as upstream lists it: its schema and where its method is defined."""

    name: str
    schema: dict[str, Any]
    discoverable: bool
    where: str


class TypeBuilder:
    """Rebuilds annotations and default values of a checkout as live Python objects, cached per class."""

    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self._classes: dict[tuple[str, str], Any] = {}

    # --- annotations -----------------------------------------------------------------------------

    def annotation(self, module: Module, node: ast.expr | None) -> Any:
        """Rebuild the type an annotation expression denotes (``Any`` when absent)."""
        if node is None:
            return typing.Any
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):  # a forward reference
                return self.annotation(module, ast.parse(node.value, mode="eval").body)
            if node.value is None:
                return None
        if isinstance(node, ast.Name):
            return self._named(module, node.id, node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in _TYPING:
                return _TYPING[node.attr]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return typing.Union[self.annotation(module, node.left), self.annotation(module, node.right)]  # noqa: UP007
        if isinstance(node, ast.Subscript):
            return self._subscript(module, node)
        raise CheckoutError(module.where(node), f"cannot read the type {ast.unparse(node)!r}")

    def _subscript(self, module: Module, node: ast.Subscript) -> Any:
        origin = self.annotation(module, node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if origin is typing.Literal:
            return typing.Literal[tuple(self.value(module, item) for item in items)]
        if origin is typing.Annotated:
            first, *meta = items
            return typing.Annotated[(self.annotation(module, first), *(self.value(module, m) for m in meta))]
        args = tuple(self.annotation(module, item) for item in items)
        return origin[args if len(args) > 1 else args[0]]

    def _named(self, module: Module, name: str, node: ast.expr) -> Any:
        found = self.checkout.resolve(module, name)
        if found is not None:
            owner, definition = found
            if isinstance(definition, ast.ClassDef):
                return self.build_class(owner, definition)
            if isinstance(definition, ast.Assign | ast.AnnAssign) and definition.value is not None:
                return self.annotation(owner, definition.value)
        source = module.imports.get(name, ("", name))[1]
        if source in _TYPING and name not in module.defs:
            return _TYPING[source]
        if name in _BUILTINS:
            return _BUILTINS[name]
        raise CheckoutError(module.where(node), f"cannot resolve the name {name!r}")

    # --- values ----------------------------------------------------------------------------------

    def value(self, module: Module, node: ast.expr) -> Any:
        """Evaluate a default or a ``Field(...)`` argument: literals, containers, enum members, calls."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.value(module, item) for item in node.elts]
            kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
            return kind(items)
        if isinstance(node, ast.Dict):
            pairs = zip(node.keys, node.values, strict=True)
            return {self.value(module, k): self.value(module, v) for k, v in pairs if k is not None}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.value(module, node.operand)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = self.annotation(module, node.value)
            return getattr(owner, node.attr)
        if isinstance(node, ast.Name):
            if node.id in ("list", "dict", "set", "tuple"):
                return _BUILTINS[node.id]
            found = self.checkout.resolve(module, node.id)
            if found is not None and isinstance(found[1], ast.Assign):
                return self.value(found[0], found[1].value)
        if isinstance(node, ast.Lambda) and not node.args.args:
            result = self.value(module, node.body)
            return lambda: result
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
            args = [self.value(module, a) for a in node.args]
            kwargs = {k.arg: self.value(module, k.value) for k in node.keywords if k.arg}
            return Field(*args, **kwargs) if node.func.id == "Field" else ConfigDict(**kwargs)  # type: ignore[typeddict-item]
        raise CheckoutError(module.where(node), f"cannot read the value {ast.unparse(node)[:80]!r}")

    # --- classes ---------------------------------------------------------------------------------

    def build_class(self, module: Module, node: ast.ClassDef) -> Any:
        """Rebuild an enum or a pydantic model class from its body (fields and config, no methods)."""
        key = (module.name, node.name)
        if key not in self._classes:
            bases = [self._base(module, base) for base in node.bases]
            if any(isinstance(b, type) and issubclass(b, enum.Enum) for b in bases):
                self._classes[key] = self._enum(module, node, bases)
            elif any(isinstance(b, type) and issubclass(b, BaseModel) for b in bases):
                self._classes[key] = self._model(module, node, bases)
            else:
                raise CheckoutError(module.where(node), f"class {node.name}: not an enum nor a model")
        return self._classes[key]

    def _base(self, module: Module, node: ast.expr) -> Any:
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
        if isinstance(node, ast.Name) and self.checkout.resolve(module, node.id) is not None:
            return self.annotation(module, node)
        if name in _EXTERNAL_BASES:
            return _EXTERNAL_BASES[name]
        raise CheckoutError(module.where(node), f"cannot read the base class {ast.unparse(node)!r}")

    def _enum(self, module: Module, node: ast.ClassDef, bases: list[Any]) -> Any:
        members = [(t.id, self.value(module, stmt.value))
                   for stmt in node.body if isinstance(stmt, ast.Assign)
                   for t in stmt.targets if isinstance(t, ast.Name) and not t.id.startswith("_")]
        mixin = next((b for b in bases if b in (str, int)), None)
        built = enum.Enum(node.name, members, type=mixin)  # type: ignore[misc]
        built.__doc__ = ast.get_docstring(node, clean=False)
        return built

    def _model(self, module: Module, node: ast.ClassDef, bases: list[Any]) -> Any:
        namespace: dict[str, Any] = {"__module__": f"tau2_checkout.{module.name}", "__qualname__": node.name,
                                     "__doc__": ast.get_docstring(node, clean=False), "__annotations__": {}}
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if "ClassVar" in ast.unparse(stmt.annotation):
                    continue
                namespace["__annotations__"][stmt.target.id] = self.annotation(module, stmt.annotation)
                if stmt.value is not None:
                    namespace[stmt.target.id] = self.value(module, stmt.value)
            elif isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == ["model_config"]:
                namespace["model_config"] = self.value(module, stmt.value)
        metaclass = type(bases[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return metaclass(node.name, tuple(bases), namespace)


def tool_schema(builder: TypeBuilder, module: Module, node: ast.FunctionDef) -> dict[str, Any]:
    """``Tool.openai_schema`` of one tool method: description from the docstring, parameters by pydantic."""
    try:
        doc = parse_docstring(ast.get_docstring(node, clean=False))
    except DocstringError as err:
        raise CheckoutError(module.where(node), f"tool {node.name}: docstring: {err}") from None
    positional = node.args.posonlyargs + node.args.args
    missing: list[ast.expr | None] = [None] * (len(positional) - len(node.args.defaults))
    defaults = missing + list(node.args.defaults)
    pairs = list(zip(positional, defaults, strict=True))[1:]  # ``self`` is bound away
    pairs += list(zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True))
    fields: dict[str, Any] = {}
    for arg, default_node in pairs:
        default = ... if default_node is None else builder.value(module, default_node)
        if arg.arg in doc.params:
            default = Field(default, description=doc.params[arg.arg])
        fields[arg.arg] = (builder.annotation(module, arg.annotation), default)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parameters = create_model("parameters", **fields).model_json_schema()  # type: ignore[call-overload]
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError) as err:
        raise CheckoutError(module.where(node), f"tool {node.name}: parameters: {err}") from None
    function = {"name": node.name, "description": doc.description(node.name), "parameters": parameters}
    return {"type": "function", "function": function}


def toolkit_tools(checkout: Checkout, module_name: str, class_name: str,
                  builder: TypeBuilder | None = None) -> list[UpstreamTool]:
    """Every tool of a toolkit class in upstream's order (listed and discoverable, marked)."""
    builder = builder or TypeBuilder(checkout)
    module = checkout.module(module_name)
    node = module.defs.get(class_name)
    if not isinstance(node, ast.ClassDef):
        raise CheckoutError(module.where(), f"no toolkit class {class_name}")
    order = _mro(checkout, module, node)
    names: dict[str, bool] = {}
    for _, cls in order:
        for stmt in cls.body:
            marked = _tool_mark(stmt)
            if marked is not None and stmt.name not in names:  # type: ignore[union-attr]
                names[stmt.name] = marked  # type: ignore[union-attr]
    tools = []
    for name, discoverable in names.items():
        owner, method = next((m, s) for m, cls in order for s in cls.body
                             if isinstance(s, ast.FunctionDef) and s.name == name)
        schema = tool_schema(builder, owner, method)
        tools.append(UpstreamTool(name, schema, discoverable, owner.where(method)))
    return tools


def _tool_mark(stmt: ast.stmt) -> bool | None:
    """Whether a method is a discoverable tool, a listed one (False), or no tool (None)."""
    if not isinstance(stmt, ast.FunctionDef):
        return None
    for decorator in stmt.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if name in _TOOL_DECORATORS:
            return _TOOL_DECORATORS[name]
    return None


def _mro(checkout: Checkout, module: Module, node: ast.ClassDef) -> list[tuple[Module, ast.ClassDef]]:
    """C3 linearisation over the classes the checkout defines (``object`` and outside bases left out)."""
    parents: list[list[tuple[Module, ast.ClassDef]]] = []
    for base in node.bases:
        found = checkout.resolve(module, base.id) if isinstance(base, ast.Name) else None
        if found is not None and isinstance(found[1], ast.ClassDef):
            parents.append(_mro(checkout, found[0], found[1]))
    direct = [p[0] for p in parents]
    sequences = [list(p) for p in parents] + [list(direct)]
    result = [(module, node)]
    while any(sequences):
        for seq in sequences:
            head = seq[0] if seq else None
            if head is not None and not any(head in s[1:] for s in sequences):
                break
        else:
            raise CheckoutError(module.where(node), f"class {node.name}: no consistent method order")
        result.append(head)
        sequences = [s[1:] if s and s[0] == head else s for s in sequences]
    return result


SeatSchemas = dict[str, tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]]
"""Per seat: the toolkit's source file, its listed tool schemas and its discoverable ones, in order."""

_CACHE: dict[tuple[Path, str], tuple[tuple[tuple[int, int], ...], list[Path], SeatSchemas]] = {}


def checkout_seat_schemas(root: Path, domain: str) -> SeatSchemas | None:
    """Both seats' tool schemas of a domain from the checkout at ``root``; None for a domain upstream lacks.

    Cached per process and rebuilt when a source file it read changes (mtime or size).
    """
    if domain not in TOOLKITS:
        return None
    key = (root.resolve(), domain)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == _stamp(cached[1]):
        return cached[2]
    checkout = Checkout(root)
    builder = TypeBuilder(checkout)
    seats: SeatSchemas = {}
    for seat, (module_name, class_name) in TOOLKITS[domain].items():
        tools = toolkit_tools(checkout, module_name, class_name, builder)
        seats[seat] = (checkout.module(module_name).path, [t.schema for t in tools if not t.discoverable],
                       [t.schema for t in tools if t.discoverable])
    files = checkout.parsed_files()
    _CACHE[key] = (_stamp(files), files, seats)
    return seats


def checkout_words_digest(root: Path, domain: str) -> str | None:
    """sha256 of the checkout source files a domain's tool schemas were built from (for the run identity)."""
    if checkout_seat_schemas(root, domain) is None:
        return None
    return Checkout(root).digest(_CACHE[(root.resolve(), domain)][1])


def _stamp(files: list[Path]) -> tuple[tuple[int, int], ...]:
    stats = [path.stat() for path in files]
    return tuple((s.st_mtime_ns, s.st_size) for s in stats)
