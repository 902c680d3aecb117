"""The tau2 reward (spec §B.4.8), in two phases so that this package never calls a model.

Phase 1, ``score_episode``: everything model-free. DB (predicted replay vs gold replay, agent and
user DB hashes), ENV_ASSERTION, COMMUNICATE and ACTION. It returns a ``RewardDraft`` that lists
the NL assertions still to judge. Phase 2, ``RewardDraft.finish(verdicts)``: fold in the judge's
verdicts and take the product over ``reward_basis``. The draft is a pydantic model, so the
episode program may store it between the phases. ``compute_reward`` does both with an injected
``nl_judge`` callable.

Decisions where the spec leaves room (each also in the README's report):

- Every model-free component is computed even when it does not gate, as a diagnostic; only the
  basis components enter ``reward`` and ``reward_breakdown``.
- COMMUNICATE removes commas from both the required text and the message (tau2 removes them from
  the message); no task in the data has a comma in ``communicate_info``, so scores are unchanged.
- ACTION matches as upstream does (``DomainSpec.action_match_as_upstream``, the default): a call
  of the same name from either seat matches, and a gold action without ``compare_args`` is
  compared on the predicted call's own keys (an extra key fails, a missing one passes); whether
  the call succeeded does not matter. A domain may turn the flag off to require the gold seat and
  compare the gold call's keys. Matches are never consumed.
- A task whose criteria name neither ``actions`` nor ``env_assertions`` (both null) has its DB
  counted as matched without a comparison and left out of the breakdown, as upstream does.
- NL_ASSERTION (banking task_102) is judged by the run's local judge seat, not by upstream's
  hosted model; ``uxlocal tau2 replay`` counts such tasks apart, with their model-free part.
- An empty ``nl_assertions`` list gates as met, without a judge.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from .env import Environment
from .messages import Message, ToolCall, trajectory_tool_calls
from .registry import Domain
from .reward_info import (
    ActionCheck,
    CommunicateCheck,
    DBCheck,
    EnvAssertionCheck,
    NLAssertionCheck,
    RewardInfo,
)
from .tasks import Action, RewardType, Task
from .termination import is_scored

NLJudge = Callable[[list[str], Sequence[Message]], list[tuple[bool, str]]]
"""Judge callable: (assertions, trajectory) → one ``(met, justification)`` per assertion, in order."""


class NLVerdict(BaseModel):
    """The judge's answer on one assertion."""

    met: bool
    justification: str = ""


class RewardDraft(BaseModel):
    """Phase-1 result: model-free checks done, NL assertions possibly pending."""

    task_id: str
    termination_reason: str
    scored: bool
    """False when no check applies: the episode ended other than user_stop/agent_stop (reward 0)
    or the task has no criteria (reward 1); ``partial`` is then already final."""
    partial: RewardInfo
    """All model-free checks; ``reward`` here ignores NL and is final only when nothing is pending."""
    nl_assertions: list[str]
    """The task's assertions, in order; verdicts must come in the same order."""
    nl_gates: bool
    """Whether NL_ASSERTION is in the basis (otherwise judging is only a diagnostic)."""

    @property
    def needs_judge(self) -> bool:
        """Whether ``finish`` requires verdicts."""
        return self.scored and self.nl_gates and bool(self.nl_assertions)

    def finish(self, verdicts: Sequence[NLVerdict | tuple[bool, str]] | None = None) -> RewardInfo:
        """Return the final ``RewardInfo``; ``ValueError`` if verdicts are needed but missing or wrong."""
        if not self.scored:
            return self.partial
        if verdicts is None and self.needs_judge:
            raise ValueError(f"task {self.task_id}: NL_ASSERTION gates the reward; pass the judge's verdicts")
        info = self.partial.model_copy(deep=True)
        if verdicts is not None:
            if len(verdicts) != len(self.nl_assertions):
                raise ValueError(
                    f"task {self.task_id}: {len(verdicts)} verdicts for {len(self.nl_assertions)} assertions"
                )
            info.nl_assertions = [
                _nl_check(text, v) for text, v in zip(self.nl_assertions, verdicts, strict=True)
            ]
        return self._gate(info)

    def finish_checks(self, checks: Sequence[NLAssertionCheck]) -> RewardInfo:
        """Return the final ``RewardInfo`` from upstream's judge checks, taken as the judge wrote them.

        Upstream keeps one check per entry of the judge's reply (its ``expectedOutcome`` text, in
        its order), however many there are; all must be met.
        """
        if not self.scored:
            return self.partial
        info = self.partial.model_copy(deep=True)
        info.nl_assertions = [check.model_copy() for check in checks]
        return self._gate(info)

    def _gate(self, info: RewardInfo) -> RewardInfo:
        if self.nl_gates and info.reward_breakdown is not None:
            met = all(c.met for c in info.nl_assertions or [])
            info.reward_breakdown["NL_ASSERTION"] = 1.0 if met else 0.0
            info.reward = _product(info.reward_breakdown.values())
        return info


def _nl_check(text: str, verdict: NLVerdict | tuple[bool, str]) -> NLAssertionCheck:
    met, why = (verdict.met, verdict.justification) if isinstance(verdict, NLVerdict) else verdict
    return NLAssertionCheck(nl_assertion=text, met=bool(met), justification=why)


def score_episode(
    domain: Domain, task: Task, messages: Sequence[Message], termination_reason: str
) -> RewardDraft:
    """Phase 1 of the reward for one finished episode.

    ``messages`` is the whole trajectory as tau2 stores it, starting with the task's
    ``message_history``; if that prefix is missing it is added, so its writes count once.
    """
    criteria = task.evaluation_criteria
    basis: list[RewardType] = list(criteria.reward_basis) if criteria else []
    nl = list(criteria.nl_assertions or []) if criteria else []

    def draft(partial: RewardInfo, *, scored: bool) -> RewardDraft:
        return RewardDraft(
            task_id=task.id,
            termination_reason=termination_reason,
            scored=scored,
            partial=partial,
            nl_assertions=nl,
            nl_gates="NL_ASSERTION" in basis,
        )

    if not is_scored(termination_reason):
        note = f"not scored: the episode ended with {termination_reason!r}"
        return draft(RewardInfo(reward=0.0, reward_basis=basis, info={"note": note}), scored=False)
    if criteria is None:
        return draft(
            RewardInfo(reward=1.0, info={"note": "the task has no evaluation criteria"}), scored=False
        )
    trajectory = with_history(task, messages)
    return draft(_model_free_checks(domain, task, trajectory, basis), scored=True)


def compute_reward(
    domain: Domain,
    task: Task,
    messages: Sequence[Message],
    termination_reason: str,
    *,
    nl_judge: NLJudge | None = None,
) -> RewardInfo:
    """Run both phases; ``nl_judge`` is called only when NL assertions gate this task.

    The judge sees the trajectory with the task's history in front.
    """
    draft = score_episode(domain, task, messages, termination_reason)
    if not draft.needs_judge:
        return draft.finish()
    if nl_judge is None:
        raise ValueError(f"task {task.id}: NL_ASSERTION gates the reward but no nl_judge was given")
    return draft.finish(nl_judge(list(draft.nl_assertions), with_history(task, messages)))


def _model_free_checks(
    domain: Domain, task: Task, trajectory: list[Message], basis: list[RewardType]
) -> RewardInfo:
    criteria = task.evaluation_criteria
    assert criteria is not None
    predicted = Environment.for_task(domain, task, with_history=False)
    mismatches = predicted.replay(trajectory)
    gold_agent, gold_user, gold_errors = gold_hashes(domain, task)
    # tau2 has nothing to compare the DB with when a task names neither gold actions nor env
    # assertions (``None``, not ``[]``): the DB counts as matched and is left out of the breakdown
    no_env_check = criteria.actions is None and criteria.env_assertions is None
    db_match = no_env_check or (predicted.db_hash() == gold_agent and predicted.user_db_hash() == gold_user)
    env_checks = [
        EnvAssertionCheck(env_assertion=a, met=(met := predicted.check_assertion(a)), reward=float(met))
        for a in criteria.env_assertions or []
    ]
    communicate = communicate_checks(criteria.communicate_info or [], trajectory)
    actions = action_checks(domain, criteria.actions or [], trajectory)
    components: dict[str, float] = {
        "DB": float(db_match),
        "ENV_ASSERTION": float(all(c.met for c in env_checks)),
        "COMMUNICATE": float(all(c.met for c in communicate)),
        "ACTION": float(all(c.action_match for c in actions)),
        "NL_ASSERTION": 1.0,  # placeholder until finish(); gates only when judged
    }
    skipped = ("DB", "ENV_ASSERTION") if no_env_check else ()
    breakdown: dict[str, float] = {b: components[b] for b in basis if b not in skipped}
    info: dict[str, Any] = {
        "env": {"gold_call_errors": list(gold_errors), "replay_mismatches": len(mismatches)},
    }
    return RewardInfo(
        reward=_product(breakdown.values()),
        db_check=DBCheck(db_match=db_match, db_reward=float(db_match)),
        env_assertions=env_checks,
        action_checks=actions,
        communicate_checks=communicate,
        reward_basis=basis,
        reward_breakdown=breakdown,
        info=info,
    )


def gold_hashes(domain: Domain, task: Task) -> tuple[str, str | None, tuple[str, ...]]:
    """Agent/user DB hashes after replaying the gold actions, and the gold calls that failed; cached."""
    key = _gold_fingerprint(task)
    cached = domain.gold_cache.get(key)
    if cached is not None:
        return cached
    env = Environment.for_task(domain, task)
    # tau2 plays the gold actions without its DB coupling (telecom's sync runs after setup, not
    # after each gold call), so the phone's mirror of the line is compared as setup left it; the
    # DB check matches upstream's only with the same rule. No domain scores DB with a sync, so
    # no reward changes: only the reported ``db_match`` does.
    env.sync_enabled = False
    errors: list[str] = []
    for action in (task.evaluation_criteria.actions or []) if task.evaluation_criteria else []:
        if env.tool_kind(action.name, action.requestor) != "write":
            continue
        result = env.call(action.name, action.arguments, action.requestor)
        if not result.ok:
            errors.append(f"{action.action_id} {action.name}: {result.error}")
    value = (env.db_hash(), env.user_db_hash(), tuple(errors))
    domain.gold_cache[key] = value
    return value


def _gold_fingerprint(task: Task) -> str:
    """Fingerprint what the gold replay depends on: the task id, its initial state and its actions."""
    criteria = task.evaluation_criteria
    payload = {
        "id": task.id,
        "initial_state": task.initial_state.model_dump(mode="json") if task.initial_state else None,
        "actions": [a.model_dump(mode="json") for a in (criteria.actions or [])] if criteria else [],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def with_history(task: Task, messages: Sequence[Message]) -> list[Message]:
    """``messages`` with the task's ``message_history`` in front, unless it already starts with it."""
    history = (task.initial_state.message_history or []) if task.initial_state else []
    if not history or (
        len(messages) >= len(history)
        and all(_same_turn(a, b) for a, b in zip(history, messages, strict=False))
    ):
        return list(messages)
    return [*history, *messages]


def _same_turn(a: Message, b: Message) -> bool:
    def calls(m: Message) -> list[tuple[str, Any]]:
        return [(c.name, c.arguments) for c in m.tool_calls or []]

    return (a.role, a.content or "", calls(a)) == (b.role, b.content or "", calls(b))


def communicate_checks(required: Sequence[str], trajectory: Sequence[Message]) -> list[CommunicateCheck]:
    """Each required string must appear, case-insensitively and ignoring commas, in an assistant text turn."""
    said = [m.content.lower().replace(",", "") for m in trajectory if m.role == "assistant" and m.content]
    checks = []
    for info in required:
        needle = info.lower().replace(",", "")
        met = any(needle in text for text in said)
        why = "said in an assistant message" if met else "not found in any assistant message"
        checks.append(CommunicateCheck(info=info, met=met, justification=why))
    return checks


def action_checks(
    domain: Domain, actions: Sequence[Action], trajectory: Sequence[Message]
) -> list[ActionCheck]:
    """Each gold action must match some call of the trajectory (name, requestor, compared arguments)."""
    calls = trajectory_tool_calls(trajectory)
    probe = Environment(domain)
    any_seat = domain.spec.action_match_as_upstream
    checks = []
    for action in actions:
        matched = any(action_matches(action, call, any_seat=any_seat) for call in calls)
        checks.append(
            ActionCheck(
                action=action,
                action_match=matched,
                action_reward=float(matched),
                tool_type=probe.tool_kind(action.name, action.requestor),
            )
        )
    return checks


def action_matches(action: Action, call: ToolCall, *, any_seat: bool = False) -> bool:
    """Match on tool and seat, and equal values for ``compare_args`` (all gold arguments when ``None``).

    ``any_seat``: upstream's rule: the seat is ignored and, without ``compare_args``, the keys
    compared are the predicted call's own.
    """
    if call.name != action.name or (not any_seat and call.requestor != action.requestor):
        return False
    if action.compare_args is not None:
        keys: Any = action.compare_args
    else:
        keys = call.arguments.keys() if any_seat else action.arguments.keys()
    return all(call.arguments.get(k) == action.arguments.get(k) for k in keys)


def _product(values: Any) -> float:
    result = 1.0
    for value in values:
        result *= float(value)
    return result


def judge_transcript(messages: Sequence[Message], *, include_tools: bool = False) -> str:
    """Render the trajectory as ``role: text`` lines for an NL judge prompt.

    By default only the dialogue (user and assistant text), which is what tau2's judge effectively
    sees; ``include_tools`` adds tool calls and results as compact lines.
    """
    lines: list[str] = []
    for message in messages:
        if message.role in ("assistant", "user") and message.has_text():
            lines.append(f"{message.role}: {(message.content or '').strip()}")
        if not include_tools:
            continue
        for call in message.tool_calls or []:
            lines.append(f"{message.role} calls {call.name}({json.dumps(call.arguments, sort_keys=True)})")
        if message.role == "tool":
            lines.append(f"tool result: {message.content or ''}")
    return "\n".join(lines)
