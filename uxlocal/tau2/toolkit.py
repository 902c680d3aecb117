"""Tools: how a domain declares them, how arguments are checked, and what a call returns.

A tool is a plain function ``f(db, *, arg: Annotated[type, arg("…")], …)``. The ``Toolkit.tool``
decorator turns its signature into a pydantic model (``extra="forbid"``), which is both the
argument validator and the source of the OpenAI schema, so the two cannot disagree. Tools raise
``ToolError`` for anything the model should be told (bad id, wrong state); the environment turns
that into an error result. Helpers (``kind="helper"``) are callable by setup actions and
assertions but are never offered to a model.

Calls behave as tau2's do, where a model can tell: an unknown or missing argument is refused with
the words Python uses for a method call (``MockTools.create_task() missing 1 required positional
argument: 'user_id'``; the toolkit's ``qualifier`` is upstream's class name); a value of the wrong
type is not refused up front (tau2 validates nothing), the tool runs on the raw JSON value and
whatever then fails is the error (``unhashable type: 'list'``), as upstream's would.
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .schemas import function_schema

ToolKind = Literal["read", "write", "generic", "helper"]
"""``write`` tools change the DB and are the only ones replayed; ``generic`` ones (calculate,
transfer) change nothing; ``helper`` functions are for setup and assertions, never for models."""


class ToolError(Exception):
    """A refusal the caller should read: unknown id, wrong order state, insufficient balance."""


class ToolArgs(BaseModel):
    """Base of generated argument models: unknown arguments are errors, as the schema says."""

    model_config = ConfigDict(extra="forbid")


def arg(description: str, **kwargs: Any) -> Any:
    """Field metadata for a tool argument; ``description`` is what the model reads."""
    return Field(description=description, **kwargs)


@dataclass(frozen=True)
class ToolSpec:
    """One registered function with its metadata and argument model."""

    name: str
    kind: ToolKind
    description: str
    args_model: type[BaseModel]
    func: Callable[..., object]
    qualifier: str = ""
    """The class upstream's tool is a method of (``RetailTools``), as its call errors name it."""
    raw: bool = False
    """Always run on the values as sent, never on validated ones (banking: pydantic would turn the
    int ``100000`` sent for a float into ``100000.0``, and upstream's ids and rows keep the int)."""

    @property
    def qualname(self) -> str:
        """``Qualifier.name`` (or ``name``), as a Python call error names the function."""
        return f"{self.qualifier}.{self.name}" if self.qualifier else self.name

    def signature_problem(self, arguments: Mapping[str, Any]) -> str | None:
        """Return what Python would say when binding ``arguments`` to the tool, or ``None`` if they bind."""
        fields = self.args_model.model_fields
        unknown = next((key for key in arguments if key not in fields), None)
        if unknown is not None:
            return f"{self.qualname}() got an unexpected keyword argument {unknown!r}"
        missing = [name for name, info in fields.items() if info.is_required() and name not in arguments]
        if not missing:
            return None
        quoted = [repr(name) for name in missing]
        listed = (quoted[0] if len(quoted) == 1 else " and ".join(quoted) if len(quoted) == 2
                  else ", ".join(quoted[:-1]) + ", and " + quoted[-1])
        plural = "argument" if len(missing) == 1 else "arguments"
        return f"{self.qualname}() missing {len(missing)} required positional {plural}: {listed}"

    def run(self, db: object, arguments: Mapping[str, Any]) -> object:
        """Bind and check ``arguments``, then call the function; raises ``ToolError``.

        Arguments of the declared types reach the function validated; otherwise it runs on the
        raw values (see the module docstring) and any exception it raises becomes a ``ToolError``.
        """
        problem = self.signature_problem(arguments)
        if problem is not None:
            raise ToolError(problem)
        if self.raw:
            return self._run_raw(db, arguments)
        try:
            parsed = self.args_model.model_validate(dict(arguments), strict=True)
        except ValidationError:
            return self._run_raw(db, arguments)
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        try:
            return self.func(db, **kwargs)
        except ValidationError as err:  # a record built from the caller's values refused them
            raise ToolError(str(err)) from err

    def _run_raw(self, db: object, arguments: Mapping[str, Any]) -> object:
        defaults = {name: info.get_default(call_default_factory=True)
                    for name, info in self.args_model.model_fields.items() if not info.is_required()}
        try:
            return self.func(db, **{**defaults, **arguments})
        except ToolError:
            raise
        except Exception as err:  # noqa: BLE001 - the caller's value broke the tool, as upstream's would
            raise ToolError(str(err)) from err

    def openai_schema(self) -> dict[str, Any]:
        """Describe the tool in OpenAI function-calling format (a fresh copy the caller may edit)."""
        loaded: dict[str, Any] = json.loads(self._schema_json)
        return loaded

    @functools.cached_property
    def _schema_json(self) -> str:
        # building a schema costs ~1 ms per tool; seats ask for them every episode
        return json.dumps(function_schema(self.name, self.description, self.args_model))


class Toolkit:
    """The functions of one side of an environment (the agent's or the user's) over one DB type."""

    def __init__(self, name: str, qualifier: str = "", *, raw: bool = False) -> None:
        self.name = name
        self.qualifier = qualifier
        """Upstream's class name for this toolkit's tools, used in call errors (see ``ToolSpec``)."""
        self.raw = raw
        """Its tools run on the values as sent (see ``ToolSpec.raw``)."""
        self._specs: dict[str, ToolSpec] = {}

    def tool(self, kind: ToolKind, description: str, *,
             qualifier: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a function; its name is the tool name, its keyword parameters the arguments.

        ``qualifier`` overrides the toolkit's for this tool (upstream defines it on another class).
        """

        def register(func: Callable[..., Any]) -> Callable[..., Any]:
            if func.__name__ in self._specs:
                raise ValueError(f"{self.name}: tool {func.__name__!r} registered twice")
            model = _args_model(func)
            owner = self.qualifier if qualifier is None else qualifier
            spec = ToolSpec(func.__name__, kind, description, model, func, owner, self.raw)
            self._specs[func.__name__] = spec
            return func

        return register

    def helper(self, description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a setup/assertion function that models never see."""
        return self.tool("helper", description)

    def spec(self, name: str) -> ToolSpec | None:
        """Any registered function by name, helpers included."""
        return self._specs.get(name)

    def tools(self) -> list[ToolSpec]:
        """List the functions a model may call, in registration order."""
        return [s for s in self._specs.values() if s.kind != "helper"]

    def names(self) -> list[str]:
        """Names of the functions a model may call."""
        return [s.name for s in self.tools()]


def _args_model(func: Callable[..., Any]) -> type[BaseModel]:
    """Build a pydantic model from every parameter after the first (the DB)."""
    hints = typing.get_type_hints(func, include_extras=True)
    params = list(inspect.signature(func).parameters.values())[1:]
    fields: dict[str, Any] = {}
    for param in params:
        if param.name not in hints:
            raise TypeError(f"tool {func.__name__}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    model: type[BaseModel] = create_model(f"{func.__name__}_args", __base__=ToolArgs, **fields)
    return model


def render_content(value: object) -> str:
    """Render what the model reads back: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return json.dumps(value.model_dump(mode="json", warnings=False))
    return json.dumps(_plain(value))


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", warnings=False)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def describe_validation_error(name: str, err: ValidationError) -> str:
    """One line per bad argument, in words a model can act on."""
    problems = []
    for item in err.errors():
        loc = ".".join(str(x) for x in item.get("loc", ())) or "(arguments)"
        kind = item.get("type", "")
        if kind == "missing":
            problems.append(f"missing argument {loc!r}")
        elif kind == "extra_forbidden":
            problems.append(f"unexpected argument {loc!r}")
        else:
            problems.append(f"{loc}: {item.get('msg', 'invalid')}")
    return f"invalid arguments for {name}: " + "; ".join(problems)
