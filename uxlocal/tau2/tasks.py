"""tau2 task files (``tasks.json`` + ``split_tasks.json``, or one file per task): models, loading, scenarios.

Banking keeps one file per task (``DomainSpec.task_glob``), as upstream loads it.

Models follow the tau2 task schema (spec userproxybench.md §B.1.1) and keep unknown keys
(``annotations``, banking's ``persoca`` typo, …) so that a task written back into results.json is
the task that was read. Every bad file becomes an ``InputError`` naming the file, the task id, its
index and the field, because a run should stop before any model is loaded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from uxlocal.errors import InputError, format_validation_error

from .layout import domain_dir
from .messages import Message, Requestor
from .registry import domain_spec

RewardType = Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]
DEFAULT_REWARD_BASIS: tuple[RewardType, ...] = ("DB", "COMMUNICATE")
"""tau2's default when a task names no basis (spec §B.1.1)."""

TASKS_FILE = "tasks.json"
SPLITS_FILE = "split_tasks.json"
DEFAULT_SPLIT = "base"
"""The evaluation split tau2 and UserProxyBench use; domains without a split file treat it as "all"."""


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="allow")


class Description(_Tolerant):
    """Notes for evaluators; never shown to the candidate or the user simulator."""

    purpose: str | None = None
    relevant_policies: str | None = None
    notes: str | None = None


class StructuredInstructions(_Tolerant):
    """The private brief of airline/retail/telecom users, one field per kind of knowledge."""

    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    """Facts the user explicitly does not know; the simulator must not invent them."""
    task_instructions: str


class UserScenario(_Tolerant):
    """What the user simulator is told, and nothing the candidate sees."""

    persona: str | None = None
    instructions: StructuredInstructions | str
    """Structured (airline, retail, telecom) or free text (mock, banking_knowledge)."""


class EnvFunctionCall(_Tolerant):
    """A function run on one side of the environment: setup actions and the assertion form."""

    env_type: Requestor
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class EnvAssertion(EnvFunctionCall):
    """A check run on the final environment; met when the function returns ``assert_value``."""

    assert_value: bool = True
    message: str | None = None


class InitializationData(_Tolerant):
    """Deep-merge patches applied to the fresh agent and user DBs before anything else."""

    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class InitialState(_Tolerant):
    """How an episode starts: DB patches, then setup calls, then an already-played history."""

    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvFunctionCall] | None = None
    message_history: list[Message] | None = None


class Action(_Tolerant):
    """One step of the reference trajectory; replayed to build the gold DB."""

    action_id: str
    requestor: Requestor = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    info: str | None = None
    compare_args: list[str] | None = None
    """Arguments an ACTION check compares: ``None`` means all of them, ``[]`` means name only."""


class EvaluationCriteria(_Tolerant):
    """What the reward checks; only the components in ``reward_basis`` gate the reward."""

    actions: list[Action] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[RewardType] = Field(default_factory=lambda: list(DEFAULT_REWARD_BASIS))

    @field_validator("reward_basis", mode="before")
    @classmethod
    def _null_basis_is_default(cls, value: object) -> object:
        return list(DEFAULT_REWARD_BASIS) if value is None else value


class Task(_Tolerant):
    """One tau2 task; ``id`` is a string in every domain (retail/airline use digits)."""

    id: str
    description: Description | None = None
    user_scenario: UserScenario
    ticket: str | None = None
    """Single-text version of the problem, for solo (no-user) agents."""
    initial_state: InitialState | None = None
    evaluation_criteria: EvaluationCriteria | None = None
    issues: list[dict[str, Any]] | None = None
    required_documents: list[str] | None = None
    user_tools: list[str] | None = None
    """User tools the simulator may call: ``None`` means all of the domain's, ``[]`` means none."""

    def gold_requestors(self) -> list[str]:
        """Who acts in the gold trajectory (sorted): ``["user"]`` marks a task only the user's deeds solve."""
        actions = self.evaluation_criteria.actions if self.evaluation_criteria else None
        return sorted({action.requestor for action in actions or []})


def load_tasks(
    data_dir: str | Path,
    domain: str,
    *,
    split: str | None = DEFAULT_SPLIT,
    task_ids: list[str] | None = None,
    limit: int | None = None,
) -> list[Task]:
    """Tasks of one domain in file order, narrowed by split, then ``task_ids``, then ``limit``.

    ``split=None`` keeps every task in the file. Asking for an id outside the split is an error,
    not an empty result, so a typo cannot silently shrink a run.
    """
    folder = domain_dir(data_dir, domain)
    pattern = _task_glob(domain)
    tasks = _read_task_file(folder / TASKS_FILE) if pattern is None else _read_task_glob(folder, pattern)
    if split is not None:
        wanted = set(_split_ids(folder, split, tasks))
        tasks = [t for t in tasks if t.id in wanted]
    if task_ids is not None:
        tasks = _select_ids(task_source(data_dir, domain), tasks, task_ids, split)
    if limit is not None:
        if limit < 0:
            raise InputError(None, None, f"limit must be 0 or more, got {limit}")
        tasks = tasks[:limit]
    return tasks


def task_source(data_dir: str | Path, domain: str) -> Path:
    """Where a domain's tasks are read from: ``tasks.json``, or the folder of one-task files."""
    folder = domain_dir(data_dir, domain)
    pattern = _task_glob(domain)
    return folder / TASKS_FILE if pattern is None else (folder / pattern).parent


def task_files(data_dir: str | Path, domain: str) -> list[Path]:
    """Every file the domain's tasks come from, in load order (for data hashes)."""
    folder = domain_dir(data_dir, domain)
    pattern = _task_glob(domain)
    return [folder / TASKS_FILE] if pattern is None else sorted(folder.glob(pattern))


def _task_glob(domain: str) -> str | None:
    """Return the domain's one-task-per-file glob (``DomainSpec.task_glob``); ``None`` for ``tasks.json``."""
    try:
        return domain_spec(domain).task_glob
    except KeyError:
        return None


def _read_task_glob(folder: Path, pattern: str) -> list[Task]:
    """Tasks from one JSON object per file, in file-name order (as upstream banking loads them)."""
    paths = sorted(folder.glob(pattern))
    if not paths:
        raise InputError(folder, None, f"no task files match {pattern!r}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for path in paths:
        text = _read_text(path)
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(path, err.lineno, f"not valid JSON: {err.msg}") from None
        task = _validate_task(path, text, 0, raw)
        if task.id in seen:
            raise InputError(path, _line_of_id(text, task.id), f"task id {task.id!r} appears twice")
        seen.add(task.id)
        tasks.append(task)
    return tasks


def available_splits(data_dir: str | Path, domain: str) -> list[str]:
    """Split names of a domain; a domain without a split file has only ``base`` (all tasks)."""
    splits = _read_splits(domain_dir(data_dir, domain) / SPLITS_FILE)
    return sorted(splits) if splits is not None else [DEFAULT_SPLIT]


def _read_task_file(path: Path) -> list[Task]:
    text = _read_text(path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(path, err.lineno, f"not valid JSON: {err.msg}") from None
    if not isinstance(raw, list):
        raise InputError(path, 1, f"expected a JSON list of tasks, got {type(raw).__name__}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        task = _validate_task(path, text, index, item)
        if task.id in seen:
            raise InputError(path, _line_of_id(text, task.id), f"task id {task.id!r} appears twice")
        seen.add(task.id)
        tasks.append(task)
    return tasks


def _validate_task(path: Path, text: str, index: int, item: object) -> Task:
    """One task, or an error that says which task and which field."""
    task_id = item.get("id") if isinstance(item, dict) else None
    try:
        return Task.model_validate(item)
    except ValidationError as err:
        where = f"task {task_id!r} (index {index})" if task_id is not None else f"task at index {index}"
        line = _line_of_id(text, str(task_id)) if task_id is not None else None
        raise InputError(path, line, f"{where}: {format_validation_error(err)}") from None


def _line_of_id(text: str, task_id: str) -> int | None:
    """Find the 1-based line holding ``"id": "<task_id>"``, so editors can jump to the task."""
    match = re.search(r'"id"\s*:\s*' + re.escape(json.dumps(task_id)), text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, None, "file not found") from None


def _read_splits(path: Path) -> dict[str, list[str]] | None:
    if not path.exists():
        return None
    text = _read_text(path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(path, err.lineno, f"not valid JSON: {err.msg}") from None
    if not isinstance(raw, dict) or not all(
        isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in raw.values()
    ):
        raise InputError(path, 1, "expected an object mapping split names to lists of task ids")
    return raw


def _split_ids(folder: Path, split: str, tasks: list[Task]) -> list[str]:
    """Ids of ``split``; without a split file only ``base`` exists and it means every task."""
    splits = _read_splits(folder / SPLITS_FILE)
    if splits is None:
        if split != DEFAULT_SPLIT:
            raise InputError(
                folder,
                None,
                f"unknown split {split!r}",
                f"this domain has no {SPLITS_FILE}; available: {DEFAULT_SPLIT} (all tasks)",
            )
        return [t.id for t in tasks]
    if split not in splits:
        raise InputError(
            folder / SPLITS_FILE, None, f"unknown split {split!r}", f"available: {', '.join(sorted(splits))}"
        )
    known = {t.id for t in tasks}
    missing = [i for i in splits[split] if i not in known]
    if missing:
        raise InputError(
            folder / SPLITS_FILE,
            None,
            f"split {split!r} names ids missing from {TASKS_FILE}: {', '.join(missing[:5])}",
        )
    return splits[split]


def _select_ids(path: Path, tasks: list[Task], task_ids: list[str], split: str | None) -> list[Task]:
    known = {t.id for t in tasks}
    missing = [i for i in task_ids if i not in known]
    if missing:
        scope = f"split {split!r}" if split is not None else "the task file"
        raise InputError(path, None, f"task ids not in {scope}: {', '.join(missing[:10])}")
    wanted = set(task_ids)
    return [t for t in tasks if t.id in wanted]


# --- the private scenario, as the user simulator reads it -------------------------------------

_SECTIONS: tuple[tuple[str, str], ...] = (
    ("domain", "Service you are contacting"),
    ("reason_for_call", "Why you are getting in touch"),
    ("known_info", "What you know"),
    ("unknown_info", "What you do not know (do not make it up)"),
    ("task_instructions", "How to behave"),
)


def render_scenario(scenario: UserScenario) -> str:
    """Render the user's private brief as plain text, for the ``<scenario>`` part of the user prompt.

    Our own headings, one section per structured field, empty sections left out. Free-text
    instructions (mock, banking) are kept as written. A ``.`` placeholder (20 retail tasks) is
    treated as empty, because a lone dot reads to a model like a real instruction.
    """
    parts: list[str] = []
    if scenario.persona and scenario.persona.strip():
        parts.append(f"## Who you are\n{scenario.persona.strip()}")
    instructions = scenario.instructions
    if isinstance(instructions, str):
        parts.append(f"## Your situation\n{instructions.strip()}")
        return "\n\n".join(parts)
    lines = ["## Your situation"]
    for field, heading in _SECTIONS:
        value = getattr(instructions, field)
        if value is None or value.strip() in ("", "."):
            continue
        text = value.strip()
        lines.append(f"{heading}: {text}" if "\n" not in text else f"{heading}:\n{_indent(text)}")
    parts.append("\n\n".join(lines))
    return "\n\n".join(parts)


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line.strip() else "" for line in text.splitlines())
