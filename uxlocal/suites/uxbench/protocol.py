"""UXBench's protocol in our own code: what its harness sends and how it reads the answers.

Layer contract: pure functions over released rows (plain dicts, as in the JSONL files) and
model outputs; the words come from the user's checkout (``upstream.py``), the behaviour is
re-implemented here from spec ``uxbench.md`` §2.1-2.5 and checked against recordings of
upstream's own functions (``tests/conformance/test_uxbench_conformance.py``).

Why rows and not ``data.py``'s items: the items normalize (roles, ``content`` vs ``message``,
rich replies reduced to text), and upstream does not. Each call site below reads fields the way
its upstream counterpart does, and they differ:

- T1 turn text: ``content`` unless empty, else ``message``; judged reply passed raw.
- GRM (T2) turn text: ``content`` when the key exists (even empty), else ``message``.
- T3 generation turn text: ``message`` unless empty, else ``content``; roles passed unchanged.

Where upstream raises (a T1 ``selected_history`` or a T3 ``history`` given as a JSON string:
upstream iterates its characters and fails on ``.get``), we parse the string the way the GRM
scorer parses one (Python literal, then JSON) and render the list; the result carries the
deviation ``history_string_parsed`` so the stored verdict says so.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Formatting rules of spec §2.1 (T1) and §2.3 (GRM); the templates themselves come from the checkout.
USER_LABEL, AI_LABEL = "用户", "AI"
T1_EMPTY_HISTORY = "（无历史对话）"
GRM_EMPTY_CONTEXT = "无"
TRUNCATION_MARK = "...[截断]"
GOOD, BAD = "好", "差"
REASONING_TAIL_CHARS = 500
"""``extract_verdict`` reads only this many trailing characters of the reasoning (spec §2.2)."""
HISTORY_STRING_PARSED = "history_string_parsed"


@dataclass(frozen=True)
class Rendered:
    """A prompt or chat as upstream would send it, plus where we departed from upstream."""

    messages: list[dict[str, str]]
    deviations: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The single user message's content (T1 and GRM prompts)."""
        return self.messages[-1]["content"]


def _history_list(value: Any) -> tuple[list[Any], tuple[str, ...]]:
    """Return a T1/T3 history as upstream iterates it; a string is parsed (a recorded deviation)."""
    if not isinstance(value, str):
        return list(value or []), ()
    parsed = parse_history_field(value)
    return parsed, (HISTORY_STRING_PARSED,)


def parse_history_field(raw: Any) -> list[Any]:
    """Read ``history`` as the GRM scorer does: a list as is, a string as a Python literal else JSON.

    A parsed value counts only when it is a list; anything else is no history.
    """
    if not raw:
        return []
    if isinstance(raw, list):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return []
    for parse in (ast.literal_eval, json.loads):
        try:
            value = parse(raw.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, list):
            return value
    return []


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters plus the truncation mark; 0 means no limit."""
    return text[:limit] + TRUNCATION_MARK if 0 < limit < len(text) else text


# ---------------------------------------------------------------- T1


def t1_query(row: Mapping[str, Any]) -> Any:
    """Return the judged user turn: ``source_query.message`` for a dict, else the value as text."""
    sq = row.get("source_query", {})
    return sq.get("message", "") if isinstance(sq, dict) else str(sq)


def t1_messages(row: Mapping[str, Any], template: str) -> Rendered:
    """Render the one user message upstream's T1 judge call sends (spec §2.1)."""
    history, deviations = _history_list(row.get("selected_history", []))
    lines = []
    for turn in history:
        label = USER_LABEL if turn.get("role") == "user" else AI_LABEL
        lines.append(f"**{label}：** {turn.get('content') or turn.get('message', '')}")
    context = "\n".join(lines) if lines else T1_EMPTY_HISTORY
    reply = row.get("agent_response_full", "")
    prompt = template.format(context=context, prompt=t1_query(row), response=reply)
    return Rendered([{"role": "user", "content": prompt}], deviations)


# ---------------------------------------------------------------- GRM prompts (T2, T3)


def grm_eval_prompt(row: Mapping[str, Any], response: str, template: str, *,
                    max_history_turns: int = 0, max_response_chars: int = 0) -> str:
    """Render the T2 GRM prompt at one truncation level (spec §2.3): history, query, the reply."""
    history = parse_history_field(row.get("history", []))
    if 0 < max_history_turns < len(history):
        history = history[-max_history_turns:]
    lines = []
    for turn in history:
        if not isinstance(turn, dict):
            continue
        text = turn["content"] if "content" in turn else turn.get("message", "")
        lines.append(f"{USER_LABEL if turn.get('role', '') == 'user' else AI_LABEL}：{text or ''}")
    return template.format(context="\n".join(lines) if lines else GRM_EMPTY_CONTEXT,
                           prompt=row.get("query", "") or "", response_a=_cut(response, max_response_chars))


def grm_recovery_prompt(row: Mapping[str, Any], template: str, *, max_failed_chars: int = 0,
                        max_complaint_chars: int = 0, max_response_chars: int = 0) -> str:
    """Render the T3 GRM prompt at one truncation level (spec §2.3).

    The failed reply is the only context, the complaint the question, ``generated_response``
    the judged reply.
    """
    failed = _cut(row.get("failed_response", "") or "", max_failed_chars)
    complaint = _cut(row.get("user_complaint", "") or "", max_complaint_chars)
    reply = _cut(row.get("generated_response", "") or "", max_response_chars)
    context = f"{AI_LABEL}：{failed}" if failed.strip() else GRM_EMPTY_CONTEXT
    return template.format(context=context, prompt=complaint, response_a=reply)


def grm_prompt(task: str, row: Mapping[str, Any], response: str, template: str, level: Sequence[int]) -> str:
    """Render the GRM prompt for ``task`` (eval | recovery) at one rung of its truncation ladder."""
    if task == "eval":
        hist, resp = level
        return grm_eval_prompt(row, response, template, max_history_turns=hist, max_response_chars=resp)
    failed, complaint, resp = level
    return grm_recovery_prompt({**row, "generated_response": response}, template, max_failed_chars=failed,
                               max_complaint_chars=complaint, max_response_chars=resp)


# ---------------------------------------------------------------- T3 generation


def t3_messages(row: Mapping[str, Any]) -> Rendered:
    """Render the candidate's T3 chat: history, the failed reply (when non-empty), the complaint.

    No system turn (spec §2.5 variant a); roles pass unchanged.
    """
    history, deviations = _history_list(row.get("history", []))
    chat = [{"role": turn.get("role", "user"), "content": turn.get("message") or turn.get("content", "")}
            for turn in history]
    failed = row.get("failed_response", "")
    if failed:
        chat.append({"role": "assistant", "content": failed})
    chat.append({"role": "user", "content": row.get("user_complaint", "")})
    return Rendered(chat, deviations)


# ---------------------------------------------------------------- reading T1 answers


def _read_one(text: str, src: str) -> tuple[int, str] | None:
    """Apply the rule cascade of spec §2.2 to one text; None when no rule decides."""
    s = text.strip()
    for rule, test in (("exact", str.__eq__), ("starts", str.startswith), ("ends", str.endswith)):
        for label, verdict in ((GOOD, 1), (BAD, -1)):
            if test(s, label):
                return verdict, f"{rule}_{src}"
    lines = s.splitlines()
    last = lines[-1].strip() if lines else ""
    if GOOD in last and BAD not in last and "不" + GOOD not in last:
        return 1, f"last_line_{src}"
    if BAD in last and GOOD not in last:
        return -1, f"last_line_{src}"
    good_at, bad_at = text.rfind(GOOD), text.rfind(BAD)
    if good_at >= 1 and text[good_at - 1] == "不":
        good_at = -1  # a negated 好 at the last position does not count; earlier ones are not looked at
    if good_at != bad_at:  # equal only when neither is present
        return (1 if good_at > bad_at else -1), f"rfind_{src}"
    if "不满意" in text or "无法令用户满意" in text:
        return -1, f"kw_bad_{src}"
    if "令用户满意" in text and "不令用户满意" not in text:
        return 1, f"kw_good_{src}"
    return None


def extract_verdict(content: str, reasoning: str = "") -> tuple[int | None, str]:
    """(1 | -1 | None, parse note): the answer first, then the reasoning's last 500 characters."""
    tail = reasoning[-REASONING_TAIL_CHARS:] if reasoning else ""
    for text, src in ((content, "content"), (tail, "reasoning")):
        if text:
            found = _read_one(text, src)
            if found is not None:
                return found
    return None, "cannot_parse"


def split_reasoning(text: str) -> tuple[str, str]:
    """Split a local model's output into (content, reasoning), as a hosted API returns them.

    A ``<think>…</think>`` block is the reasoning (``reasoning_content``); an empty answer falls
    back to the reasoning, as upstream's ``call_llm`` does.
    """
    head, sep, tail = text.partition("</think>")
    if not sep:
        return text, ""
    reasoning = head.split("<think>", 1)[-1].strip()
    content = tail
    return (reasoning if not content.strip() and reasoning else content), reasoning


# ---------------------------------------------------------------- GRM score


@dataclass(frozen=True)
class GrmScore:
    """What the GRM rule reads off one answer's top-k log-probabilities (natural log)."""

    score: float | None
    good_logprob: float | None
    bad_logprob: float | None


def grm_score(positions: Sequence[tuple[str, Sequence[tuple[str, float]]]]) -> GrmScore:
    """Score an answer by the GRM rule of spec §2.4: P(好)/(P(好)+P(差)).

    Read at the first position whose emitted token is not blank and whose top list names 好 or
    差 (tokens compared after stripping; the first of each wins); one of them alone gives P(好)
    or 1-P(差); None when no position names either.

    ``positions``: per generated token, (emitted token text, [(token text, logprob), ...]).
    """
    good = bad = None
    for emitted, top in positions:
        if not emitted.strip():
            continue
        for token, logprob in top:
            word = token.strip()
            if word == GOOD and good is None:
                good = logprob
            elif word == BAD and bad is None:
                bad = logprob
        if good is not None or bad is not None:
            break
    if good is not None and bad is not None:
        p_good, p_bad = math.exp(good), math.exp(bad)
        return GrmScore(p_good / (p_good + p_bad), good, bad)
    if good is not None:
        return GrmScore(math.exp(good), good, None)
    if bad is not None:
        return GrmScore(1.0 - math.exp(bad), None, bad)
    return GrmScore(None, None, None)


def grm_verdict(content: str) -> int:
    """Read the GRM verdict off the answer's first character: 好 1, 差 -1, else 0 (no verdict)."""
    text = content.strip()
    return 1 if text[:1] == GOOD else -1 if text[:1] == BAD else 0
