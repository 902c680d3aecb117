"""Which scenario fields a task's graded criteria are grounded in: the criteria's coverage.

A criterion quotes one grounding span (``criteria.py``); it *grounds in* a scenario field when the
span is an exact substring of that field (whitespace aside, the same rule as the screen). A task's
fields are its blueprint's sections: ``reason_for_call``, ``known_info``, ``unknown_info``,
``task_instructions`` (and ``persona``) for structured scenarios, ``instructions`` (and
``persona``) for free-text ones; empty fields and retail's ``.`` placeholder are not fields. A field
no graded criterion grounds in is *uncovered*: nothing checks that the proxy followed it. Spans
from the contract (the guidelines) ground criteria too, but cover no scenario field.

Pure: ``uxlocal run userproxy`` stores each task's coverage in its item and notes the totals;
``uxlocal ufs criteria`` notes the coverage of what it froze.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .criteria import Blueprint, Criterion, grounding_source

SHOWN = 5
"""Uncovered fields a note names before it says ``...``."""


@dataclass(frozen=True)
class Coverage:
    """One task's scenario fields and those at least one graded criterion is grounded in."""

    domain: str
    task_id: str
    fields: tuple[str, ...]
    covered: tuple[str, ...]

    @property
    def uncovered(self) -> tuple[str, ...]:
        """Fields no graded criterion is grounded in, in the blueprint's order."""
        return tuple(name for name in self.fields if name not in self.covered)

    def fraction(self) -> str:
        """``covered/fields``, e.g. ``2/3``."""
        return f"{len(self.covered)}/{len(self.fields)}"

    def as_json(self) -> dict[str, Any]:
        """Return the item-data form: field lists (covered and uncovered) and the counts."""
        return {"fields": list(self.fields), "covered": list(self.covered), "uncovered": list(self.uncovered),
                "n_fields": len(self.fields), "n_covered": len(self.covered)}


def field_coverage(blueprint: Blueprint, criteria: Iterable[Criterion]) -> Coverage:
    """Return which of the blueprint's scenario fields the criteria's spans are grounded in."""
    spans = [c.grounding_span for c in criteria]
    covered = tuple(name for name, text in blueprint.sections
                    if any(grounding_source(span, {name: text}) for span in spans))
    fields = tuple(name for name, _ in blueprint.sections)
    return Coverage(blueprint.domain, blueprint.task_id, fields, covered)


def coverage_note(coverages: Sequence[Coverage]) -> str:
    """Sum up coverage in one line: fields covered over fields, and the first uncovered ones by task."""
    fields = sum(len(c.fields) for c in coverages)
    covered = sum(len(c.covered) for c in coverages)
    gaps = [f"{c.domain}/{c.task_id} {name}" for c in coverages for name in c.uncovered]
    head = (f"criteria coverage: {covered}/{fields} scenario fields of {len(coverages)} task(s) have a "
            "graded criterion grounded in them")
    if not gaps:
        return head
    return f"{head}; uncovered: " + ", ".join(gaps[:SHOWN]) + (" ..." if len(gaps) > SHOWN else "")
