"""One episode's environment: the agent side and (optionally) the user side, each a DB plus tools.

Contract: ``Environment.call`` never raises. Unknown tools, bad JSON, missing or extra
arguments, unknown ids and refused state changes all come back as ``ToolResult(ok=False)`` with
``content="Error: …"`` in tau2's words, which is what the calling seat reads (tau2 does the same,
spec §B.4.2; a value of the wrong type fails only where tau2's tool would, see ``toolkit.py``).
A bug in our own tool code also comes back as an error result, flagged ``internal`` so tests and
logs can tell it apart from the model's mistakes.

Setup (``set_state``) and assertions use ``invoke``, which may raise: a task whose setup fails is
broken data and should stop the run, not be scored.

A domain with a shared DB (banking, ``DomainSpec.shared_db``) runs the user's tools on the agent's
DB: ``user_db`` stays ``None`` and only the agent DB's hash is compared.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from .messages import Message, Requestor, ToolCall, trajectory_tool_calls
from .registry import Domain, DomainDB
from .tasks import EnvAssertion, InitialState, Task
from .toolkit import ToolError, ToolKind, Toolkit, ToolSpec, describe_validation_error, render_content


class InitialStateError(ValueError):
    """A task's initial state cannot be applied (bad patch, failing setup call, strict replay)."""


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call, as the calling seat will read it."""

    ok: bool
    content: str
    """JSON (or plain text) on success; ``"Error: <reason>"`` on failure."""
    error: str | None = None
    """The reason alone, without the ``Error:`` prefix; ``None`` on success."""
    internal: bool = False
    """The failure is a bug in our tool code, not the caller's fault."""

    @classmethod
    def failure(cls, reason: str, *, internal: bool = False) -> ToolResult:
        """Build an error result in tau2's ``Error: …`` form."""
        return cls(ok=False, content=f"Error: {reason}", error=reason, internal=internal)


@dataclass(frozen=True)
class ReplayMismatch:
    """A replayed call whose output differs from the one recorded in the trajectory."""

    tool: str
    requestor: Requestor
    recorded: str
    replayed: str


class Environment:
    """Tools and DBs of one episode: ``Environment.for_task(domain, task)``, or ``Environment(domain)``
    for a task-free one (the domain's full toolkits on fresh copies of its DBs)."""

    def __init__(self, domain: Domain, task: Task | None = None) -> None:
        self.domain = domain
        self.agent_db: DomainDB = domain.new_agent_db()
        self.user_db: DomainDB | None = domain.new_user_db()
        self._user_allowed: frozenset[str] | None = None
        self._user_on_agent_db = False
        self.sync_enabled = True
        """Run the domain's DB coupling after each call (telecom); off only to prove it matters."""
        if domain.spec.prepare_db is not None:
            domain.spec.prepare_db(self.agent_db, domain, task)

    @classmethod
    def for_task(cls, domain: Domain, task: Task, *, with_history: bool = True) -> Environment:
        """Build a fresh environment with the task's initial state applied and its user tools narrowed.

        ``with_history=False`` applies DB patches and setup calls but not the writes of the task's
        ``message_history``; the reward's predicted replay wants that, because it replays the
        whole trajectory, history included, itself.
        """
        env = cls(domain, task)
        env.restrict_user_tools(task.user_tools)
        if with_history:
            env.set_state(task.initial_state)
        else:
            env.apply_setup(task.initial_state)
        return env

    # --- what the seats see ---------------------------------------------------------------

    def policy_text(self) -> str:
        """Return the domain policy the candidate must follow (read from the data dir)."""
        return self.domain.policy_text()

    def restrict_user_tools(self, names: Sequence[str] | None) -> None:
        """Offer the user only ``names`` (a task's ``user_tools``); ``None`` offers all of them.

        An unknown name is an error, or, where the domain says so, leaves the user with no tools.
        """
        if names is None:
            self._user_allowed = None
            return
        known = set(self.domain.spec.user_tools.names()) if self.domain.spec.user_tools else set()
        unknown = sorted(set(names) - known)
        if unknown and self.domain.spec.unknown_user_tools_mean_none:
            self._user_allowed = frozenset()
            return
        if unknown:
            raise ValueError(f"domain {self.domain.name!r} has no user tools named {', '.join(unknown)}")
        self._user_allowed = frozenset(names)

    def tool_specs(self, requestor: Requestor = "assistant") -> list[ToolSpec]:
        """List the tools a seat may call, sorted by name."""
        toolkit = self._toolkit(requestor)
        if toolkit is None:
            return []
        specs = toolkit.tools()
        if requestor == "user" and self._user_allowed is not None:
            specs = [s for s in specs if s.name in self._user_allowed]
        return sorted(specs, key=lambda s: s.name)

    def tool_schemas(self, requestor: Requestor = "assistant") -> list[dict[str, Any]]:
        """OpenAI function schemas for a seat: ``"assistant"`` (candidate) or ``"user"`` (simulator)."""
        return [self.domain.tool_schema(requestor, spec) for spec in self.tool_specs(requestor)]

    def tool_kind(self, name: str, requestor: Requestor = "assistant") -> ToolKind | None:
        """``read``/``write``/``generic`` for a seat's tool, or ``None`` if it has no such tool.

        Any tool the seat can call counts, offered or not (``_callable``), so that a replay re-runs
        a user tool the task does not offer, as upstream's replay of the trajectory does.
        """
        try:
            return self._callable(name, requestor)[0].kind
        except ToolError:
            return None

    # --- calls ------------------------------------------------------------------------------

    def call(
        self, name: str, arguments: Mapping[str, Any] | str | None = None, requestor: Requestor = "assistant"
    ) -> ToolResult:
        """Run one tool for a seat, then sync the two DBs; never raises (see the module docstring)."""
        result = self._call(name, arguments, requestor)
        try:
            self.sync()
        except Exception as err:  # noqa: BLE001 - a sync bug is ours; report it, keep the contract
            return ToolResult.failure(f"internal error in sync after {name}: {err}", internal=True)
        return result

    def sync(self) -> None:
        """Align the user DB with the agent DB (and back) where the domain couples them (spec A.3)."""
        coupling = self.domain.spec.sync
        if coupling is not None and self.sync_enabled and self.user_db is not None:
            coupling(self.agent_db, self.user_db)

    def _call(self, name: str, arguments: Mapping[str, Any] | str | None, requestor: Requestor) -> ToolResult:
        try:
            spec, db = self._callable(name, requestor)
            return ToolResult(ok=True, content=render_content(spec.run(db, _parse_arguments(arguments))))
        except ToolError as err:
            return ToolResult.failure(str(err))
        except Exception as err:  # noqa: BLE001 - the contract is "never raises"; flagged as internal
            return ToolResult.failure(str(err) or type(err).__name__, internal=True)

    def call_tool(self, call: ToolCall) -> ToolResult:
        """``call`` for a message's tool call, on the side its ``requestor`` names."""
        return self.call(call.name, call.arguments, call.requestor)

    def invoke(self, side: Requestor, func_name: str, arguments: Mapping[str, Any]) -> object:
        """Run any function of a side, helpers included, returning its raw value; raises ``ToolError``.

        Setup actions and assertions come through here, and a sync follows each (as tau2 does).
        """
        toolkit, db = self._toolkit(side), self._db(side)
        spec = toolkit.spec(func_name) if toolkit is not None else None
        if spec is None or db is None:
            raise ToolError(f"the {side} side has no function {func_name!r}")
        try:
            return spec.run(db, arguments)
        except ValidationError as err:
            raise ToolError(describe_validation_error(func_name, err)) from None
        finally:
            self.sync()

    def check_assertion(self, assertion: EnvAssertion) -> bool:
        """Whether an env assertion holds here; a function that fails counts as not met."""
        try:
            return (
                self.invoke(assertion.env_type, assertion.func_name, assertion.arguments)
                == assertion.assert_value
            )
        except ToolError:
            return False

    # --- state ------------------------------------------------------------------------------

    def db_hash(self) -> str:
        """Hash of the agent DB (spec §B.4.3)."""
        return self.agent_db.hash()

    def user_db_hash(self) -> str | None:
        """Hash of the user DB, or ``None`` when the domain has no user side."""
        return self.user_db.hash() if self.user_db is not None else None

    def set_state(self, state: InitialState | None, *, strict: bool = False) -> list[ReplayMismatch]:
        """Apply DB patches, then setup calls, then replay the history's writes (spec §B.4.3).

        Returns the replayed calls whose output differs from the recorded one; with ``strict``
        such a difference raises instead.
        """
        if state is None:
            return []
        self.apply_setup(state)
        mismatches = self.replay(state.message_history or [])
        self.sync()
        if strict and mismatches:
            raise InitialStateError(f"history replay differs at {mismatches[0].tool}: {mismatches[0]}")
        return mismatches

    def apply_setup(self, state: InitialState | None) -> None:
        """Apply DB patches and setup calls only, not the history.

        The predicted replay uses this, then replays the whole trajectory (history included) itself.
        """
        if state is None:
            return
        data = state.initialization_data
        try:
            if data is not None and data.agent_data:
                self.agent_db.apply_patch(data.agent_data)
                self._user_tools_on_agent_db()
            if data is not None and data.user_data:
                if self.user_db is None:
                    raise ValueError("user_data given but the domain has no user DB")
                self.user_db.apply_patch(data.user_data)
            for action in state.initialization_actions or []:
                self.invoke(action.env_type, action.func_name, action.arguments)
        except (ValueError, ToolError) as err:
            raise InitialStateError(f"cannot apply the initial state: {err}") from None

    def _user_tools_on_agent_db(self) -> None:
        """What tau2 does after patching the agent DB: its user tools are pointed at the agent's DB.

        In a domain with a user DB of its own (mock), the user's tools then run on the agent DB
        (and fail there), and the state has no user DB; we do the same, since a model can tell.
        """
        if self.user_db is not None:
            self.user_db = None
            self._user_on_agent_db = True

    def replay(self, messages: Sequence[Message]) -> list[ReplayMismatch]:
        """Re-run the write calls of a trajectory in order; reads and unknown tools are skipped."""
        recorded = _pair_results(messages)
        mismatches: list[ReplayMismatch] = []
        for index, call in enumerate(trajectory_tool_calls(messages)):
            if self.tool_kind(call.name, call.requestor) != "write":
                continue
            result = self.call_tool(call)
            answer = recorded.get(index)
            if answer is not None and not _same_output(result, answer):
                mismatches.append(
                    ReplayMismatch(call.name, call.requestor, answer.content or "", result.content)
                )
        return mismatches

    # --- internals ---------------------------------------------------------------------------

    def _toolkit(self, side: str) -> Toolkit | None:
        if side == "assistant":
            return self.domain.spec.agent_tools
        if side == "user":
            return self.domain.spec.user_tools
        return None

    def _db(self, side: str) -> DomainDB | None:
        if side == "user" and (self.domain.spec.shared_db or self._user_on_agent_db):
            return self.agent_db
        return self.agent_db if side == "assistant" else self.user_db if side == "user" else None

    def _callable(self, name: str, requestor: str) -> tuple[ToolSpec, DomainDB]:
        """The seat's tool by name. As in tau2, a user tool the task does not offer still runs
        (only the prompt leaves it out), and so does a tool the domain lists in ``unlisted_tools``
        (banking's discoverable tools called by name); a seat without such a tool is told so in
        tau2's words."""
        if requestor not in ("assistant", "user"):
            raise ToolError(f"unknown requestor {requestor!r}; use 'assistant' or 'user'")
        toolkit, db = self._toolkit(requestor), self._db(requestor)
        if toolkit is None or db is None:
            raise ToolError("User tools not available")
        spec = toolkit.spec(name)
        if spec is None or spec.kind == "helper":
            unlisted = self.domain.spec.unlisted_tools.get(requestor)
            spec = unlisted.spec(name) if unlisted is not None else None
        if spec is None:
            raise ToolError(f"Tool {name!r} not found.")
        return spec, db


def _parse_arguments(arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any]:
    """Arguments as a mapping; models often send a JSON string, which is accepted too."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as err:
            raise ToolError(f"arguments are not valid JSON: {err.msg}") from None
    if not isinstance(arguments, Mapping):
        raise ToolError("arguments must be a JSON object")
    return arguments


def _pair_results(messages: Sequence[Message]) -> dict[int, Message]:
    """Map call index → its recorded tool message: by id when it matches, else the oldest open call."""
    open_calls: list[tuple[int, str]] = []
    paired: dict[int, Message] = {}
    index = 0
    for message in messages:
        if message.role in ("assistant", "user"):
            for call in message.tool_calls or []:
                open_calls.append((index, call.id))
                index += 1
        elif message.role == "tool" and open_calls:
            match = next((p for p in open_calls if message.id and p[1] == message.id), open_calls[0])
            open_calls.remove(match)
            paired[match[0]] = message
    return paired


def _same_output(result: ToolResult, recorded: Message) -> bool:
    """Whether a replay reproduced the recorded answer (as JSON when both sides parse)."""
    recorded_error = recorded.error or (recorded.content or "").startswith("Error")
    if recorded_error or not result.ok:
        return recorded_error and not result.ok
    try:
        return bool(json.loads(result.content) == json.loads(recorded.content or ""))
    except json.JSONDecodeError:
        return result.content == (recorded.content or "")
