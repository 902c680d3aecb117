"""Judge episodes: one per (item, judge); all of an item's criteria are asked in one step.

Layer contract: episode programs and the pure arithmetic that turns label probabilities into
verdicts; rows go to the ``EpisodeContext`` buffer, never to the store directly.

Why one episode per (item, judge) asking every criterion (and both pairwise orders) at once:
the scheduler puts an episode's requests next to each other in the batch, so the K prompts that
share a conversation prefix reach vLLM together and its prefix cache computes the prefix once.

Verdict rows (table ``verdicts``; the views in ``suites/judge/views.sql`` read them):

- ``name = 'judge:<criterion>'``: the verdict. ``label`` is the argmax label; ``label_probs``
  every label's probability over its whole token path (one-hot in reason mode, where the label
  is read from the JSON); ``score`` is P(positive) renormalized over the two answer labels
  (binary label rubrics), the expected score ``sum(p_k * k) / sum(p_k)`` (likert, abstain left
  out), or the reconciled P(A better) (pairwise). ``value`` holds the rubric sha256, kind,
  criterion, status (``ok``, ``abstain``, or why the verdict is invalid) and confidence.
- pairwise also stores each order: ``name = 'judge:<criterion>:ab'`` / ``':ba'`` with the
  order's raw label and probabilities (``ba`` swapped back to the input's A/B in ``value``).
  An invalid order makes the reconciled verdict invalid: a pair is never half-judged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.episode import EpisodeContext, Outcome, Program
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.suites.judge.inputs import JudgeItem
from uxlocal.suites.judge.prompts import Layout, judge_messages
from uxlocal.suites.judge.rubrics import Criterion, Rubric

LABEL_TOKENS = 32
"""Completion budget of a label verdict: room for the longest label's token path (zh labels and
"cannot tell" take several tokens); the Choice grammar stops as soon as a label is complete."""


# ---------------------------------------------------------------- arithmetic


def normalized(probs: dict[str, float] | None, labels: tuple[str, ...]) -> dict[str, float] | None:
    """``probs`` restricted to ``labels`` and renormalized; None when they carry no mass."""
    if not probs:
        return None
    total = sum(max(probs.get(label, 0.0), 0.0) for label in labels)
    if total <= 0:
        return None
    return {label: max(probs.get(label, 0.0), 0.0) / total for label in labels}


def pointwise_scores(rubric: Rubric, probs: dict[str, float]) -> tuple[str, float | None, float]:
    """(argmax label, score, confidence) of one label or likert verdict.

    The argmax runs over every label, abstain included (abstaining is an answer). The score and
    the confidence use the answer labels only, renormalized: "how sure among the real answers".
    """
    label = max(rubric.labels(), key=lambda name: probs.get(name, 0.0))
    answers = normalized(probs, rubric.names()) or {}
    confidence = answers.get(label, 0.0) if label in answers else probs.get(label, 0.0)
    if rubric.kind == "likert":
        score = sum(int(k) * p for k, p in answers.items()) if answers else None
    else:
        positive = rubric.positive_label()
        score = answers.get(positive) if positive is not None and answers else None
    return label, score, confidence


def swap_pair(probs: dict[str, float]) -> dict[str, float]:
    """Probabilities of the B-first order expressed in the input's A/B terms."""
    return {{"A": "B", "B": "A"}.get(k, k): v for k, v in probs.items()}


def reconcile(rubric: Rubric, first: dict[str, float], second_swapped: dict[str, float]) -> dict[str, float]:
    """Mean of the two orders' probabilities per label (both in the input's A/B terms)."""
    return {label: (first.get(label, 0.0) + second_swapped.get(label, 0.0)) / 2 for label in rubric.labels()}


# ---------------------------------------------------------------- requests


def _probs(result: GenResult, rubric: Rubric, reason: bool) -> dict[str, float] | None:
    """Label probabilities of a valid result: the engine's, or one-hot from a reason-mode verdict."""
    if not result.valid:
        return None
    if reason:
        verdict = result.parsed.get("verdict") if isinstance(result.parsed, dict) else None
        return {label: float(label == verdict) for label in rubric.labels()} if verdict in rubric.labels() else None
    if result.label_probs:
        return {label: float(result.label_probs.get(label, 0.0)) for label in rubric.labels()}
    return {label: float(label == result.parsed) for label in rubric.labels()}


def _status(result: GenResult) -> str:
    """Why a verdict is invalid, in a word the views can group on."""
    if result.finish_reason in ("context_window", "error"):
        return result.finish_reason
    if result.finish_reason == "length":
        return "cut_off"
    return "unparsed" if not result.error else f"unparsed: {result.error[:80]}"


def reason_schema(rubric: Rubric) -> JsonSchema:
    """``{reasoning, verdict}`` with the verdict one of the rubric's labels."""
    schema = {"type": "object", "properties": {"reasoning": {"type": "string"},
                                               "verdict": {"type": "string", "enum": list(rubric.labels())}},
              "required": ["reasoning", "verdict"], "additionalProperties": False}
    return JsonSchema(schema=schema)


class Asker:
    """Builds the judge requests of one run (rubric, mode and layout fixed)."""

    def __init__(self, rubric: Rubric, *, reason: bool, layout: Layout, reason_max_tokens: int,
                 loras: dict[str, str] | None = None) -> None:
        self.rubric = rubric
        self.loras = dict(loras or {})
        """Role -> the LoRA adapter its requests name (a learned judge); other roles use the base."""
        self.reason = reason
        self.layout = layout
        if reason:
            self.sampling = Sampling(temperature=0.0, max_tokens=reason_max_tokens)
            self.constraint: Choice | JsonSchema = reason_schema(rubric)
        else:
            self.sampling = Sampling(temperature=0.0, max_tokens=LABEL_TOKENS)
            self.constraint = Choice(rubric.labels())

    def request(self, role: str, criterion: Criterion, turns: tuple[dict[str, str], ...], *,
                pair: tuple[str, str] | None = None, per_turn: bool = False, tag: str = "") -> GenRequest:
        """One judge request for one criterion."""
        messages = judge_messages(self.rubric, criterion, turns, pair=pair, per_turn=per_turn,
                                  reason=self.reason, layout=self.layout)
        return GenRequest(role, tuple(messages), self.sampling, self.constraint, lora=self.loras.get(role), tag=tag)


# ---------------------------------------------------------------- rows


def _row(ctx: EpisodeContext, role: str, name: str, *, label: str | None, score: float | None, valid: bool,
         probs: dict[str, float] | None, value: dict[str, Any], result: GenResult | None,
         rationale: str | None = None) -> None:
    ctx.verdict(name, result=result, judge_role=role, label=label, score=score, valid=valid, value=value,
                rationale=rationale, label_probs=probs)


def _rationale(result: GenResult) -> str | None:
    return result.parsed.get("reasoning") if result.valid and isinstance(result.parsed, dict) else None


def record_pointwise(ctx: EpisodeContext, asker: Asker, role: str, criterion: Criterion,
                     result: GenResult) -> bool:
    """Store one label/likert verdict; returns whether it is valid."""
    rubric = asker.rubric
    base = {"rubric": rubric.sha256(), "kind": rubric.kind, "criterion": criterion.name,
            "positive": rubric.positive_label(), "abstain": rubric.abstain, "scale": rubric.scale}
    probs = _probs(result, rubric, asker.reason)
    if probs is None or sum(probs.values()) <= 0:
        _row(ctx, role, f"judge:{criterion.name}", label=None, score=None, valid=False, probs=None,
             value={**base, "status": _status(result)}, result=result)
        return False
    label, score, confidence = pointwise_scores(rubric, probs)
    status = "abstain" if label == rubric.abstain else "ok"
    _row(ctx, role, f"judge:{criterion.name}", label=label, score=score, valid=True, probs=probs,
         value={**base, "status": status, "confidence": confidence}, result=result, rationale=_rationale(result))
    return True


def record_pair(ctx: EpisodeContext, asker: Asker, role: str, criterion: Criterion,
                ab: GenResult, ba: GenResult | None) -> bool:
    """Store both orders and the reconciled preference; returns whether the pair is valid."""
    rubric = asker.rubric
    base = {"rubric": rubric.sha256(), "kind": rubric.kind, "criterion": criterion.name, "abstain": rubric.abstain}
    p_ab = _probs(ab, rubric, asker.reason)
    p_ba = None if ba is None else _probs(ba, rubric, asker.reason)
    for order, result, probs in (("ab", ab, p_ab), ("ba", ba, p_ba)):
        if result is None:
            continue
        in_input_terms = swap_pair(probs) if probs is not None and order == "ba" else probs
        label = None if probs is None else max(probs, key=lambda k: probs[k])
        _row(ctx, role, f"judge:{criterion.name}:{order}", label=label,
             score=None if in_input_terms is None else in_input_terms.get("A"), valid=probs is not None,
             probs=probs, value={**base, "order": order, "status": "ok" if probs else _status(result),
                                 "input_probs": in_input_terms}, result=result)
    if p_ab is None or (ba is not None and p_ba is None):
        bad = ab if p_ab is None else ba
        assert bad is not None
        _row(ctx, role, f"judge:{criterion.name}", label=None, score=None, valid=False, probs=None,
             value={**base, "status": f"order {'ab' if p_ab is None else 'ba'}: {_status(bad)}"}, result=None)
        return False
    second = swap_pair(p_ba) if p_ba is not None else p_ab
    probs = reconcile(rubric, p_ab, second)
    label = max(rubric.labels(), key=lambda k: probs[k])
    first_label = max(rubric.labels(), key=lambda k: p_ab[k])
    second_label = max(rubric.labels(), key=lambda k: second[k])
    value = {**base, "status": "abstain" if label == rubric.abstain else "ok", "confidence": probs[label],
             "both_orders": p_ba is not None, "label_ab": first_label, "label_ba": second_label,
             "flip": first_label != second_label if p_ba is not None else None}
    _row(ctx, role, f"judge:{criterion.name}", label=label, score=probs["A"], valid=True, probs=probs,
         value=value, result=None)
    return True


# ---------------------------------------------------------------- programs


def _turn_units(item: JudgeItem) -> list[int]:
    """Indices of the assistant turns (each judged with the conversation up to it)."""
    return [i for i, t in enumerate(item.conversation) if t["role"] == "assistant"]


def pointwise_program(ctx: EpisodeContext, item: JudgeItem, asker: Asker, role: str,
                      turn: int | None) -> Program:
    """Every criterion on one conversation (or one assistant turn of it), asked together."""
    turns = item.conversation if turn is None else item.conversation[: turn + 1]
    criteria = asker.rubric.criteria_list()
    results = yield [asker.request(role, c, turns, per_turn=turn is not None, tag=f"judge:{c.name}")
                     for c in criteria]
    valid = [record_pointwise(ctx, asker, role, c, r) for c, r in zip(criteria, results)]
    return Outcome("judged" if all(valid) else "invalid", reward=sum(valid) / len(valid))


def pairwise_program(ctx: EpisodeContext, item: JudgeItem, asker: Asker, role: str, both_orders: bool) -> Program:
    """Every criterion on one pair, in both orders unless told otherwise."""
    assert item.response_a is not None and item.response_b is not None
    criteria = asker.rubric.criteria_list()
    pairs = [(item.response_a, item.response_b)] + ([(item.response_b, item.response_a)] if both_orders else [])
    asks = [asker.request(role, c, item.conversation, pair=p, tag=f"judge:{c.name}:{o}")
            for c in criteria for p, o in zip(pairs, ("ab", "ba"))]
    results = yield asks
    step = len(pairs)
    valid = [record_pair(ctx, asker, role, c, results[i * step], results[i * step + 1] if both_orders else None)
             for i, c in enumerate(criteria)]
    return Outcome("judged" if all(valid) else "invalid", reward=sum(valid) / len(valid))


def bind(program: Callable[..., Program], *args: Any) -> Callable[[EpisodeContext], Program]:
    """An episode factory for the scheduler."""
    return lambda ctx: program(ctx, *args)


def unit_turns(item: JudgeItem, unit: str) -> list[int | None]:
    """The units of one item: the whole conversation, or each assistant turn."""
    return [None] if unit == "conversation" else list(_turn_units(item))
