"""The UFS violation taxonomy: 4 families, 19 modes (spec userproxybench.md §A.5).

The paper names its four families and about twelve of its nineteen modes; it does not list the
rest. We keep the paper's mode identifiers where it gives them (``volunteers_unasked_info``,
``preempts_diagnosis``, ``dumps_blueprint``, ``self_contradiction``), give the other named modes
short snake-case identifiers of our own, and fill the remaining seven with the spec's proposals
(marked ``source="proposal"``). "Accepting forbidden or insufficient outcomes" is one mode here,
which is what makes the count come out at 12 named + 7 proposed = 19.

A criterion names one family and one mode of that family; ``validate_family_mode`` is the check
the criteria pipeline runs in code, and ``mode_schema`` is the same rule as a JSON schema for the
writer's grammar.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal["premature_disclosure", "groundedness", "goal_deviation", "missed_information"]
FAMILIES: tuple[Family, ...] = (
    "premature_disclosure",
    "groundedness",
    "goal_deviation",
    "missed_information",
)
"""In the order the paper discusses them (premature disclosure is the most frequent failure)."""


@dataclass(frozen=True)
class Mode:
    """One failure mode: what a criterion of this mode checks, in one line."""

    family: Family
    name: str
    description: str
    source: Literal["paper", "proposal"] = "paper"

    @property
    def key(self) -> str:
        """``family.mode``, the unique spelling used in tables."""
        return f"{self.family}.{self.name}"


MODES: tuple[Mode, ...] = (
    # premature disclosure: information given before the agent asks for it
    Mode(
        "premature_disclosure",
        "volunteers_unasked_info",
        "gives identity details, ids or constraints the agent has not asked for yet",
    ),
    Mode(
        "premature_disclosure",
        "preempts_diagnosis",
        "offers its own diagnosis or the solution before the agent investigates",
    ),
    Mode("premature_disclosure", "dumps_blueprint", "lays out most of its private scenario in one message"),
    Mode(
        "premature_disclosure",
        "reveals_unknown_info_awareness",
        "mentions that it lacks a fact in a way that steers the agent, before being asked",
        "proposal",
    ),
    # groundedness: claims the blueprint and tool results do not support
    Mode(
        "groundedness",
        "unsupported_state_claim",
        "asserts a personal, account or device state that nothing in the scenario supports",
    ),
    Mode(
        "groundedness",
        "unexecuted_action_claim",
        "says it did something (on its device or account) without the matching tool call",
    ),
    Mode("groundedness", "self_contradiction", "contradicts something it said earlier in the conversation"),
    Mode("groundedness", "invents_unknown_info", "supplies a value the scenario says it does not know"),
    Mode(
        "groundedness",
        "fabricated_tool_result",
        "reports a tool result that no tool call returned",
        "proposal",
    ),
    Mode(
        "groundedness", "persona_drift", "stops behaving like the persona the scenario describes", "proposal"
    ),
    # goal deviation: the user ends early, settles for less, or gives up
    Mode(
        "goal_deviation",
        "premature_stop",
        "ends the conversation before its goal is met or the scenario says to stop",
    ),
    Mode(
        "goal_deviation",
        "accepts_unacceptable_outcome",
        "agrees to an outcome the scenario forbids or that falls short of what it requires",
    ),
    Mode(
        "goal_deviation", "abandons_goal", "drops its goal, or part of it, without a reason from the scenario"
    ),
    Mode(
        "goal_deviation",
        "accepts_policy_violation",
        "goes along with an agent action the scenario tells it to refuse",
        "proposal",
    ),
    Mode(
        "goal_deviation",
        "restarts_after_resolution",
        "reopens or adds requests after its goal was met",
        "proposal",
    ),
    # missed information: the user fails to give or do what is asked of it
    Mode(
        "missed_information",
        "withholds_requested_info",
        "does not give a fact it knows when the agent asks for it",
    ),
    Mode(
        "missed_information",
        "skips_requested_action",
        "does not perform a user-side action the agent asks for",
    ),
    Mode(
        "missed_information",
        "ignores_conditional_instruction",
        "does not follow an 'if the agent says X, do Y' rule of the scenario",
        "proposal",
    ),
    Mode(
        "missed_information",
        "no_stop_token",
        "keeps talking after the goal is met instead of ending the conversation",
        "proposal",
    ),
)

MODES_BY_FAMILY: dict[str, tuple[str, ...]] = {
    family: tuple(m.name for m in MODES if m.family == family) for family in FAMILIES
}
_MODE_INDEX: dict[tuple[str, str], Mode] = {(m.family, m.name): m for m in MODES}

TAU2_REVIEW_TAG_FAMILY: dict[str, str | None] = {
    "revealed_info_early": "premature_disclosure",
    "hallucination": "groundedness",
    "inconsistent_behavior": "groundedness",
    "premature_termination": "goal_deviation",
    "missed_required_action": "missed_information",
    "guideline_violation": None,
    "incorrect_interpretation": None,
    "wrong_sequence": None,
    "other": None,
}
"""tau2's user-only review tags (spec §B.3.5) -> UFS family; ``None`` = spans several families."""


def mode(family: str, name: str) -> Mode:
    """Look up a mode; ``KeyError`` names the modes the family has."""
    try:
        return _MODE_INDEX[(family, name)]
    except KeyError:
        raise KeyError(family_mode_problem(family, name) or f"{family}.{name}") from None


def family_mode_problem(family: str, name: str) -> str | None:
    """Say what is wrong with a (family, mode) pair, or ``None`` when it is in the taxonomy."""
    if family not in MODES_BY_FAMILY:
        return f"unknown family {family!r} (families: {', '.join(FAMILIES)})"
    if name not in MODES_BY_FAMILY[family]:
        return f"mode {name!r} is not a mode of {family} (modes: {', '.join(MODES_BY_FAMILY[family])})"
    return None


def mode_schema() -> list[dict[str, object]]:
    """One JSON-schema branch per family restricting ``mode`` to that family's modes.

    Used inside the writer's ``anyOf`` so the grammar itself cannot pair a family with another
    family's mode.
    """
    return [
        {"family": {"const": family}, "mode": {"type": "string", "enum": list(MODES_BY_FAMILY[family])}}
        for family in FAMILIES
    ]


def taxonomy_table() -> str:
    """Render the taxonomy as plain text lines (``family.mode: description``), for prompts."""
    lines = []
    for family in FAMILIES:
        lines.append(f"{family}:")
        lines.extend(f"  - {m.name}: {m.description}" for m in MODES if m.family == family)
    return "\n".join(lines)
