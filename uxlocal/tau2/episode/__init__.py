"""tau2 episodes with local models: agent, user-proxy and judge seats, the orchestrator, shared options.

The model-free core (tasks, environments, reward, results.json) is ``uxlocal.tau2``; this package adds
what talks to models, as episode programs for the scheduler (it yields requests; it never runs an
engine, a scheduler or the store). See ../README.md for the map.
"""

from .actions import TurnAction, TurnFormatError, parse_turn, turn_constraint, turn_schema
from .agent import AGENT_ROLE, GREETING, AgentSeat
from .judge import JUDGE_ROLE, JudgeSeat
from .options import (
    NOT_COMPARABLE,
    DomainSeats,
    Tau2Options,
    domain_seats,
    parse_domains,
    protocol_hashes,
    upstream_seats,
    user_tool_schemas,
)
from .orchestrator import EpisodeSetup, tau2_episode, tau2_trajectory
from .state import Limits
from .user_proxy import USER_ROLE, UserSeat

__all__ = [
    "AGENT_ROLE",
    "GREETING",
    "JUDGE_ROLE",
    "NOT_COMPARABLE",
    "USER_ROLE",
    "AgentSeat",
    "DomainSeats",
    "EpisodeSetup",
    "JudgeSeat",
    "Limits",
    "Tau2Options",
    "TurnAction",
    "TurnFormatError",
    "UserSeat",
    "domain_seats",
    "parse_domains",
    "parse_turn",
    "protocol_hashes",
    "tau2_episode",
    "tau2_trajectory",
    "turn_constraint",
    "turn_schema",
    "upstream_seats",
    "user_tool_schemas",
]
