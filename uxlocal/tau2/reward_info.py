"""The ``reward_info`` record of a simulation, shaped like tau2's so results.json files interoperate.

Field names follow spec §B.2. Every model keeps unknown keys, so a file from a newer tau2 reads
and writes back without loss.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from .tasks import Action, EnvAssertion, RewardType


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="allow")


class DBCheck(_Tolerant):
    """Whether the final agent and user DBs equal the gold ones."""

    db_match: bool
    db_reward: float


class EnvAssertionCheck(_Tolerant):
    """One env assertion evaluated on the final (predicted) environment."""

    env_assertion: EnvAssertion
    met: bool
    reward: float


class ActionCheck(_Tolerant):
    """Whether one gold action was matched by some call in the trajectory."""

    action: Action
    action_match: bool
    action_reward: float
    tool_type: str | None = None
    """``read``/``write``/``generic`` of the gold action's tool; ``None`` if the domain lacks it."""


class NLAssertionCheck(_Tolerant):
    """The judge's verdict on one natural-language assertion."""

    nl_assertion: str
    met: bool
    justification: str = ""


class CommunicateCheck(_Tolerant):
    """Whether the candidate said one required piece of information."""

    info: str
    met: bool
    justification: str = ""


class RewardInfo(_Tolerant):
    """The reward of one simulation and every check behind it."""

    reward: float
    db_check: DBCheck | None = None
    env_assertions: list[EnvAssertionCheck] | None = None
    action_checks: list[ActionCheck] | None = None
    nl_assertions: list[NLAssertionCheck] | None = None
    """``None`` when nobody judged them (they did not gate and no verdicts were given)."""
    communicate_checks: list[CommunicateCheck] | None = None
    reward_basis: list[RewardType] | None = None
    reward_breakdown: dict[str, float] | None = None
    """Each gating component's value; the reward is their product."""
    info: dict[str, Any] | None = None
    """Diagnostics; ``info["note"]`` explains a reward that was not computed from checks."""
