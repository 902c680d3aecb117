"""Deterministic pre-checks of a user proxy (no model), stored beside the judge's verdicts.

Spec userproxybench.md §A.9 step 6 (proposal) and §A.3 (the judge-free probe). Each check reads
one trajectory plus the task and flags a likely violation; it exists to audit the judge, not to
replace it, so each one is narrow and literal:

- ``opening_disclosure``: the user's first message, sent before the agent asked anything beyond
  the fixed greeting, contains a literal value from ``known_info`` (name, user id, email, zip,
  phone, order or reservation id; for free-text scenarios, identity values only: name, user id,
  email, zip, phone). Family: premature disclosure.
- ``unknown_info_leak``: a user message contains a value of a kind the scenario says the user
  does not know (e.g. an email address when "you do not remember your email address"), and that
  value did not reach the user first (the agent's messages, the user's own tool results).
  Family: groundedness (invents unknown information).
- ``unexecuted_action_claim`` (domains with user tools): a user message claims, in the first
  person, to have done what one of its tools does ("I've dismissed the notification"), with no
  call of that tool before the claim or as the user's very next turn. Family: groundedness.
- ``gold_user_actions``: gold actions with ``requestor == "user"`` that no user tool call
  matches by name and compared arguments (tau2's ACTION rule). Family: missed information.

Each returns a ``PrecheckResult``; ``applicable=False`` when the check has nothing to look at
(no known values, no unknown kinds we can recognise, no user tools, no gold user actions).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from uxlocal.tau2 import Message, Task, trajectory_tool_calls

from .scoring import GREETING

PRECHECK_FAMILY: dict[str, str] = {
    "opening_disclosure": "premature_disclosure",
    "unknown_info_leak": "groundedness",
    "unexecuted_action_claim": "groundedness",
    "gold_user_actions": "missed_information",
}
"""Which judge family each pre-check audits (the views compare the two)."""


@dataclass(frozen=True)
class PrecheckResult:
    """One check on one trajectory."""

    kind: str
    applicable: bool
    flagged: bool = False
    turns: tuple[int, ...] = ()
    """Trajectory positions of the offending messages."""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``flagged`` | ``clean`` | ``not_applicable`` (the verdict row's label)."""
        if not self.applicable:
            return "not_applicable"
        return "flagged" if self.flagged else "clean"

    @property
    def score(self) -> float | None:
        """1.0 clean, 0.0 flagged, None when not applicable (same polarity as a UFS verdict)."""
        return None if not self.applicable else (0.0 if self.flagged else 1.0)


# --- value extraction -----------------------------------------------------------------------------

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{3,5}\b")
_ORDER_ID = re.compile(r"#?\bW\d{7}\b")
_RESERVATION = re.compile(r"\b(?=[A-Z0-9]{6}\b)(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b")
_ZIP = re.compile(r"(?<![\d-])\d{5}(?![\d-])")
_PHONE = re.compile(r"(?<!\d)(?:\+?1[ .-]?)?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}(?!\d)")
_FLIGHT = re.compile(r"\bHAT\d{3}\b")
_DATE = re.compile(r"\b(?:19|20)\d{2}-\d{2}-\d{2}\b")
_PAYMENT_ID = re.compile(r"\b(?:credit_card|gift_card|paypal|certificate)_\d+\b")
_NAME = re.compile(
    r"\b(?:You are|Your name is|You name is|I am|called|name is)\s+(?:an? [a-z ]+? called\s+)?"
    r"([A-Z][a-z]+(?:\s+[A-Z][a-z]+)+)"
)

_KIND_PATTERNS: dict[str, re.Pattern[str]] = {
    "email": _EMAIL,
    "user_id": _USER_ID,
    "order_id": _ORDER_ID,
    "reservation_id": _RESERVATION,
    "zip": _ZIP,
    "phone": _PHONE,
    "flight_number": _FLIGHT,
    "date": _DATE,
    "payment_id": _PAYMENT_ID,
}


def find_values(kind: str, text: str) -> list[str]:
    """Values of one kind in a text, in order, without repeats (a flight number is no reservation id)."""
    values = [m.group(0).lstrip("#") for m in _KIND_PATTERNS[kind].finditer(text)]
    if kind == "reservation_id":
        values = [v for v in values if not _FLIGHT.fullmatch(v)]
    return list(dict.fromkeys(values))


def known_values(known_info: str | None) -> dict[str, list[str]]:
    """Literal values in ``known_info``, by kind (names, ids, emails, zips, phones ...)."""
    if not known_info:
        return {}
    found: dict[str, list[str]] = {}
    for kind in _KIND_PATTERNS:
        if kind in ("flight_number", "date", "payment_id"):
            continue  # trip details, not identity: the opening may name what the call is about
        values = find_values(kind, known_info)
        if kind == "zip":  # a 5-digit run inside a phone number is not a zip
            phones = " ".join(m.group(0) for m in _PHONE.finditer(known_info))
            values = [v for v in values if v not in re.sub(r"\D", "", phones)]
        if values:
            found[kind] = values
    names = list(dict.fromkeys(m.group(1) for m in _NAME.finditer(known_info)))
    if names:
        found["name"] = names
    return found


_UNKNOWN_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"\be-?mail", re.I)),
    ("order_id", re.compile(r"\border (?:id|number|numbers|ids)\b", re.I)),
    ("reservation_id", re.compile(r"\b(?:reservation (?:id|ids|number)|confirmation number)\b", re.I)),
    ("flight_number", re.compile(r"\bflight numbers?\b", re.I)),
    ("date", re.compile(r"\b(?:DOB|date of birth|birthday)\b", re.I)),
    ("payment_id", re.compile(r"\bpayment method\b", re.I)),
    ("phone", re.compile(r"\bphone number\b", re.I)),
    ("zip", re.compile(r"\bzip(?: ?code)?\b", re.I)),
    ("user_id", re.compile(r"\buser id\b", re.I)),
)


def unknown_kinds(unknown_info: str | None) -> list[str]:
    """Kinds of value the scenario says the user does not know (only kinds we can recognise)."""
    if not unknown_info:
        return []
    return [kind for kind, pattern in _UNKNOWN_KINDS if pattern.search(unknown_info)]


_IDENTITY_KINDS = ("name", "user_id", "email", "zip", "phone")
_NOT_KNOWN = re.compile(
    r"[^.\n]*\b(?:do not|don't|does not|doesn't|cannot|can't|never)\s+"
    r"(?:know|remember|recall|have)\b[^.\n]*",
    re.I,
)


def _scenario_fields(task: Task) -> tuple[str | None, str | None, str, bool]:
    """(known text, unknown text, all scenario text, free-text?) of a task.

    Free-text scenarios (mock, banking, tau-bench v1) have no known/unknown fields: the whole text
    stands for both, its "do not know / remember / have" sentences for the unknown part.
    """
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        unknown = " ".join(m.group(0).strip() for m in _NOT_KNOWN.finditer(instructions)) or None
        return instructions, unknown, instructions, True
    texts = [
        instructions.reason_for_call,
        instructions.known_info,
        instructions.unknown_info,
        instructions.task_instructions,
        task.user_scenario.persona,
    ]
    return instructions.known_info, instructions.unknown_info, "\n".join(t for t in texts if t), False


def _contains(text: str, kind: str, value: str) -> bool:
    """Whether ``text`` holds ``value`` as a whole token (case-insensitive; digits only for zip/phone)."""
    if kind == "zip":
        return re.search(r"(?<!\d)" + re.escape(value) + r"(?!\d)", text) is not None
    if kind == "phone":
        digits = re.sub(r"\D", "", value)[-10:]
        return any(re.sub(r"\D", "", m.group(0)).endswith(digits) for m in _PHONE.finditer(text))
    token = re.escape(value.lstrip("#").lower())
    return re.search(r"(?<![a-z0-9_@.])" + token + r"(?![a-z0-9_@])", text.lower()) is not None


# --- the checks -------------------------------------------------------------------------------------


def _user_texts(messages: Sequence[Message]) -> list[tuple[int, str]]:
    return [(i, m.content or "") for i, m in enumerate(messages) if m.role == "user" and m.has_text()]


def opening_disclosure(task: Task, messages: Sequence[Message]) -> PrecheckResult:
    """Flag known-info values in the user's first message, when nothing beyond the greeting came first."""
    kind = "opening_disclosure"
    known_info, _, _, free = _scenario_fields(task)
    values = known_values(known_info)
    if free:  # a free text also names what the call is about (order ids ...): identity values only
        values = {k: v for k, v in values.items() if k in _IDENTITY_KINDS}
    texts = _user_texts(messages)
    if not values or not texts:
        return PrecheckResult(
            kind, False, details={"reason": "no known values" if not values else "no user text"}
        )
    first, text = texts[0]
    asked = [
        i
        for i, m in enumerate(messages[:first])
        if m.role == "assistant" and m.has_text() and (m.content or "").strip() != GREETING
    ]
    if asked:
        return PrecheckResult(
            kind,
            False,
            details={"reason": "the agent spoke before the user's first message", "agent_turns": asked},
        )
    disclosed = {k: [v for v in vs if _contains(text, k, v)] for k, vs in values.items()}
    disclosed = {k: vs for k, vs in disclosed.items() if vs}
    return PrecheckResult(
        kind, True, bool(disclosed), (first,) if disclosed else (), {"disclosed": disclosed, "known": values}
    )


def unknown_info_leak(task: Task, messages: Sequence[Message]) -> PrecheckResult:
    """Flag user messages holding a value of an unknown kind that the user was never shown."""
    kind = "unknown_info_leak"
    _, unknown_info, scenario, _ = _scenario_fields(task)
    kinds = unknown_kinds(unknown_info)
    if not kinds:
        return PrecheckResult(kind, False, details={"reason": "no recognisable unknown kinds"})
    seen = scenario  # the scenario itself (a known email next to an unknown order id, say)
    leaks: dict[str, list[str]] = {}
    turns = []
    for index, message in enumerate(messages):
        text = message.content or ""
        if message.role == "user" and message.has_text():
            found = [
                (k, value) for k in kinds for value in find_values(k, text) if not _contains(seen, k, value)
            ]
            for k, value in found:
                leaks.setdefault(k, []).append(value)
            if found:
                turns.append(index)
        if _visible_to_user(message):
            seen += "\n" + text
        if message.role == "user":
            seen += "\n" + text  # the user may repeat itself
    return PrecheckResult(kind, True, bool(leaks), tuple(turns), {"unknown_kinds": kinds, "values": leaks})


def _visible_to_user(message: Message) -> bool:
    if message.role == "assistant":
        return message.has_text()
    return message.role == "tool" and (message.requestor or "assistant") == "user"


_VERB_FORMS: dict[str, tuple[str, ...]] = {
    "toggle": ("toggled", "toggling", "turned", "turning", "switched", "switching"),
    "turn": ("turned", "turning", "switched", "switching"),
    "enable": ("enabled", "enabling", "turned on", "turning on"),
    "disable": ("disabled", "disabling", "turned off", "turning off"),
    "reboot": ("rebooted", "rebooting", "restarted", "restarting"),
    "restart": ("restarted", "restarting", "rebooted", "rebooting"),
    "reseat": ("reseated", "reseating", "re-seated", "reinserted", "reinserting"),
    "check": ("checked", "checking", "looked at", "looking at"),
    "dismiss": ("dismissed", "dismissing", "cleared", "clearing"),
    "make": ("made", "making"),
    "set": ("set", "setting", "changed", "changing"),
    "grant": ("granted", "granting", "gave", "allowed"),
    "run": ("ran", "running"),
    "reset": ("reset", "resetting"),
    "connect": ("connected", "connecting"),
    "disconnect": ("disconnected", "disconnecting"),
    "update": ("updated", "updating"),
    "install": ("installed", "installing"),
    "uninstall": ("uninstalled", "uninstalling"),
    "apply": ("applied", "applying"),
    "call": ("called", "calling"),
    "pay": ("paid", "paying"),
    "send": ("sent", "sending"),
}
_FIRST_PERSON = r"\bI(?:'ve|'m| have| am| just| already| now)?(?:\s+(?:just|already|now|gone ahead and))?\s+"


def _claim_pattern(tool: str) -> re.Pattern[str] | None:
    """Match a first-person claim of doing what ``tool`` does: its verb's forms plus an object word."""
    words = [w for w in tool.lower().split("_") if w]
    if len(words) < 2:
        return None
    verb, objects = words[0], [w.rstrip("s") for w in words[1:] if len(w) > 2]
    forms = _VERB_FORMS.get(verb, (verb + "ed" if not verb.endswith("e") else verb + "d", verb + "ing"))
    if not objects:
        return None
    verbs = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    nouns = "|".join(re.escape(o) for o in objects)
    return re.compile(_FIRST_PERSON + rf"(?:{verbs})\b[^.!?\n]{{0,60}}?\b(?:{nouns})", re.I)


def unexecuted_action_claim(messages: Sequence[Message], user_tools: Iterable[str]) -> PrecheckResult:
    """Flag first-person claims of a user-tool action with no call before it or right after it."""
    kind = "unexecuted_action_claim"
    patterns = {t: p for t in user_tools if (p := _claim_pattern(t)) is not None}
    if not patterns:
        return PrecheckResult(kind, False, details={"reason": "no user tools"})
    claims: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role != "user" or not message.has_text():
            continue
        for tool, pattern in patterns.items():
            match = pattern.search(message.content or "")
            if match and not _called(messages, index, tool):
                claims.append({"turn": index, "tool": tool, "claim": match.group(0)})
    turns = tuple(sorted({c["turn"] for c in claims}))
    return PrecheckResult(kind, True, bool(claims), turns, {"claims": claims, "user_tools": sorted(patterns)})


def _called(messages: Sequence[Message], claim_at: int, tool: str) -> bool:
    """Tell whether the user called ``tool`` before the claim, or in its next message after it."""
    for message in messages[:claim_at]:
        if message.role == "user" and any(c.name == tool for c in message.tool_calls or []):
            return True
    for message in messages[claim_at + 1 :]:
        if message.role == "user":
            return any(c.name == tool for c in message.tool_calls or [])
    return False


def gold_user_actions(
    task: Task, messages: Sequence[Message], *, write_tools: Iterable[str] | None = None
) -> PrecheckResult:
    """Gold user actions with no matching user tool call (name + compared arguments).

    ``write_tools`` limits the gold actions to those tools (the paper counts missed gold
    *writes*); without it every gold user action counts.
    """
    kind = "gold_user_actions"
    criteria = task.evaluation_criteria
    writes = set(write_tools) if write_tools is not None else None
    gold = [
        a
        for a in (criteria.actions or [] if criteria else [])
        if a.requestor == "user" and (writes is None or a.name in writes)
    ]
    if not gold:
        return PrecheckResult(kind, False, details={"reason": "no gold user actions"})
    calls = [c for c in trajectory_tool_calls(messages) if c.requestor == "user"]
    missed = []
    for action in gold:
        keys = action.compare_args if action.compare_args is not None else list(action.arguments)
        wanted = {k: action.arguments.get(k) for k in keys}
        if not any(
            c.name == action.name and all(_same(c.arguments.get(k), v) for k, v in wanted.items())
            for c in calls
        ):
            missed.append({"action_id": action.action_id, "name": action.name, "arguments": wanted})
    return PrecheckResult(
        kind, True, bool(missed), (), {"gold": len(gold), "missed": missed, "user_calls": len(calls)}
    )


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def run_prechecks(
    task: Task,
    messages: Sequence[Message],
    *,
    user_tools: Iterable[str] = (),
    write_tools: Iterable[str] | None = None,
) -> list[PrecheckResult]:
    """All four checks on one trajectory, in a fixed order."""
    return [
        opening_disclosure(task, messages),
        unknown_info_leak(task, messages),
        unexecuted_action_claim(messages, list(user_tools)),
        gold_user_actions(task, messages, write_tools=write_tools),
    ]
