"""UFS criteria: the blueprint they are written from, their schema, and the checks run in code.

Spec userproxybench.md §A.4 and §A.9 steps 1-4. A task's criteria are written by a model from
the task's *blueprint* (the user's private scenario, verbatim), the *contract* (the standing
simulator guidelines the proxy saw) and the user's tool surface; each criterion must quote a
grounding span, be falsifiable and concern only the user. This module holds everything about a
criterion that needs no model:

- ``Blueprint``: the verbatim sources, one section per scenario field, plus the contract.
- ``Criterion`` and ``writer_schema``: what the writer must produce (4-8 items).
- ``screen``: the code checks (taxonomy, exact grounding, user-only wording, duplicates).
- ``VERIFIER_CHECKS``, ``verifier_schema``, ``apply_review``: the verifier's nine checks and
  the rule, applied in code, that turns its answers into kept / flagged / dropped.

**Grounding is an exact substring match, whitespace aside.** Both the span and every source are
compared after collapsing each run of whitespace to one space and trimming the ends; nothing else
is normalised (case, punctuation and quote characters must match). Task texts wrap lines and
models re-wrap them, so whitespace is not evidence of paraphrase; any other difference is. A span
must match inside *one* source (a scenario field or the contract), never across two, and must be
at least ``MIN_SPAN_CHARS`` characters so that a single common word cannot ground anything.

**Hand-written criteria** (JSONL, one per line) go through the same checks; errors name
``file:line`` and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from uxlocal.errors import InputError, format_validation_error
from uxlocal.tau2 import Task

from .taxonomy import FAMILIES, MODES_BY_FAMILY, family_mode_problem

MIN_CRITERIA = 4
MAX_CRITERIA = 8
"""The paper keeps 4-8 atomic criteria per task (§A.4)."""
MIN_SPAN_CHARS = 12
"""Shortest grounding span (characters after whitespace collapsing) that can ground a criterion."""
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$"
TEXT_MAX = 400
SPAN_MAX = 300
NOTE_MAX = 240
ALWAYS = "always"
"""``applies_when`` of an unconditional criterion."""

Status = Literal["kept", "flagged", "dropped"]
"""kept: passed every check; flagged: graded, but a soft verifier check failed; dropped: not graded."""
GRADED_STATUSES: tuple[str, ...] = ("kept", "flagged")


# --- the blueprint ---------------------------------------------------------------------------

_STRUCTURED_FIELDS = ("reason_for_call", "known_info", "unknown_info", "task_instructions")
CONTRACT = "contract"
"""Source name of the simulator guidelines in ``Blueprint.sources``."""


@dataclass(frozen=True)
class Blueprint:
    """A task's private user blueprint plus the contract the proxy saw, verbatim.

    ``sections`` are (field, text) pairs in tau2's field order; a field that is empty or the
    retail placeholder ``.`` is left out (it carries nothing to ground on).
    """

    domain: str
    task_id: str
    sections: tuple[tuple[str, str], ...]
    contract: str = ""
    user_tools: tuple[dict[str, Any], ...] = ()
    """OpenAI-style function schemas of the tools the user may call (empty for retail/airline)."""

    @classmethod
    def from_task(
        cls, task: Task, *, domain: str, contract: str = "", user_tools: Sequence[dict[str, Any]] = ()
    ) -> Blueprint:
        """Build from a tau2 task; ``contract`` is the guidelines text the proxy was given."""
        scenario = task.user_scenario
        sections: list[tuple[str, str]] = []
        if scenario.persona and scenario.persona.strip():
            sections.append(("persona", scenario.persona.strip()))
        instructions = scenario.instructions
        if isinstance(instructions, str):
            if instructions.strip():
                sections.append(("instructions", instructions.strip()))
        else:
            for name in _STRUCTURED_FIELDS:
                value = getattr(instructions, name)
                if value is not None and value.strip() not in ("", "."):
                    sections.append((name, value.strip()))
        return cls(
            domain=domain,
            task_id=task.id,
            sections=tuple(sections),
            contract=contract.strip(),
            user_tools=tuple(user_tools),
        )

    def field(self, name: str) -> str | None:
        """Return the verbatim text of one section, or None."""
        return next((text for key, text in self.sections if key == name), None)

    def sources(self) -> dict[str, str]:
        """Every text a grounding span may quote: ``blueprint.<field>`` and ``contract``."""
        found = {f"blueprint.{key}": text for key, text in self.sections}
        if self.contract:
            found[CONTRACT] = self.contract
        return found

    def scenario_text(self) -> str:
        """Render the blueprint as labelled sections, each field's text verbatim (for prompts)."""
        return "\n\n".join(f"[{key}]\n{text}" for key, text in self.sections) or "(empty scenario)"

    def tools_text(self) -> str:
        """Render the user's tool surface, one JSON function description per line, or a note."""
        if not self.user_tools:
            return "(the user has no tools in this domain)"
        return "\n".join(
            json.dumps(t.get("function", t), ensure_ascii=False, sort_keys=True) for t in self.user_tools
        )

    def sha256(self) -> str:
        """Fingerprint of everything criteria are written from; stored criteria carry it."""
        payload = {
            "domain": self.domain,
            "task_id": self.task_id,
            "sections": self.sections,
            "contract": self.contract,
            "user_tools": self.user_tools,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def tau2_guidelines(data_dir: str | Path, *, user_tools: bool) -> str:
    """tau2's own simulator guidelines from the data dir (the contract tau2's simulator sees).

    Use it for trajectories that came from tau2 itself when their results file does not carry
    ``info.user_info.global_simulation_guidelines``; our own runs' contract is the user seat's
    guidelines text instead.
    """
    from uxlocal.tau2 import tau2_root

    name = "simulation_guidelines_tools.md" if user_tools else "simulation_guidelines.md"
    path = tau2_root(data_dir) / "user_simulator" / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("simulator guidelines not found", path=path) from None


# --- grounding and wording checks ----------------------------------------------------------------


def collapse_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and trim: the only normalisation we apply."""
    return " ".join(text.split())


def grounding_source(span: str, sources: Mapping[str, str]) -> str | None:
    """Name of the first source holding ``span`` exactly (whitespace aside), or None."""
    needle = collapse_ws(span)
    if len(needle) < MIN_SPAN_CHARS:
        return None
    for name, text in sources.items():
        if needle in collapse_ws(text):
            return name
    return None


def grounding_problem(span: str, sources: Mapping[str, str]) -> str | None:
    """Why ``span`` does not ground a criterion, or None when it does."""
    needle = collapse_ws(span)
    if len(needle) < MIN_SPAN_CHARS:
        return f"grounding_span is shorter than {MIN_SPAN_CHARS} characters"
    if grounding_source(span, sources) is None:
        return "grounding_span is not an exact substring of the blueprint or the contract"
    return None


_USER_WORDS = re.compile(r"\b(user|customer|caller|simulat(?:or|ed user)|proxy)\b", re.I)
_AGENT_DUTY = re.compile(
    r"\b(?:the\s+)?(?:agent|assistant|representative)\s+"
    r"(?:must|should|shall|needs? to|has to|is required to|is expected to|correctly|properly|successfully)\b",
    re.I,
)
_OUTCOME_WORDS = re.compile(r"\b(reward|database|db state|db hash|task success|pass rate)\b", re.I)


def user_only_problem(text: str) -> str | None:
    """Why a criterion's text is not about the user alone, or None.

    A cheap wording screen, not a judgement (the verifier's ``user_attribution`` and ``scope``
    checks are): the text must name the user, must not put a duty on the agent, and must not be
    about the task outcome (the tau2 reward already measures that).
    """
    if not _USER_WORDS.search(text):
        return "text does not name the user (say 'the user ...')"
    duty = _AGENT_DUTY.search(text)
    if duty:
        return f"text puts a requirement on the agent ({duty.group(0)!r})"
    outcome = _OUTCOME_WORDS.search(text)
    if outcome:
        return f"text is about the task outcome ({outcome.group(0)!r}), not the user's conduct"
    return None


# --- the criterion model and the writer's schema -----------------------------------------------


class Criterion(BaseModel):
    """One atomic, falsifiable statement about the user's conduct, grounded in a quoted span."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion_id: str = Field(pattern=ID_PATTERN)
    """Unique within its task (``c1`` ... ``c8`` from the writer)."""
    family: str
    mode: str
    text: str = Field(min_length=10, max_length=TEXT_MAX)
    """What a passing user does (or never does), in one or two sentences."""
    grounding_span: str = Field(min_length=1, max_length=SPAN_MAX)
    """Quoted verbatim from the blueprint or the contract."""
    applies_when: str = Field(default=ALWAYS, min_length=1, max_length=NOTE_MAX)
    """``always``, or the situation in which the criterion can be judged at all."""
    evidence_hint: str = Field(default="", max_length=NOTE_MAX)
    """Where in a trajectory to look (which turns, which tool calls)."""

    def is_conditional(self) -> bool:
        """Whether the criterion applies only in some situations."""
        return self.applies_when.strip().lower() != ALWAYS


def _criterion_branch(family: str) -> dict[str, Any]:
    string = {"type": "string"}
    return {
        "type": "object",
        # the span comes before the text: quote the source first, then state the criterion
        "properties": {
            "criterion_id": {"type": "string", "pattern": ID_PATTERN},
            "family": {"const": family},
            "mode": {"type": "string", "enum": list(MODES_BY_FAMILY[family])},
            "grounding_span": {**string, "minLength": MIN_SPAN_CHARS, "maxLength": SPAN_MAX},
            "text": {**string, "minLength": 10, "maxLength": TEXT_MAX},
            "applies_when": {**string, "minLength": 1, "maxLength": NOTE_MAX},
            "evidence_hint": {**string, "maxLength": NOTE_MAX},
        },
        "required": [
            "criterion_id",
            "family",
            "mode",
            "grounding_span",
            "text",
            "applies_when",
            "evidence_hint",
        ],
        "additionalProperties": False,
    }


def writer_schema(min_items: int = MIN_CRITERIA, max_items: int = MAX_CRITERIA) -> dict[str, Any]:
    """JSON schema of the writer's answer: ``{"criteria": [4..8 criteria]}``.

    Each item is a union over the four families, so the grammar itself pairs a family only with
    its own modes.
    """
    return {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "minItems": min_items,
                "maxItems": max_items,
                "items": {"anyOf": [_criterion_branch(f) for f in FAMILIES]},
            }
        },
        "required": ["criteria"],
        "additionalProperties": False,
    }


# --- screening in code -------------------------------------------------------------------------


@dataclass(frozen=True)
class Screened:
    """A criterion with its verdict so far: status, the reasons behind it, where it is grounded."""

    criterion: Criterion
    status: Status = "kept"
    reasons: tuple[str, ...] = ()
    grounded_in: str | None = None
    checks: dict[str, bool] = field(default_factory=dict)
    """The verifier's answer per check (empty until reviewed)."""

    def drop(self, reason: str) -> Screened:
        """Return this criterion dropped, with ``reason`` added."""
        return replace(self, status="dropped", reasons=(*self.reasons, reason))

    def flag(self, reason: str) -> Screened:
        """Return this criterion flagged (unless already dropped), with ``reason`` added."""
        status: Status = "dropped" if self.status == "dropped" else "flagged"
        return replace(self, status=status, reasons=(*self.reasons, reason))


def criterion_problems(criterion: Criterion, blueprint: Blueprint) -> list[str]:
    """Every code-checkable problem of one criterion (empty = passes the screen)."""
    problems = []
    taxonomy = family_mode_problem(criterion.family, criterion.mode)
    if taxonomy:
        problems.append(taxonomy)
    grounding = grounding_problem(criterion.grounding_span, blueprint.sources())
    if grounding:
        problems.append(grounding)
    wording = user_only_problem(criterion.text)
    if wording:
        problems.append(wording)
    return problems


def screen(criteria: Iterable[Criterion], blueprint: Blueprint) -> list[Screened]:
    """Run the code checks on a task's criteria; a failing criterion is dropped, with reasons.

    A repeated ``criterion_id`` or a repeated text (whitespace and case aside) drops the later
    criterion, so the first statement of a rule is the one kept.
    """
    seen_ids: set[str] = set()
    seen_texts: set[str] = set()
    out = []
    for criterion in criteria:
        item = Screened(
            criterion, grounded_in=grounding_source(criterion.grounding_span, blueprint.sources())
        )
        for problem in criterion_problems(criterion, blueprint):
            item = item.drop(problem)
        text_key = collapse_ws(criterion.text).lower()
        if criterion.criterion_id in seen_ids:
            item = item.drop(f"duplicate criterion_id {criterion.criterion_id!r}")
        elif text_key in seen_texts:
            item = item.drop("duplicate text")
        seen_ids.add(criterion.criterion_id)
        seen_texts.add(text_key)
        out.append(item)
    return out


def parse_writer_output(value: Any) -> tuple[list[Criterion], list[str]]:
    """Read a writer answer (parsed JSON) into criteria; items that do not validate are reported."""
    items = value.get("criteria") if isinstance(value, dict) else None
    if not isinstance(items, list):
        return [], ["the answer has no 'criteria' list"]
    criteria, problems = [], []
    for k, item in enumerate(items):
        try:
            criteria.append(Criterion.model_validate(item))
        except ValidationError as err:
            problems.append(f"criteria[{k}]: {format_validation_error(err)}")
    return criteria, problems


# --- the verifier's nine checks ------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One verifier check: its key in the answer, what failing it does, and the question asked."""

    name: str
    on_fail: Literal["drop", "flag"]
    question: str


VERIFIER_CHECKS: tuple[Check, ...] = (
    # the seven checks the paper names (§A.4 step 3)
    Check("grounding", "drop", "Does the quoted span really say what the criterion requires?"),
    Check("falsifiability", "drop", "Could a reader of one conversation decide pass or fail?"),
    Check("scope", "drop", "Does it stay within this task's scenario and the guidelines?"),
    Check("user_attribution", "drop", "Is it about what the user says or does, and nothing else?"),
    Check("achievability", "drop", "Can a faithful user always satisfy it, whatever the agent does?"),
    Check("taxonomy_fit", "drop", "Do its family and mode describe the failure it checks?"),
    Check("redundancy", "flag", "Is it free of overlap with another criterion of this task?"),
    # two of our own, as the spec proposes (§A.9 step 4); the paper's other two are not named
    Check("agent_independence", "flag", "Is it free of any dependence on the agent being right?"),
    Check("not_reward_duplicate", "flag", "Does it check something the task reward does not?"),
)
"""Failing a ``drop`` check removes the criterion; failing only ``flag`` checks keeps it, flagged."""


def verifier_schema(criterion_ids: Sequence[str]) -> dict[str, Any]:
    """JSON schema of the verifier's answer: one review per criterion, every check a boolean."""
    checks = {c.name: {"type": "boolean"} for c in VERIFIER_CHECKS}
    review = {
        "type": "object",
        "properties": {
            "criterion_id": {"type": "string", "enum": list(criterion_ids)},
            "note": {"type": "string", "maxLength": NOTE_MAX},
            **checks,
        },
        "required": ["criterion_id", "note", *checks],
        "additionalProperties": False,
    }
    count = len(criterion_ids)
    return {
        "type": "object",
        "properties": {"reviews": {"type": "array", "minItems": count, "maxItems": count, "items": review}},
        "required": ["reviews"],
        "additionalProperties": False,
    }


def apply_review(screened: Sequence[Screened], review: Any) -> list[Screened]:
    """Apply the verifier's answer: failed drop-checks drop, failed flag-checks flag.

    Criteria already dropped by the code screen keep their status (the verifier never revives
    one). A criterion the answer leaves out is flagged ``not reviewed``, not dropped: the code
    checks did pass.
    """
    by_id: dict[str, dict[str, Any]] = {}
    for item in (review or {}).get("reviews", []) if isinstance(review, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("criterion_id"), str):
            by_id.setdefault(item["criterion_id"], item)
    out = []
    for entry in screened:
        if entry.status == "dropped":
            out.append(entry)
            continue
        answer = by_id.get(entry.criterion.criterion_id)
        if answer is None:
            out.append(entry.flag("not reviewed by the verifier"))
            continue
        checks = {c.name: bool(answer.get(c.name, False)) for c in VERIFIER_CHECKS}
        entry = replace(entry, checks=checks)
        note = str(answer.get("note") or "").strip()
        for check in VERIFIER_CHECKS:
            if not checks[check.name]:
                reason = f"verifier: failed {check.name}" + (f" ({note})" if note else "")
                entry = entry.drop(reason) if check.on_fail == "drop" else entry.flag(reason)
        out.append(entry)
    return out


# --- hand-written criteria files (JSONL) ---------------------------------------------------------


class FileCriterion(Criterion):
    """One line of a criteria file: a criterion plus the task it belongs to."""

    domain: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    status: Status = "kept"
    """Exports carry the stored status; hand-written lines leave it out (kept)."""
    grounded_in: str | None = None
    reasons: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class FileRow:
    """A criterion read from a file, with the line it came from (for error messages)."""

    path: Path
    line: int
    criterion: FileCriterion


def read_criteria_jsonl(path: str | Path) -> list[FileRow]:
    """Read a criteria file; the first bad line raises ``InputError`` naming ``file:line: field``.

    Blank lines are skipped. Family and mode must be in the taxonomy, and a (domain, task_id,
    criterion_id) may appear once.
    """
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError("file not found", path=source) from None
    rows: list[FileRow] = []
    seen: dict[tuple[str, str, str], int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        criterion = _parse_line(source, number, line)
        problem = family_mode_problem(criterion.family, criterion.mode)
        if problem:
            where = "family" if criterion.family not in MODES_BY_FAMILY else "mode"
            raise InputError(f"{where}: {problem}", path=source, line=number)
        key = (criterion.domain, criterion.task_id, criterion.criterion_id)
        if key in seen:
            raise InputError(f"criterion_id: {criterion.criterion_id!r} of task "
                f"{criterion.domain}/{criterion.task_id} already appears on line {seen[key]}",
                             path=source, line=number)
        seen[key] = number
        rows.append(FileRow(source, number, criterion))
    return rows


def _parse_line(source: Path, number: int, line: str) -> FileCriterion:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(
            f"not valid JSON: {err.msg} (column {err.colno})", path=source, line=number
        ) from None
    if not isinstance(raw, dict):
        raise InputError(f"expected a JSON object, got {type(raw).__name__}", path=source, line=number)
    try:
        return FileCriterion.model_validate(raw)
    except ValidationError as err:
        raise InputError(format_validation_error(err), path=source, line=number) from None


def write_criteria_jsonl(path: str | Path, rows: Iterable[FileCriterion]) -> Path:
    """Write criteria as JSONL (sorted keys, one per line) in the order given."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(
        json.dumps(r.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n" for r in rows
    )
    target.write_text(text, encoding="utf-8")
    return target


def screen_file_rows(
    rows: Sequence[FileRow], blueprints: Mapping[tuple[str, str], Blueprint], *, strict: bool = True
) -> dict[tuple[str, str], list[Screened]]:
    """Run the code checks on hand-written criteria, grouped by (domain, task_id).

    ``strict`` turns the first problem into an ``InputError`` at its ``file:line``; otherwise the
    failing criterion is dropped with its reasons. A criterion for a task not in ``blueprints``
    is always an error: it could never be graded.
    """
    grouped: dict[tuple[str, str], list[Screened]] = {}
    for row in rows:
        c = row.criterion
        key = (c.domain, c.task_id)
        if key not in blueprints:
            raise InputError(f"task_id: no task {c.domain}/{c.task_id} among the tasks loaded",
                             path=row.path, line=row.line)
        blueprint = blueprints[key]
        base = Criterion.model_validate(c.model_dump(include=set(Criterion.model_fields)))
        problems = criterion_problems(base, blueprint)
        if problems and strict:
            field_name = "grounding_span" if "grounding_span" in problems[0] else "text"
            raise InputError(f"{field_name}: {problems[0]}", path=row.path, line=row.line)
        item = Screened(base, grounded_in=grounding_source(base.grounding_span, blueprint.sources()))
        for problem in problems:
            item = item.drop(problem)
        if c.status == "flagged" and item.status == "kept":
            item = item.flag("flagged in the file")
        elif c.status == "dropped":
            item = item.drop("dropped in the file")
        grouped.setdefault(key, []).append(item)
    return grouped
