"""Replay the recorded cases of one domain through our runtime and compare with upstream, call by call.

A case is one scripted episode (``cases.json``): a task, calls from either seat, an optional
closing message, and whether it is scored. Each runs as upstream's recorder ran it: a fresh
environment with the task's initial state, every call through the live tool path, then the
reward on ``user_stop`` with every NL assertion judged met. Per call we compare the error flag,
the exact output text (after the random-value rules), the canonical state hash and the change
the call made; per scored case the reward and every reward-info component.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..env import Environment
from ..messages import Message, ToolCall
from ..registry import Domain, load_domain
from ..reward import score_episode
from ..reward_info import RewardInfo
from ..tasks import Task, load_tasks
from ..termination import USER_STOP
from ..tool_words import ToolWordsError, structure
from .state import RandomIds, StateCanon, normalise_text, serialise, sha16, state_delta

COMPONENTS = ("reward", "reward_basis", "reward_breakdown", "db_match", "env_assertions",
              "action_checks", "communicate_checks", "nl_assertions")
"""The reward-info fields the recording keeps per scored case (``reward_record``)."""

TEXT_KEPT = 20_000
"""Characters of each side kept with a text mismatch (enough to find where long outputs differ)."""


@dataclass
class DomainReport:
    """Counts and the first mismatches of one domain's replay."""

    domain: str
    schemas_agent: tuple[int, int] = (0, 0)
    """(tools JSON-equal to upstream's, upstream's tool count) for the agent seat."""
    schemas_user: tuple[int, int] = (0, 0)
    words_error: str | None = None
    """Why upstream's words could not be loaded (a structure mismatch); schemas then count ours."""
    cases: int = 0
    calls: int = 0
    error_same: int = 0
    text_same: int = 0
    state_same: int = 0
    change_same: int = 0
    initial_same: int = 0
    scored: int = 0
    reward_same: int = 0
    components_same: int = 0
    upstream_raised: int = 0
    """Scored cases whose evaluation raised upstream (its bug 4); not in the reward rates."""
    setup_errors: int = 0
    seconds: float = 0.0
    classes: Counter[tuple[str, str]] = field(default_factory=Counter)
    mismatches: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def rate(self, hits: int, total: int) -> float:
        """``hits / total`` (1.0 when there is nothing to count)."""
        return hits / total if total else 1.0

    def note(self, kind: str, label: str, detail: dict[str, Any], keep: int) -> None:
        """Count a mismatch class and keep the first ``keep`` examples of each kind."""
        self.classes[(kind, label)] += 1
        examples = self.mismatches.setdefault(kind, [])
        if len(examples) < keep:
            examples.append(detail)

    def as_json(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("classes",)}
        out["classes"] = [[k, label, n] for (k, label), n in self.classes.most_common()]
        return out


def compare_domain(name: str, recording: Path, data_dir: Path, *, keep: int = 20,
                   limit: int | None = None, words: str = "recording") -> DomainReport:
    """Replay every recorded case of ``name`` (or the first ``limit``) and count the agreement.

    ``words``: where the tool words come from, ``recording`` (its ``tools_*.json``) or ``data``
    (what ``load_domain`` finds without a tools folder: a tau2-bench checkout's ``src/``, else ours).
    """
    folder = recording / name
    cases = _read(folder / "cases.json")["cases"]
    upstream = _read(folder / "upstream_outputs.json")
    report = DomainReport(name)
    started = time.perf_counter()
    try:
        tools_dir = recording if words == "recording" else recording / "(none)"
        domain = load_domain(data_dir, name, tools_dir=tools_dir)
    except ToolWordsError as err:
        report.words_error = str(err)
        domain = load_domain(data_dir, name, tools_dir=recording / "(none)")
    _compare_schemas(report, domain, folder, keep)
    tasks = {t.id: t for t in load_tasks(data_dir, name, split=None)}
    canon = StateCanon()
    by_id = {c["case_id"]: c for c in upstream["cases"]}
    for case in cases[:limit] if limit else cases:
        _compare_case(report, domain, tasks.get(case["task_id"]), case, by_id[case["case_id"]],
                      upstream["tasks"].get(case["task_id"], {}), canon, keep)
    report.seconds = time.perf_counter() - started
    return report


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _compare_schemas(report: DomainReport, domain: Domain, folder: Path, keep: int) -> None:
    env = Environment(domain)
    for seat, file in (("assistant", "tools_agent.json"), ("user", "tools_user.json")):
        theirs = [s["function"] for s in _read(folder / file)["tools"]]
        ours = {s["function"]["name"]: s["function"] for s in env.tool_schemas(seat)}  # type: ignore[arg-type]
        same = 0
        for function in theirs:
            mine = ours.get(function["name"])
            if mine is not None and all(serialise(mine.get(k)) == serialise(function.get(k))
                                        for k in ("name", "description", "parameters")):
                same += 1
                continue
            what = "missing" if mine is None else (
                "parameters" if structure(mine) != structure(function) else "words")
            report.note(
                "schema", f"{seat}:{what}", {"tool": f"{seat}:{function['name']}", "differs": what}, keep
            )
        counts = (same, len(theirs))
        if seat == "assistant":
            report.schemas_agent = counts
        else:
            report.schemas_user = counts


def _compare_case(report: DomainReport, domain: Domain, task: Task | None, case: dict[str, Any],
                  up: dict[str, Any], up_task: dict[str, Any], canon: StateCanon, keep: int) -> None:
    report.cases += 1
    report.calls += len(case["calls"])
    if task is None or "setup_error" in up:
        report.setup_errors += 1
        report.note(
            "setup", str(up.get("setup_error") or "no such task")[:80], {"case": case["case_id"]}, keep
        )
        return
    env = Environment.for_task(domain, task)
    before, initial_hash = canon.state(env.agent_db, env.user_db)
    report.initial_same += initial_hash == up_task.get("initial_state_hash")
    ids = RandomIds(domain.name, before)
    messages: list[Message] = []
    for index, (call, recorded) in enumerate(zip(case["calls"], up["calls"], strict=True)):
        tool_call = ToolCall(id=call.get("id") or f"call_{index}", name=call["name"],
                             arguments=call["arguments"], requestor=call["requestor"])
        result = env.call_tool(tool_call)
        messages += [Message.calls(call["requestor"], [tool_call]),
                     Message.tool_result(tool_call, result.content, error=not result.ok)]
        after, digest = canon.state(env.agent_db, env.user_db)
        ids.observe(after)
        if ids.names:
            after = ids.rename(after)
            digest = sha16(serialise(after))
        where = {"case": case["case_id"], "call": index, "tool": f"{call['requestor']}:{call['name']}",
                 "args": serialise(call["arguments"])[:160]}
        _compare_call(report, where, recorded, result.ok, normalise_text(result.content, ids),
                      state_delta(before, after), digest, keep)
        before = after
    if case.get("closing_message"):
        messages.append(Message.text("assistant", case["closing_message"]))
    if case.get("score"):
        _compare_reward(report, domain, task, messages, case, up, keep)


def _compare_call(report: DomainReport, where: dict[str, Any], recorded: dict[str, Any], ok: bool,
                  text: str, delta: list[list[Any]], digest: str, keep: int) -> None:
    tool = where["tool"]
    if recorded["error"] == (not ok):
        report.error_same += 1
    else:
        report.note("error", f"{tool} upstream={'error' if recorded['error'] else 'ok'}",
                    {**where, "upstream": recorded["content"][:TEXT_KEPT], "ours": text[:TEXT_KEPT]}, keep)
    if recorded["content"] == text:
        report.text_same += 1
    else:
        report.note("text", f"{tool} {'error' if recorded['error'] else 'ok'}",
                    {**where, "upstream": recorded["content"][:TEXT_KEPT], "ours": text[:TEXT_KEPT]}, keep)
    theirs = {e[0]: serialise(e[1:]) for e in recorded.get("state_delta") or []}
    mine = {e[0]: serialise(e[1:]) for e in delta}
    if theirs == mine:
        report.change_same += 1
    if recorded["state_hash"] == digest:
        report.state_same += 1
    else:
        differing = sorted(k for k in set(theirs) | set(mine) if theirs.get(k) != mine.get(k))
        report.note("state", f"{tool} {' '.join(differing[:2]) or '(earlier difference)'}"[:160],
                    {**where, "upstream_delta": serialise(recorded.get("state_delta"))[:300],
                     "our_delta": serialise(delta)[:300]}, keep)


def reward_record(info: RewardInfo) -> dict[str, Any]:
    """Return the components the recording keeps of a reward info (``null`` where the field is null)."""
    data = info.model_dump(mode="json")

    def mets(key: str, flag: str) -> list[bool] | None:
        checks = data.get(key)
        return None if checks is None else [bool(c.get(flag)) for c in checks]

    db = data.get("db_check")
    basis = data.get("reward_basis")
    return {
        "reward": data.get("reward"),
        "reward_basis": None if basis is None else [str(b) for b in basis],
        "reward_breakdown": {str(k): v for k, v in (data.get("reward_breakdown") or {}).items()} or None,
        "db_match": None if db is None else bool(db.get("db_match")),
        "env_assertions": mets("env_assertions", "met"),
        "action_checks": mets("action_checks", "action_match"),
        "communicate_checks": mets("communicate_checks", "met"),
        "nl_assertions": mets("nl_assertions", "met"),
    }


def _compare_reward(report: DomainReport, domain: Domain, task: Task, messages: list[Message],
                    case: dict[str, Any], up: dict[str, Any], keep: int) -> None:
    if up.get("reward_error"):
        report.upstream_raised += 1
        return
    report.scored += 1
    draft = score_episode(domain, task, messages, USER_STOP)
    verdicts = [(True, "stub judge: met")] * len(draft.nl_assertions) if draft.needs_judge else None
    ours = reward_record(draft.finish(verdicts))
    theirs = up.get("reward") or {}
    if theirs.get("reward") is not None and abs(float(theirs["reward"]) - float(ours["reward"] or 0)) < 1e-9:
        report.reward_same += 1
    differing = [k for k in COMPONENTS if component(theirs.get(k)) != component(ours.get(k))]
    if not differing:
        report.components_same += 1
    else:
        report.note("reward", f"{case['kind']} upstream={theirs.get('reward')} ours={ours['reward']} "
                    f"[{','.join(differing)}]",
                    {"case": case["case_id"], "task": case["task_id"],
                     "upstream": {k: theirs.get(k) for k in differing},
                     "ours": {k: ours.get(k) for k in differing}}, keep)


def component(value: Any) -> Any:
    """Return a component as compared: numbers as floats, empty lists and maps as null."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {k: component(v) for k, v in value.items()} or None
    if isinstance(value, list):
        return [component(v) for v in value] or None
    return value
