"""Trajectories in the store, as UFS reads them, and the rows UFS writes next to them.

Any run whose items hold tau2 tasks (``uxlocal run tau2``, ``uxlocal ingest ...``) has
tau2-shaped episodes: ``items.data = {domain, position, task}``, one ``turns`` row per message
with ``meta.message`` the exact tau2 message. ``load_trajectories`` rebuilds them.

Verdict naming (what ``suites/userproxy/views.sql`` reads):

- ``ufs:<criterion_id>``: one judge verdict per (episode, criterion). ``label`` pass | fail |
  not_applicable | invalid, ``score`` 1/0/NULL, ``value`` = ``{criteria_set, criterion_id,
  family, mode, applicable, passed, evidence_turns}``, ``rationale`` the judge's.
- ``precheck:<kind>``: one deterministic pre-check per (episode, kind). ``label`` flagged |
  clean | not_applicable, ``score`` 0/1/NULL, ``judge_role = 'precheck'``, ``judge_model =
  'uxlocal-precheck'``, ``value`` = ``{kind, family, turns, details}``.

A task without graded criteria gets one ``ufs:(none)`` verdict (not applicable), so its
trajectories count as unscorable. Both kinds sit on the trajectory's own (run_id, episode_id); a
grading run that cannot (it has its own run id) names the graded trajectory in its episode's
``info.source_run_id`` and ``info.source_episode_id``, and the views resolve it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from uxlocal.store.db import json_value
from uxlocal.tau2 import Message, Task, domain_spec

from .prechecks import PRECHECK_FAMILY, PrecheckResult, run_prechecks
from .prompts import Grade

PRECHECK_ROLE = "precheck"
PRECHECK_MODEL = "uxlocal-precheck"
"""What pre-check verdict rows carry as judge role and judge model (no model is involved)."""


@dataclass(frozen=True)
class Trajectory:
    """One stored tau2-shaped episode."""

    run_id: str
    episode_id: str
    item_id: str
    domain: str
    task: Task
    messages: tuple[Message, ...]
    termination: str | None
    reward: float | None


def load_trajectories(con: Any, *, run_id: str | None = None) -> list[Trajectory]:
    """Every finished tau2-shaped episode (of one run, or of the whole store), in store order."""
    where, params = "", []
    if run_id is not None:
        where, params = "AND e.run_id = ?", [run_id]
    rows = con.execute(
        "SELECT e.run_id, e.episode_id, e.item_id, e.termination, e.reward, i.data "
        "FROM episodes e JOIN items i ON i.run_id = e.run_id AND i.item_id = e.item_id "
        "WHERE e.status = 'done' AND json_extract(i.data, '$.task') IS NOT NULL "
        f"AND json_extract_string(i.data, '$.domain') IS NOT NULL {where} "
        "ORDER BY e.run_id, e.episode_id",
        params,
    ).fetchall()
    messages: dict[tuple[str, str], list[Message]] = {}
    turn_where = "WHERE t.run_id = ?" if run_id is not None else ""
    for r_id, e_id, meta in con.execute(
        f"SELECT t.run_id, t.episode_id, t.meta FROM turns t {turn_where} "
        "ORDER BY t.run_id, t.episode_id, t.idx",
        params,
    ).fetchall():
        payload = json_value(meta) or {}
        if isinstance(payload, dict) and "message" in payload:
            messages.setdefault((r_id, e_id), []).append(Message.model_validate(payload["message"]))
    tasks: dict[str, Task] = {}
    out = []
    for r_id, e_id, item_id, termination, reward, data in rows:
        data = json_value(data)
        key = f"{r_id}\0{item_id}"
        if key not in tasks:
            tasks[key] = Task.model_validate(data["task"])
        out.append(
            Trajectory(
                r_id,
                e_id,
                item_id,
                data["domain"],
                tasks[key],
                tuple(messages.get((r_id, e_id), [])),
                termination,
                reward,
            )
        )
    return out


def user_tool_names(domain: str, task: Task) -> list[str]:
    """Return the tools the user may call in this task.

    That is the registered domain's user toolkit narrowed by ``task.user_tools``; empty for domains
    without user tools or not registered here.
    """
    try:
        toolkit = domain_spec(domain).user_tools
    except KeyError:
        return []
    names = toolkit.names() if toolkit is not None else []
    return [n for n in names if task.user_tools is None or n in task.user_tools]


def user_write_tools(domain: str) -> list[str] | None:
    """Names of the domain's user-side write tools, or None when the domain is not registered."""
    try:
        toolkit = domain_spec(domain).user_tools
    except KeyError:
        return None
    return [s.name for s in toolkit.tools() if s.kind == "write"] if toolkit is not None else []


# --- verdict rows -----------------------------------------------------------------------------------


def precheck_rows(trajectory: Trajectory, results: Sequence[PrecheckResult]) -> list[dict[str, Any]]:
    """``verdicts`` rows for one trajectory's pre-checks."""
    return [
        {
            "run_id": trajectory.run_id,
            "episode_id": trajectory.episode_id,
            "item_id": trajectory.item_id,
            "name": f"precheck:{r.kind}",
            "judge_role": PRECHECK_ROLE,
            "judge_model": PRECHECK_MODEL,
            "label": r.label,
            "score": r.score,
            "valid": True,
            "label_probs": None,
            "value": {
                "kind": r.kind,
                "family": PRECHECK_FAMILY[r.kind],
                "turns": list(r.turns),
                "details": r.details,
            },
            "rationale": None,
            "request_hash": None,
        }
        for r in results
    ]


def run_store_prechecks(con: Any, *, run_id: str | None = None) -> tuple[int, int]:
    """Compute every pre-check for the store's trajectories and (re)write their verdict rows.

    Idempotent: a trajectory's earlier ``precheck:*`` rows are replaced. Returns (trajectories,
    flagged checks).
    """
    from uxlocal.store.writer import StoreWriter

    trajectories = load_trajectories(con, run_id=run_id)
    rows: list[dict[str, Any]] = []
    for t in trajectories:
        results = run_prechecks(
            t.task,
            t.messages,
            user_tools=user_tool_names(t.domain, t.task),
            write_tools=user_write_tools(t.domain),
        )
        rows.extend(precheck_rows(t, results))
    writer = StoreWriter(con)
    con.execute("BEGIN")
    try:
        for t in trajectories:
            con.execute(
                "DELETE FROM verdicts WHERE run_id = ? AND episode_id = ? AND name LIKE 'precheck:%'",
                [t.run_id, t.episode_id],
            )
        writer.insert_rows("verdicts", rows)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return len(trajectories), sum(1 for r in rows if r["label"] == "flagged")


def grade_value(criteria_set: str, criterion: Any, grade: Grade) -> dict[str, Any]:
    """Build the ``value`` JSON of a ``ufs:<criterion_id>`` verdict (what the views read)."""
    return {
        "criteria_set": criteria_set,
        "criterion_id": criterion.criterion_id,
        "family": criterion.family,
        "mode": criterion.mode,
        "applicable": grade.applicable,
        "passed": grade.passed,
        "evidence_turns": list(grade.evidence_turns),
        "problem": grade.problem,
    }

