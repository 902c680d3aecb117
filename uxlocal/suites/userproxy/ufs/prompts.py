"""Prompts of the three UFS model calls (writer, verifier, grader), their constraints and parsers.

The prompt texts are files in ``prompts/`` (ours; ``$name`` slots filled with
``string.Template``, which leaves ``$`` and braces inside filled values alone). Each call has a
system file and a task file; ``prompt_hashes`` hashes both, so a changed prompt changes the
identity of the criteria or verdicts it produced.

Builders are pure: they take a ``Blueprint``, criteria and a list of tau2 ``Message``s and
return chat messages, a constraint or a ``GenRequest``; parsers read a ``GenResult`` (or a parsed
value) and never raise on bad model output, they report it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.grammar import JsonSchema
from uxlocal.tau2 import Message

from .criteria import (
    MAX_CRITERIA,
    MIN_CRITERIA,
    VERIFIER_CHECKS,
    Blueprint,
    Criterion,
    verifier_schema,
    writer_schema,
)
from .render import LEGEND, render_trajectory
from .taxonomy import taxonomy_table

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
CALLS: dict[str, tuple[str, str]] = {
    "writer": ("writer.md", "writer_task.md"),
    "verifier": ("verifier.md", "verifier_task.md"),
    "grader": ("grader.md", "grader_task.md"),
}
Chat = list[dict[str, str]]


@cache
def _text(name: str) -> str:
    return (PROMPTS_DIR / name).read_text(encoding="utf-8").strip()


def _fill(name: str, **values: str) -> str:
    return Template(_text(name)).safe_substitute(values)


def prompt_sha256(call: str) -> str:
    """sha256 over both files of one call (``writer``, ``verifier`` or ``grader``)."""
    digest = hashlib.sha256()
    for name in CALLS[call]:
        digest.update(name.encode() + b"\0" + (PROMPTS_DIR / name).read_bytes() + b"\0")
    return digest.hexdigest()


def prompt_hashes() -> dict[str, str]:
    """Hashes of every UFS prompt, keyed ``ufs/<call>`` (for run identities)."""
    return {f"ufs/{call}": prompt_sha256(call) for call in CALLS}


# --- writer ---------------------------------------------------------------------------------------

SAMPLE_NOTE = (
    "One earlier conversation for this task, played by some agent and some user. It is NOT an "
    "oracle: it only shows which situations can come up. The blueprint and the contract alone "
    "say what a faithful user does; do not copy this user's behaviour into the criteria."
)


def writer_messages(
    blueprint: Blueprint, sample: Sequence[Message] | None = None, *, max_tool_chars: int | None = 1500
) -> Chat:
    """Build the writer's chat; ``sample`` is an optional example trajectory, labelled as not an oracle."""
    system = _fill(
        "writer.md", min_items=str(MIN_CRITERIA), max_items=str(MAX_CRITERIA), taxonomy=taxonomy_table()
    )
    sample_block = ""
    if sample:
        sample_block = (
            f"\n<sample_conversation>\n{SAMPLE_NOTE}\n\n"
            f"{render_trajectory(sample, max_tool_chars=max_tool_chars)}\n</sample_conversation>"
        )
    task = _fill(
        "writer_task.md",
        domain=blueprint.domain,
        task_id=blueprint.task_id,
        scenario=blueprint.scenario_text(),
        contract=blueprint.contract or "(none given)",
        tools=blueprint.tools_text(),
        sample=sample_block,
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": task}]


def writer_constraint() -> JsonSchema:
    """4-8 criteria, each family paired only with its own modes."""
    return JsonSchema(schema=writer_schema())


# --- verifier -------------------------------------------------------------------------------------


def verifier_messages(blueprint: Blueprint, criteria: Sequence[Criterion]) -> Chat:
    """Build the verifier's chat: the same sources as the writer, and the criteria to review."""
    checks = "\n".join(f"- {c.name}: {c.question}" for c in VERIFIER_CHECKS)
    system = _fill("verifier.md", checks=checks)
    listed = "\n".join(json.dumps(c.model_dump(), ensure_ascii=False) for c in criteria)
    task = _fill(
        "verifier_task.md",
        domain=blueprint.domain,
        task_id=blueprint.task_id,
        scenario=blueprint.scenario_text(),
        contract=blueprint.contract or "(none given)",
        tools=blueprint.tools_text(),
        criteria=listed,
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": task}]


def verifier_constraint(criteria: Sequence[Criterion]) -> JsonSchema:
    """One review per criterion id, every check a boolean."""
    return JsonSchema(schema=verifier_schema([c.criterion_id for c in criteria]))


# --- grader ---------------------------------------------------------------------------------------

EVIDENCE_MAX = 16


def grade_schema(max_tokens: int, *, conditional: bool = True) -> dict[str, Any]:
    """JSON schema of one grade; the rationale is capped so the object closes within ``max_tokens``.

    The rationale and the evidence come before the booleans so the judge reasons before it
    decides (the issue lists the keys; their order here is our choice). An unconditional
    criterion (``applies_when`` = ``always``) applies to every episode by definition, so its
    ``applicable`` is the constant ``true``: a judge cannot make an episode unscorable by
    declaring such a criterion out of scope.
    """
    cap = max(64, (max_tokens - 48) * 2)
    return {
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "maxLength": cap},
            "evidence_turns": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0},
                "maxItems": EVIDENCE_MAX,
            },
            "applicable": {"type": "boolean"} if conditional else {"const": True},
            "passed": {"type": "boolean"},
        },
        "required": ["rationale", "evidence_turns", "applicable", "passed"],
        "additionalProperties": False,
    }


def grader_messages(
    blueprint: Blueprint,
    criterion: Criterion,
    trajectory: Sequence[Message],
    *,
    max_tool_chars: int | None = None,
) -> Chat:
    """Build the grader's chat for one (episode, criterion); the proxy's identity appears nowhere.

    Layout for the prefix cache: the system text, the scenario and the whole conversation come
    first and are the same for every criterion of the episode; the criterion comes last, so
    the K grading calls of one trajectory (sent together by ``grading_program``) share their
    longest part and the engine computes it once.
    """
    task = _fill(
        "grader_task.md",
        domain=blueprint.domain,
        scenario=blueprint.scenario_text(),
        criterion_id=criterion.criterion_id,
        family=criterion.family,
        mode=criterion.mode,
        text=criterion.text,
        applies_when=criterion.applies_when,
        grounding_span=criterion.grounding_span,
        evidence_hint=criterion.evidence_hint or "anywhere",
        legend=LEGEND,
        conversation=render_trajectory(trajectory, max_tool_chars=max_tool_chars),
    )
    return [{"role": "system", "content": _text("grader.md")}, {"role": "user", "content": task}]


def grader_request(
    role: str,
    sampling: Sampling,
    blueprint: Blueprint,
    criterion: Criterion,
    trajectory: Sequence[Message],
    *,
    max_tool_chars: int | None = None,
) -> GenRequest:
    """One grading request, tagged ``ufs:<criterion_id>`` (the verdict name it will get)."""
    chat = grader_messages(blueprint, criterion, trajectory, max_tool_chars=max_tool_chars)
    return GenRequest(
        role,
        tuple(chat),
        sampling,
        JsonSchema(schema=grade_schema(sampling.max_tokens, conditional=criterion.is_conditional())),
        tag=f"ufs:{criterion.criterion_id}",
    )


@dataclass(frozen=True)
class Grade:
    """A read grade; ``valid`` is False when the judge's output could not be used."""

    applicable: bool | None
    passed: bool | None
    rationale: str = ""
    evidence_turns: tuple[int, ...] = ()
    valid: bool = True
    problem: str | None = None

    @property
    def label(self) -> str:
        """``pass`` | ``fail`` | ``not_applicable`` | ``invalid`` (the verdict row's label)."""
        if not self.valid:
            return "invalid"
        if not self.applicable:
            return "not_applicable"
        return "pass" if self.passed else "fail"

    @property
    def score(self) -> float | None:
        """1.0 pass, 0.0 fail, None when not applicable or invalid."""
        return {"pass": 1.0, "fail": 0.0}.get(self.label)


def read_grade(value: Any, *, n_turns: int | None = None) -> Grade:
    """Read a parsed grade; turn numbers outside the trajectory are dropped (and noted)."""
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("applicable"), bool)
        or not isinstance(value.get("passed"), bool)
    ):
        return Grade(None, None, valid=False, problem="the grade has no boolean 'applicable' and 'passed'")
    turns = [t for t in value.get("evidence_turns") or [] if isinstance(t, int) and not isinstance(t, bool)]
    kept = tuple(sorted({t for t in turns if t >= 0 and (n_turns is None or t < n_turns)}))
    problem = None if len(kept) == len(set(turns)) else "some evidence turns are outside the conversation"
    return Grade(value["applicable"], value["passed"], str(value.get("rationale") or ""), kept, True, problem)


def parse_grade(result: GenResult, *, n_turns: int | None = None) -> Grade:
    """Read a grader ``GenResult``; truncated, invalid or overlong prompts give an invalid grade."""
    if result.finish_reason == "context_window":
        return Grade(None, None, valid=False, problem="the conversation does not fit the judge's window")
    if not result.valid:
        return Grade(None, None, valid=False, problem=result.error or "invalid output")
    return read_grade(result.parsed, n_turns=n_turns)
