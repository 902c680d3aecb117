"""Upstream's words for every seat, read from the user's tau2-bench checkout: ``Tau2Words``.

A tau2 or UserProxyBench number is comparable with tau2-bench only when every model reads what
tau2-bench shows it. Those words are upstream's (MIT, Sierra), so they are read at run time from
the checkout the user points ``--tau2-data`` at, parsed with ``ast``, never imported or copied:

- tool schemas per seat (``upstream_tools.py``), in upstream's order;
- the agent's system prompt: ``src/tau2/agent/llm_agent.py``'s instruction constant, wrapped with
  the policy by the template its ``LLMAgent.system_prompt`` formats;
- the user's system prompt: the guidelines file ``user_simulator.py`` names (the ``_tools`` variant
  when the user has tools) from ``data/tau2/user_simulator/``, and the scenario, in the template
  ``UserSimulator.system_prompt`` formats; the scenario text is ``scenario_text`` (our rendering of
  upstream's ``str(task.user_scenario)``, checked against the episode recording);
- the NL-assertion judge's system prompt and user-prompt template, from
  ``NLAssertionsEvaluator.evaluate_nl_assertions`` (its f-strings are rendered by ``_render``).

A bare data folder (no ``src/``) and our own ``homenet`` are *not comparable*: ``Tau2Words.load``
then returns an object with ``comparable`` False, whose word methods raise ``NotComparable``; such a
run uses our own words. The source (checkout path and a sha256 of every file read) goes into the
run identity. Pure: reads files, never calls a model or writes anything.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .layout import tau2_root
from .tasks import StructuredInstructions, Task, UserScenario
from .upstream_source import Checkout, CheckoutError, Module, checkout_root, function_in, string_value
from .upstream_tools import TOOLKITS, checkout_seat_schemas

AGENT_MODULE = ("tau2.agent.llm_agent", "LLMAgent")
USER_MODULE = ("tau2.user.user_simulator", "UserSimulator")
JUDGE_MODULE = ("tau2.evaluator.evaluator_nl_assertions", "NLAssertionsEvaluator")
GUIDELINE_CONSTANTS = {False: "GLOBAL_USER_SIM_GUIDELINES_PATH",
                       True: "GLOBAL_USER_SIM_GUIDELINES_PATH_TOOLS"}
"""The module constants naming the guidelines file, without and with user tools."""
PERSONA_SLOT = "<PERSONA_GUIDELINES>"
"""Where upstream inserts runtime persona guidelines; with the default persona, nothing."""


class NotComparable(RuntimeError):
    """Upstream's words were asked of a source that has none (a bare data folder, or ``homenet``)."""


@dataclass(frozen=True)
class WordsSource:
    """Where the words came from: the checkout and a digest of every file read (run identity)."""

    checkout: Path
    sha256: str


@dataclass(frozen=True)
class _Template:
    """A ``str.format`` template and which of its fields is the varying part (policy, scenario)."""

    text: str
    fixed: dict[str, str]
    slot: str

    def fill(self, value: str) -> str:
        return self.text.format(**{**self.fixed, self.slot: value})


@dataclass(frozen=True)
class Tau2Words:
    """Everything a model reads in a tau2 episode, as upstream words it, for one domain."""

    domain: str
    comparable: bool
    source: WordsSource | None = None
    tools: Mapping[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = field(default_factory=dict)
    """Per seat: listed tool schemas and discoverable ones, in upstream's order."""
    _agent: _Template | None = None
    _user: _Template | None = None
    _guidelines: Mapping[bool, str] = field(default_factory=dict)
    _judge: tuple[str, ast.JoinedStr, ast.Call, Module] | None = None

    @classmethod
    def load(cls, data_dir: str | Path, domain: str) -> Tau2Words:
        """Read upstream's words for ``domain`` from the checkout ``data_dir`` is (or sits in).

        A bare data folder or a domain upstream lacks gives ``comparable`` False. A checkout whose
        source is shaped unlike 8ebb749's raises ``CheckoutError`` naming file and line.
        """
        root = tau2_root(data_dir)
        home = checkout_root(root)
        if home is None or domain not in TOOLKITS:
            return cls(domain, comparable=False)
        checkout = Checkout(home)
        seats = checkout_seat_schemas(home, domain) or {}
        tools = {seat: (listed, hidden) for seat, (_, listed, hidden) in seats.items()}
        agent = _agent_template(checkout)
        user, guideline_files = _user_template(checkout, root)
        guidelines = {tools_on: path.read_text(encoding="utf-8")
                      for tools_on, path in guideline_files.items()}
        judge = _judge_parts(checkout)
        tool_files = sorted({path for path, _, _ in seats.values()})
        files = sorted(set(checkout.parsed_files()) | set(tool_files)) + sorted(guideline_files.values())
        source = WordsSource(home, _digest(home, files))
        return cls(domain, True, source, tools, agent, user, guidelines, judge)

    def _need(self) -> None:
        if not self.comparable:
            raise NotComparable(f"no upstream words for {self.domain!r}: point --tau2-data at a tau2-bench "
                                "checkout (data/tau2 and src/tau2); homenet is ours and never comparable")

    def tool_schemas(self, seat: str, include: Sequence[str] | None = None) -> list[dict[str, Any]] | None:
        """List the tools a seat's model is given, in upstream's order; ``include`` filters (user tools).

        ``None`` where upstream gives none: a seat without tools, an empty selection, or a name the
        seat lacks (upstream's runner swallows that error and leaves the user without tools).
        """
        self._need()
        listed = list(self.tools.get(seat, ([], []))[0])
        if include is not None:
            names = {t["function"]["name"] for t in listed}
            if any(name not in names for name in include):
                return None
            listed = [t for t in listed if t["function"]["name"] in set(include)]
        return listed or None

    def discoverable_schemas(self, seat: str) -> list[dict[str, Any]]:
        """List a seat's discoverable tools (banking), never offered as tools but described on unlock."""
        self._need()
        return list(self.tools.get(seat, ([], []))[1])

    def user_tools(self, task: Task) -> list[dict[str, Any]] | None:
        """List the user tools upstream offers ``task``'s simulator (``None`` when it offers none)."""
        return self.tool_schemas("user", task.user_tools)

    def agent_system_prompt(self, policy: str) -> str:
        """Build the agent's system message for a domain policy."""
        self._need()
        assert self._agent is not None
        return self._agent.fill(policy)

    def guidelines_file(self, *, has_tools: bool = False) -> str:
        """Return a guidelines file's text as read (persona slot kept).

        Upstream's ``results.json`` records the file without tools (``get_info`` calls
        ``get_global_user_sim_guidelines()`` with its default) whatever the user was given.
        """
        self._need()
        return self._guidelines[has_tools]

    def user_guidelines(self, *, has_tools: bool) -> str:
        """Return the guidelines the user simulator reads: ``guidelines_file``, persona slot emptied."""
        return self.guidelines_file(has_tools=has_tools).replace(PERSONA_SLOT, "")

    def user_system_prompt(self, scenario: UserScenario, *, has_tools: bool) -> str:
        """Build the user simulator's system message: guidelines (tools variant with tools), scenario."""
        self._need()
        assert self._user is not None
        guidelines = self.user_guidelines(has_tools=has_tools)
        return self._user.text.format(**{self._user.slot: scenario_text(scenario),
                                         **dict.fromkeys(self._user.fixed, guidelines)})

    def judge_messages(self, trajectory: Sequence[Mapping[str, Any]],
                       assertions: Sequence[str]) -> list[dict[str, str]]:
        """Build the NL-assertion judge's request messages for a trajectory (``role``/``content`` dicts)."""
        self._need()
        assert self._judge is not None
        system, user_template, lines, module = self._judge
        transcript = _render_lines(lines, trajectory, module)
        names = {"trajectory_str": transcript, "nl_assertions": list(assertions)}
        return [{"role": "system", "content": system},
                {"role": "user", "content": _render(user_template, names, module)}]


def scenario_text(scenario: UserScenario) -> str:
    """Render a user scenario as upstream's ``str(task.user_scenario)`` does (our code).

    ``Persona:`` and ``Instructions:`` headings, each body indented one tab on every non-blank
    line; structured instructions list ``Domain:``, ``Reason for call:``, ``Known info:``,
    ``Unknown info:`` (each only when set) and ``Task instructions:`` the same way, so a nested
    field ends up two tabs deep. Placeholders such as ``.`` are kept: the model reads them upstream.
    """
    lines: list[str] = []
    if scenario.persona is not None:
        lines += ["Persona:", _tab(scenario.persona)]
    instructions = scenario.instructions
    text = instructions if isinstance(instructions, str) else _structured_text(instructions)
    lines += ["Instructions:", _tab(text)]
    return "\n".join(lines)


def _structured_text(instructions: StructuredInstructions) -> str:
    parts = [f"Domain: {instructions.domain}", f"Reason for call:\n{_tab(instructions.reason_for_call)}"]
    optional = (("Known info", instructions.known_info), ("Unknown info", instructions.unknown_info))
    for heading, value in optional:
        if value is not None:
            parts.append(f"{heading}:\n{_tab(value)}")
    parts.append(f"Task instructions:\n{_tab(instructions.task_instructions)}")
    return "\n".join(parts)


def _tab(text: str) -> str:
    """Prefix every line holding more than whitespace with a tab (line endings kept)."""
    return "".join("\t" + line if line.strip() else line for line in text.splitlines(keepends=True))


# --- reading the templates ------------------------------------------------------------------------


def _format_call(module: Module, owner: str, prop: str) -> ast.Call:
    """Find the ``TEMPLATE.format(...)`` call a property builds its prompt with."""
    node = function_in(module, owner, prop)
    for inner in ast.walk(node):
        func = inner.func if isinstance(inner, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Name):
            return inner  # type: ignore[return-value]
    raise CheckoutError(module.where(node), f"{owner}.{prop} formats no template")


def _self_attr(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _agent_template(checkout: Checkout) -> _Template:
    module = checkout.module(AGENT_MODULE[0])
    call = _format_call(module, AGENT_MODULE[1], "system_prompt")
    template = string_value(module, call.func.value)  # type: ignore[attr-defined]
    fixed, slot = {}, None
    for keyword in call.keywords:
        if _self_attr(keyword.value) == "domain_policy" and keyword.arg:
            slot = keyword.arg
        elif keyword.arg:
            fixed[keyword.arg] = string_value(module, keyword.value)
    if slot is None:
        raise CheckoutError(module.where(call), "LLMAgent.system_prompt does not format the domain policy")
    return _Template(template, fixed, slot)


def _user_template(checkout: Checkout, data_root: Path) -> tuple[_Template, dict[bool, Path]]:
    module = checkout.module(USER_MODULE[0])
    call = _format_call(module, USER_MODULE[1], "system_prompt")
    template = string_value(module, call.func.value)  # type: ignore[attr-defined]
    slot = next((k.arg for k in call.keywords if _self_attr(k.value) == "instructions" and k.arg), None)
    others = [k.arg for k in call.keywords if k.arg and k.arg != slot]
    if slot is None or len(others) != 1:
        raise CheckoutError(module.where(call), "UserSimulator.system_prompt: expected the guidelines and "
                                                "the instructions as its two template fields")
    files = {tools_on: data_root / "user_simulator" / _last_string(module, name)
             for tools_on, name in GUIDELINE_CONSTANTS.items()}
    for path in files.values():
        if not path.is_file():
            raise CheckoutError(str(path), "user simulator guidelines not found")
    return _Template(template, {others[0]: ""}, slot), files


def _last_string(module: Module, name: str) -> str:
    """Return the file name a path constant ends with (``DIR / "file.md"``)."""
    node = module.defs.get(name)
    strings = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)] \
        if node is not None else []
    if not strings:
        raise CheckoutError(module.where(node), f"no file name in {name}")
    return strings[-1]


def _judge_parts(checkout: Checkout) -> tuple[str, ast.JoinedStr, ast.Call, Module]:
    module = checkout.module(JUDGE_MODULE[0])
    method = function_in(module, JUDGE_MODULE[1], "evaluate_nl_assertions")
    assigned = {t.id: stmt.value for stmt in method.body if isinstance(stmt, ast.Assign)
                for t in stmt.targets if isinstance(t, ast.Name)}
    system, user = assigned.get("system_prompt"), assigned.get("user_prompt")
    lines = assigned.get("trajectory_str")
    if system is None or not isinstance(user, ast.JoinedStr) or not isinstance(lines, ast.Call):
        raise CheckoutError(module.where(method), "evaluate_nl_assertions: expected system_prompt, an "
                                                  "f-string user_prompt and a joined trajectory_str")
    return string_value(module, system), user, lines, module


def _render_lines(call: ast.Call, trajectory: Sequence[Mapping[str, Any]], module: Module) -> str:
    """Render ``SEP.join([f"..." for message in trajectory])`` over our trajectory's messages."""
    func, args = call.func, call.args
    comp = args[0] if len(args) == 1 else None
    if (not isinstance(func, ast.Attribute) or func.attr != "join"
            or not isinstance(comp, ast.ListComp | ast.GeneratorExp)
            or not isinstance(comp.elt, ast.JoinedStr)
            or not isinstance(comp.generators[0].target, ast.Name)):
        raise CheckoutError(module.where(call), "trajectory_str: expected SEP.join(an f-string per message)")
    separator = string_value(module, func.value)
    name = comp.generators[0].target.id
    return separator.join(_render(comp.elt, {name: message}, module) for message in trajectory)


def _render(node: ast.JoinedStr, names: Mapping[str, Any], module: Module) -> str:
    """Render an f-string whose fields are names or ``name.field`` (a message's field, by key)."""
    out: list[str] = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
            continue
        plain = isinstance(part, ast.FormattedValue) and part.format_spec is None and part.conversion == -1
        if not isinstance(part, ast.FormattedValue) or not plain:
            raise CheckoutError(module.where(part), "an f-string field we cannot render")
        value = part.value
        if isinstance(value, ast.Name) and value.id in names:
            out.append(str(names[value.id]))
        elif isinstance(value, ast.Attribute) and getattr(value.value, "id", None) in names:
            out.append(str(names[value.value.id].get(value.attr)))  # type: ignore[attr-defined]
        else:
            raise CheckoutError(module.where(part), f"cannot render the f-string field {ast.unparse(value)}")
    return "".join(out)


def _digest(root: Path, files: Sequence[Path]) -> str:
    hasher = hashlib.sha256()
    for path in files:
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        hasher.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return hasher.hexdigest()
