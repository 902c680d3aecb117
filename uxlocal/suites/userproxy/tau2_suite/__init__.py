"""tau2 runs with local models: the agent, user-proxy and judge seats, the orchestrator, the suite.

The model-free core (tasks, environments, reward, results.json) is ``..tau2``; this package adds
what talks to models, as episode programs for the scheduler. See README.md for the map.
"""

from .actions import TurnAction, TurnFormatError, parse_turn, turn_constraint, turn_schema
from .agent import AGENT_ROLE, GREETING, AgentSeat
from .judge import JUDGE_ROLE, JudgeSeat
from .orchestrator import EpisodeSetup, Limits, tau2_episode
from .user_proxy import USER_ROLE, UserSeat

__all__ = [
    "AGENT_ROLE",
    "GREETING",
    "JUDGE_ROLE",
    "USER_ROLE",
    "AgentSeat",
    "EpisodeSetup",
    "JudgeSeat",
    "Limits",
    "TurnAction",
    "TurnFormatError",
    "UserSeat",
    "parse_turn",
    "tau2_episode",
    "turn_constraint",
    "turn_schema",
]
