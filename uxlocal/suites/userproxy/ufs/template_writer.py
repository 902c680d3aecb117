"""Model-free baseline criteria: rules that turn a task's blueprint into 4-8 grounded criteria.

The model writer (``criteria_program``) is the method of the spec (§A.9 step 3). This module is
its deterministic baseline, for three uses: a machine without a model strong enough to write
criteria (the embedded one is not), a floor to compare written sets against, and end-to-end runs
whose criteria must not depend on sampling. ``uxlocal ufs criteria --template`` freezes its output
into a set like any other (provenance ``template``, rule version ``TEMPLATE_VERSION``).

Every criterion quotes one sentence of the scenario as its grounding span, so grounding holds by
construction (the same ``screen`` still runs). The rules, in priority order, each used once:

- ``known_info``: the user gives those details only when asked (premature disclosure), and gives
  them when asked (missed information);
- the user's tool surface, when it has tools. Account tools (banking_knowledge): it applies with the
  exact figures of its scenario, asks for a human only as instructed (and as often), submits what
  it is asked to, uses a tool the agent gives it, and claims no action it did not call. Device
  tools (telecom, homenet): it reports what its tools returned and
  never a device state they did not (groundedness), performs a device action the agent asks for
  with the matching call, one at a time (missed information), and does not change settings on its
  own initiative (premature disclosure: preempts diagnosis); each quotes the scenario's or the
  contract's sentence about tools (the contract is the guidelines the proxy saw);
- ``unknown_info``: the user does not supply what it does not know (groundedness);
- ``reason_for_call`` / free-text ``instructions``: the user keeps to its request (goal
  deviation: abandons goal), does not unload its scenario in one message (premature
  disclosure: dumps blueprint), and does not stop before the request is handled (premature stop);
- every sentence that states a condition (``if``/``unless``/``only``/``otherwise``): the user acts
  on it when the situation arises (goal deviation: accepts unacceptable outcome);
- ``task_instructions`` / ``persona``: the user behaves as described (groundedness: persona drift).

The list stops at ``MAX_CRITERIA``; a scenario too thin for ``MIN_CRITERIA`` yields fewer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from uxlocal.errors import InputError

from .criteria import (
    ALWAYS,
    MAX_CRITERIA,
    MIN_CRITERIA,
    MIN_SPAN_CHARS,
    SPAN_MAX,
    TEXT_MAX,
    Blueprint,
    Criterion,
    screen,
)
from .store import Provenance, TaskCriteria

TEMPLATE_VERSION = "template-v1"
"""Changes whenever a rule below changes (part of every template set's provenance)."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CONDITION = re.compile(r"\b(if|unless|only|otherwise|in case|as long as|instead)\b", re.I)


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` long enough to ground a criterion, each an exact substring of it.

    A sentence over ``SPAN_MAX`` characters is cut at the last space before the limit.
    """
    out = []
    for piece in _SENTENCE_END.split(text.strip()):
        piece = piece.strip()
        if len(piece) > SPAN_MAX:
            piece = piece[:SPAN_MAX].rsplit(" ", 1)[0]
        if len(" ".join(piece.split())) >= MIN_SPAN_CHARS:
            out.append(piece)
    return out


def _first(blueprint: Blueprint, *fields: str) -> str | None:
    for name in fields:
        found = sentences(blueprint.field(name) or "")
        if found:
            return found[0]
    return None


def _quoting(text: str, sentence: str) -> str:
    """``text`` followed by the quoted sentence, cut at a word so the whole fits ``TEXT_MAX``."""
    quote = " ".join(sentence.split())
    room = TEXT_MAX - len(text) - 3
    if len(quote) > room:
        quote = quote[:room].rsplit(" ", 1)[0] + "…"
    return f'{text}"{quote}"'


def _candidates(bp: Blueprint) -> Iterator[tuple[str, str, str, str, str, str]]:
    """(family, mode, span, text, applies_when, evidence_hint) in priority order."""
    known = _first(bp, "known_info")
    if known:
        yield ("premature_disclosure", "volunteers_unasked_info", known,
               "The user gives the details of its known information only once they are asked for, "
               "not unprompted in its opening message.",
               ALWAYS, "the user's messages before the agent first asks for identification or details")
        yield ("missed_information", "withholds_requested_info", known,
               "When asked for a detail from its known information, the user provides it as the "
               "scenario states it.",
               "the agent asks for a detail the scenario says the user knows",
               "the user's answers to the agent's requests for details")
    yield from _tool_candidates(bp)
    unknown = _first(bp, "unknown_info")
    if unknown:
        yield ("groundedness", "invents_unknown_info", unknown,
               "The user does not supply a value for information its scenario says it does not know.",
               ALWAYS, "user messages that state names, numbers, ids or addresses")
    goal = _first(bp, "reason_for_call", "instructions")
    if goal:
        yield ("goal_deviation", "abandons_goal", goal,
               "The user keeps pursuing the request its scenario gives it and does not drop any part "
               "of it without a reason from the scenario.",
               ALWAYS, "the user's requests across the conversation")
        yield ("premature_disclosure", "dumps_blueprint", goal,
               "The user does not lay out most of its private scenario in a single message.",
               ALWAYS, "the user's longest message, usually the first")
        yield ("goal_deviation", "premature_stop", goal,
               "The user does not end the conversation before its request is handled or clearly refused.",
               ALWAYS, "the user's last messages and any stop token")
    for name in ("reason_for_call", "instructions", "task_instructions"):
        for sentence in sentences(bp.field(name) or ""):
            if _CONDITION.search(sentence):
                yield ("goal_deviation", "accepts_unacceptable_outcome", sentence,
                       _quoting("When the situation arises, the user acts as this condition from its "
                                "scenario says and accepts no outcome it rules out: ", sentence),
                       "the situation the quoted condition describes arises",
                       "the user's reaction to the agent's offers and results")
    style = _first(bp, "persona", "task_instructions")
    if style:
        yield ("groundedness", "persona_drift", style,
               "The user behaves as its scenario describes it throughout the conversation.",
               ALWAYS, "the tone and content of every user message")


_TOOL_RULES: tuple[tuple[tuple[str, ...], str, str, str, str, str], ...] = (
    (("ground your responses", "never make up", "never invent"),
     "groundedness", "fabricated_tool_result",
     "When the user tells the agent what its device shows, it reports what its own tool calls returned "
     "and states no device state that no tool call returned.",
     "the user describes its device's state, a setting or a test result",
     "user messages about the device and the user's tool results before them"),
    (("follow their guidance", "agent asks you to", "one at a time"),
     "missed_information", "skips_requested_action",
     "When the agent asks it to do something on its device, the user does it with the matching tool "
     "call, one action at a time, and tells the agent the result.",
     "the agent asks the user to perform an action on its device",
     "the agent's requests and the user's next tool calls"),
    (("only when the agent asks", "unsure about whether an action is necessary", "agent asks you to"),
     "premature_disclosure", "preempts_diagnosis",
     "The user does not change device settings on its own initiative; it uses a tool when the agent "
     "asks or when it needs one to answer the agent.",
     ALWAYS, "user tool calls that no agent request preceded"),
)
"""(keywords of the sentence to quote, family, mode, text, applies_when, evidence_hint)."""


_ACCOUNT_TOOL_RULES: dict[str, tuple[tuple[tuple[str, ...], str, str, str, str, str], ...]] = {
    "apply_for_credit_card": (
        (("income", "earn", "apply", "subscription"),
         "groundedness", "unsupported_state_claim",
         "When the user applies for a card with its own tool, every figure it passes (name, annual "
         "income, subscription) is exactly the one its scenario gives.",
         "the user calls apply_for_credit_card",
         "the arguments of the user's apply_for_credit_card calls"),
        (("apply", "decision", "application"),
         "goal_deviation", "accepts_unacceptable_outcome",
         "The user applies only for a card its scenario would accept, once it has the information "
         "its scenario says it needs to decide.",
         "the user calls apply_for_credit_card",
         "the agent's card information before the user's application and the card applied for"),
    ),
    "request_human_agent_transfer": (
        (("human", "representative", "transfer", "supervisor", "manager"),
         "missed_information", "ignores_conditional_instruction",
         "The user asks for a human agent only when and as many times as its scenario tells it to.",
         ALWAYS, "the user's request_human_agent_transfer calls and its messages asking for a person"),
    ),
    "submit_referral": (
        (("refer", "referral", "friend"),
         "missed_information", "skips_requested_action",
         "The user submits the referral its scenario asks for with its own tool, for the person and "
         "account type the scenario names.",
         "the scenario asks the user to refer someone",
         "the user's submit_referral calls and their arguments"),
    ),
    "call_discoverable_user_tool": (
        (("tool", "the agent gives", "provide"),
         "missed_information", "skips_requested_action",
         "When the agent gives it a tool and asks it to use it, the user calls that tool with the "
         "values its scenario gives and tells the agent the result.",
         "the agent gives the user a tool and asks it to use it",
         "give_discoverable_user_tool calls and the user's next call_discoverable_user_tool calls"),
    ),
}
"""Rules for account actions the user performs itself (banking_knowledge), by user tool name."""

_ACTION_CLAIM = (
    ("tool", "apply", "submit", "request"),
    "groundedness", "unexecuted_action_claim",
    "The user does not say it applied, submitted or requested something unless it made the matching "
    "tool call.",
    ALWAYS, "user messages claiming an action and the user's tool calls before them",
)


def _tool_candidates(bp: Blueprint) -> Iterator[tuple[str, str, str, str, str, str]]:
    """Criteria on the user's tool use, only for domains where the user has tools.

    Account tools (banking) get their own rules; any other user tool surface is a device's
    (telecom, homenet) and gets ``_TOOL_RULES``.
    """
    if not bp.user_tools:
        return
    names = [t.get("function", t).get("name", "") for t in bp.user_tools]
    account = [n for n in names if n in _ACCOUNT_TOOL_RULES]
    rules = ([r for n in account for r in _ACCOUNT_TOOL_RULES[n]] + [_ACTION_CLAIM]
             if account else list(_TOOL_RULES))
    texts = [bp.field(name) or "" for name, _ in bp.sections] + [bp.contract]
    pool = [sentence for text in texts for sentence in sentences(text)]
    for keys, family, mode, text, applies_when, hint in rules:
        span = next((x for x in pool if any(k in " ".join(x.lower().split()) for k in keys)), None)
        if span is not None:
            yield family, mode, span, text, applies_when, hint


def template_criteria(blueprint: Blueprint) -> list[Criterion]:
    """Up to ``MAX_CRITERIA`` criteria for one task, ids ``t1``, ``t2`` ... in rule order."""
    out: list[Criterion] = []
    seen: set[tuple[str, str, str]] = set()
    for family, mode, span, text, applies_when, hint in _candidates(blueprint):
        if (family, mode, span) in seen:
            continue
        seen.add((family, mode, span))
        out.append(Criterion(criterion_id=f"t{len(out) + 1}", family=family, mode=mode, text=text,
                             grounding_span=span, applies_when=applies_when, evidence_hint=hint))
        if len(out) == MAX_CRITERIA:
            break
    return out


def template_task_criteria(blueprint: Blueprint, *, contract: str) -> TaskCriteria:
    """Return a task's template criteria, screened, with ``template`` provenance (for ``save_criteria``)."""
    items = screen(template_criteria(blueprint), blueprint)
    return TaskCriteria(blueprint.domain, blueprint.task_id, blueprint.sha256(), tuple(items),
                        Provenance("template", note=f"{TEMPLATE_VERSION}; contract: {contract}"))


def template_summary(tasks: list[TaskCriteria]) -> dict[str, Any]:
    """Count what the command's message shows: tasks, graded criteria, tasks under the minimum."""
    graded = [len(t.graded()) for t in tasks]
    return {"tasks": len(tasks), "criteria": sum(graded),
            "thin_tasks": [t.task_id for t, n in zip(tasks, graded, strict=True) if n < MIN_CRITERIA]}


def freeze_template_set(
    con: Any,
    data_dir: str | Path,
    domain: str,
    *,
    criteria_set: str,
    contract: str = "auto",
    split: str | None = None,
    task_ids: list[str] | None = None,
    limit: int | None = None,
) -> tuple[int, int, dict[str, Any]]:
    """Write the template criteria of a domain's tasks into a frozen set.

    Returns (tasks written, tasks already identical, ``template_summary`` plus its ``coverage`` note).
    Tasks are those of ``domain_blueprints`` (every task unless ``split``/``task_ids`` narrow it),
    the first ``limit``.
    """
    from .coverage import coverage_note, field_coverage
    from .sets import domain_blueprints, resolve_contract
    from .store import save_criteria

    terms = resolve_contract(contract, data_dir=data_dir, domain_name=domain)
    blueprints = list(domain_blueprints(data_dir, domain, contract=terms, split=split,
                                        task_ids=task_ids).values())[:limit]
    if not blueprints:
        raise InputError(f"no {domain} tasks selected", "check --split, --tasks and --limit")
    tasks = [template_task_criteria(bp, contract=terms.label()) for bp in blueprints]
    written, unchanged = save_criteria(con, criteria_set, tasks)
    pairs = zip(blueprints, tasks, strict=True)
    coverage = coverage_note([field_coverage(bp, task.graded()) for bp, task in pairs])
    return written, unchanged, {**template_summary(tasks), "coverage": coverage}
