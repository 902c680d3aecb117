"""The setup of every episode of one domain, in either protocol, and the program that plays one.

``uxlocal run tau2`` and ``uxlocal run userproxy`` seat the same agent and judge and build the
same user seat; they differ only in who plays the user (its role and sampling) and, for
UserProxyBench, a sampled agent's seed. ``DomainSetups`` builds the shared seats once per domain
in the protocol the domain's words select (upstream with a checkout's words, ours without) and
hands out one setup per (task, user, trial); ``play_trajectory`` runs a setup in its protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from uxlocal.engine.base import Sampling
from uxlocal.episode import EpisodeContext
from uxlocal.tau2 import Domain, Task

from ..upstream_words import Tau2Words
from .options import Tau2Options, domain_seats, upstream_seats, user_tool_schemas
from .orchestrator import EpisodeSetup, tau2_trajectory
from .state import Gen
from .upstream import UpstreamSetup, upstream_trajectory
from .user_proxy import USER_ROLE, UserSeat

Setup = EpisodeSetup | UpstreamSetup
"""One episode's setup: ours (``EpisodeSetup``) or upstream's (``UpstreamSetup``)."""


class DomainSetups:
    """Episode setups of one domain; the seats every episode shares are built once, here."""

    def __init__(self, options: Tau2Options, domain: Domain, words: Tau2Words | None, *,
                 judge_always: bool = False) -> None:
        """Seat the domain in the upstream protocol when ``words`` are given, else in ours."""
        self.options = options
        self.domain = domain
        self.judge_always = judge_always
        self.upstream = upstream_seats(domain, words, options) if words is not None else None
        self.ours = domain_seats(domain, options) if words is None else None

    def per_trial(self, task: Task, user_sampling: Sampling, user_role: str = USER_ROLE,
                  agent_seed: Callable[[int], int] | None = None) -> Callable[[int], Setup]:
        """Return trial -> setup for one task and one user seat (built once for all trials).

        ``agent_seed(trial)`` seeds a sampled agent in our protocol (upstream's seeds are the trial's).
        """
        domain, upstream = self.domain, self.upstream
        if upstream is not None:
            return lambda trial: UpstreamSetup(domain, task, trial, upstream, user_role=user_role,
                                               user_temperature=user_sampling.temperature)
        seats = self.ours
        assert seats is not None
        user = UserSeat.build(task, tool_schemas=user_tool_schemas(domain, task), sampling=user_sampling,
                              grammar=self.options.tool_grammar, role=user_role)

        def setup(trial: int) -> Setup:
            agent = seats.agent
            if agent_seed is not None and agent.sampling.temperature > 0:
                agent = replace(agent, sampling=replace(agent.sampling, seed=agent_seed(trial)))
            return EpisodeSetup(domain, task, trial, agent, user, seats.judge, seats.limits,
                                judge_always=self.judge_always)
        return setup


def play_trajectory(ctx: EpisodeContext, setup: Setup) -> Gen:
    """Run one episode in its setup's protocol; returns (``Outcome``, the trajectory's messages)."""
    if isinstance(setup, UpstreamSetup):
        return (yield from upstream_trajectory(ctx, setup))
    return (yield from tau2_trajectory(ctx, setup))


def task_item(domain: Domain, task: Task, position: int, source: Path) -> dict[str, Any]:
    """Return the plan's ``items`` row of one task: id ``<domain>/<task id>``, the whole task as data."""
    data = {"domain": domain.name, "position": position, "task": task.model_dump(mode="json")}
    return {"item_id": f"{domain.name}/{task.id}", "task": domain.name, "data": data,
            "source_file": str(source)}
