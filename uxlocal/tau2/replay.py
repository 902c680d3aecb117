"""Model-free replays of scripted agents through the runtime: a check of our runtime against the data.

Three scripted agents play every task of a domain, with no model:

- ``gold``: each gold action, called on the live environment by the seat its ``requestor`` names
  (so a sync follows every call), then one assistant message saying the task's
  ``communicate_info``; a correct runtime scores 1.0 on every task whose basis it can score.
- ``empty``: no turn at all; no task can be solved that way, so every reward should be 0.
- ``transfer-only``: one ``transfer_to_human_agents`` call; telecom's 20 unfixable tasks pass.

The trajectory is scored by the real reward (``score_episode``), predicted replay included. Tasks
whose reward needs an NL judge cannot be scored without a model and are counted apart, with the
result of their model-free checks (banking's task_102). A user points ``uxlocal tau2 replay`` at a
new tau2 checkout to see whether our runtime still agrees; ``tau2_version`` picks the grading
(banking differs between 8ebb749 and 1.0.1). Gold calls that fail by design (banking 051, 077,
083) are replayed as they are: their error results are part of the trajectory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .env import Environment
from .messages import Message, ToolCall
from .registry import DEFAULT_TAU2_VERSION, Domain, load_domain
from .reward import score_episode
from .tasks import Task, load_tasks
from .termination import USER_STOP

ScriptedAgent = Literal["gold", "empty", "transfer-only"]
SCRIPTED_AGENTS: tuple[ScriptedAgent, ...] = ("gold", "empty", "transfer-only")
TRANSFER_SUMMARY = "The customer's issue cannot be solved with my tools; handing over."


@dataclass(frozen=True)
class ReplayOutcome:
    """One task's score under a scripted agent."""

    task_id: str
    reward: float | None
    """``None`` when an NL judge would be needed to score it."""
    failing: tuple[str, ...] = ()
    """Basis components that scored below 1, e.g. ``("ENV_ASSERTION",)``."""
    model_free: float | None = None
    """For a task that needs a judge: the product of its model-free basis components."""


@dataclass
class ReplaySummary:
    """A domain's outcomes under one scripted agent, and how to print them."""

    domain: str
    agent: ScriptedAgent
    outcomes: list[ReplayOutcome] = field(default_factory=list)

    @property
    def passed(self) -> list[str]:
        """Ids of tasks that scored 1.0."""
        return [o.task_id for o in self.outcomes if o.reward == 1.0]

    @property
    def unscored(self) -> list[str]:
        """Ids of tasks that need a judge."""
        return [o.task_id for o in self.outcomes if o.reward is None]

    def lines(self) -> list[str]:
        """``telecom gold: 114 / 114`` then one line per task that did not score 1.0.

        A task that needs an NL judge counts on its model-free checks (a replay has no conversation
        to judge), and the head line says how many such tasks there are.
        """
        head = f"{self.domain} {self.agent}: {_count(self.outcomes)}{_judge_note(self.outcomes)}"
        rest = [
            f"  {o.task_id}: reward {o.reward} ({', '.join(o.failing) or 'no basis component failed'})"
            for o in self.outcomes
            if o.reward is not None and o.reward != 1.0
        ]
        return [head, *rest]


def _passes(outcome: ReplayOutcome) -> bool:
    """Scored 1.0, or (needing a judge) passed every model-free check."""
    return (outcome.model_free if outcome.reward is None else outcome.reward) == 1.0


def _count(outcomes: list[ReplayOutcome]) -> str:
    return f"{sum(1 for o in outcomes if _passes(o))} / {len(outcomes)}"


def _judge_note(outcomes: list[ReplayOutcome]) -> str:
    """For outcomes with judge-needing tasks: what the count covers, and the fully scored part."""
    judged = sum(1 for o in outcomes if o.reward is None)
    if not judged:
        return ""
    scored = [o for o in outcomes if o.reward is not None]
    return (f" on the model-free checks (fully scored: {_count(scored)}; {judged} more carry NL "
            "assertions a replay cannot judge)")


def scripted_trajectory(env: Environment, task: Task, agent: ScriptedAgent) -> list[Message]:
    """Play ``agent``'s turns on ``env`` (live tool path, sync after each call) and return them."""
    if agent == "empty":
        return []
    if agent == "transfer-only":
        calls = [ToolCall(id="transfer_0", name="transfer_to_human_agents",
                          arguments={"summary": TRANSFER_SUMMARY}, requestor="assistant")]  # fmt: skip
    else:
        actions = task.evaluation_criteria.actions or [] if task.evaluation_criteria else []
        calls = [
            ToolCall(id=a.action_id, name=a.name, arguments=a.arguments, requestor=a.requestor)
            for a in actions
        ]
    messages: list[Message] = []
    for call in calls:
        result = env.call_tool(call)
        messages.append(Message.calls(call.requestor, [call]))
        messages.append(Message.tool_result(call, result.content, error=not result.ok))
    info = (task.evaluation_criteria.communicate_info or []) if task.evaluation_criteria else []
    if agent == "gold" and info:
        messages.append(Message.text("assistant", "For your records: " + "; ".join(info)))
    return messages


def replay_task(domain: Domain, task: Task, agent: ScriptedAgent) -> ReplayOutcome:
    """Score one task under a scripted agent with the real reward."""
    env = Environment.for_task(domain, task)
    messages = scripted_trajectory(env, task, agent)
    draft = score_episode(domain, task, messages, USER_STOP)
    if draft.needs_judge:
        return ReplayOutcome(task.id, None, model_free=draft.partial.reward)
    info = draft.finish()
    failing = tuple(k for k, v in (info.reward_breakdown or {}).items() if v < 1.0)
    return ReplayOutcome(task.id, info.reward, failing)


def replay_domain(
    data_dir: str | Path,
    domain_name: str,
    agent: ScriptedAgent,
    *,
    tasks: Iterable[Task] | None = None,
    tau2_version: str = DEFAULT_TAU2_VERSION,
    tools_dir: str | Path | None = None,
) -> ReplaySummary:
    """Replay every task of a domain (the base split, or ``tasks``) under a scripted agent."""
    domain = load_domain(data_dir, domain_name, tau2_version=tau2_version, tools_dir=tools_dir)
    chosen = list(tasks) if tasks is not None else load_tasks(data_dir, domain_name)
    summary = ReplaySummary(domain=domain_name, agent=agent)
    summary.outcomes = [replay_task(domain, task, agent) for task in chosen]
    return summary


def total_line(summaries: Iterable[ReplaySummary]) -> str:
    """``total gold: 375 / 375 (41 also carry NL assertions: …)`` over the domains of one agent."""
    chosen = list(summaries)
    outcomes = [o for s in chosen for o in s.outcomes]
    agent = chosen[0].agent if chosen else "replay"
    return f"total {agent}: {_count(outcomes)}{_judge_note(outcomes)}"


def unsynced_gold_holds(domain: Domain, task: Task) -> bool:
    """Whether the task's assertions hold after its gold calls played with the sync switched off.

    Setup still syncs (the task's starting state is the same); only the calls skip it. This is
    what proves the sync load-bearing: tasks whose fix crosses the two DBs fail without it.
    """
    env = Environment.for_task(domain, task)
    env.sync_enabled = False
    scripted_trajectory(env, task, "gold")
    assertions = (task.evaluation_criteria.env_assertions or []) if task.evaluation_criteria else []
    return all(env.check_assertion(a) for a in assertions)
