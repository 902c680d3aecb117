"""Export a tau2 run from the store to tau2's ``results.json`` (spec §B.2), one file per domain.

The store is the source: every message is rebuilt from its ``turns`` row (``meta.message`` holds
the exact tau2 message the episode produced), each model message gets its cost from its
generation's tokens and the model preset's prices, ``agent_cost``/``user_cost`` come from the
``episode_cost`` view, and ``reward_info`` from the episode's ``info``. Episodes that failed
with a bug are exported as ``infrastructure_error`` with no messages, which tau2's metrics leave out.

Layer contract: an edge module; it reads the store and writes files through ``results_io`` only.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from uxlocal.store.db import json_value
from uxlocal.tau2 import (
    INFRASTRUCTURE_ERROR,
    AgentInfo,
    EnvironmentInfo,
    Message,
    Results,
    RewardInfo,
    RunInfo,
    Simulation,
    Task,
    UserInfo,
    utc_now,
    write_results,
)
from uxlocal.tau2.episode import AGENT_ROLE, USER_ROLE


def export_run(con: Any, run_id: str, path: Path, *, settings: Mapping[str, Any],
               policies: Mapping[str, str], guidelines: Mapping[str, str]) -> list[Path]:
    """Write the run's results; ``path`` is the file for one domain, a folder for several.

    ``settings`` carries the run-level values tau2 records (``num_trials``, ``max_steps``,
    ``max_errors``, ``seed``, ``agent_llm_args``, ``user_llm_args``); ``policies`` and
    ``guidelines`` map each domain to the policy the agent was given and the user's guidelines.
    """
    tasks = _tasks(con, run_id)
    simulations = _simulations(con, run_id)
    models = dict(con.execute("SELECT role, model_name FROM run_models WHERE run_id = ?",
                              [run_id]).fetchall())
    commit = con.execute("SELECT git_commit FROM runs WHERE run_id = ?", [run_id]).fetchone()
    written = []
    for domain in sorted(tasks):
        info = RunInfo(
            git_commit=(commit[0] if commit else None) or "",
            num_trials=int(settings.get("num_trials", 1)),
            max_steps=int(settings["max_steps"]),
            max_errors=int(settings["max_errors"]),
            user_info=UserInfo(llm=models.get(USER_ROLE), llm_args=dict(settings.get("user_llm_args", {})),
                               global_simulation_guidelines=guidelines.get(domain)),
            agent_info=AgentInfo(llm=models.get(AGENT_ROLE),
                                 llm_args=dict(settings.get("agent_llm_args", {}))),
            environment_info=EnvironmentInfo(domain_name=domain, policy=policies.get(domain, "")),
            seed=settings.get("seed"),
        )
        results = Results(info=info, tasks=tasks[domain], simulations=simulations.get(domain, []))
        target = path if len(tasks) == 1 else path / domain / "results.json"
        written.append(write_results(target, results))
    return written


def _tasks(con: Any, run_id: str) -> dict[str, list[Task]]:
    """Read the tasks as run, per domain, in plan order (items hold each task's full JSON)."""
    rows = con.execute("SELECT task, data FROM items WHERE run_id = ?", [run_id]).fetchall()
    ordered = sorted((json_value(data) for _, data in rows), key=lambda d: d["position"])
    tasks: dict[str, list[Task]] = defaultdict(list)
    for data in ordered:
        tasks[data["domain"]].append(Task.model_validate(data["task"]))
    return dict(tasks)


def _simulations(con: Any, run_id: str) -> dict[str, list[Simulation]]:
    messages = _messages(con, run_id)
    costs = _role_costs(con, run_id)
    rows = con.execute(
        "SELECT episode_id, item_id, task, trial, status, termination, info, started_at, ended_at "
        "FROM episodes WHERE run_id = ? ORDER BY task, item_id, trial", [run_id]).fetchall()
    out: dict[str, list[Simulation]] = defaultdict(list)
    for episode_id, item_id, domain, trial, status, termination, info, started, ended in rows:
        info = json_value(info) or {}
        failed = status != "done"
        note = f"episode failed: {str(info.get('error', ''))[-300:]}"
        unscored = failed or info.get("reward_info") is None
        if not failed and unscored:  # the upstream protocol's infrastructure error: no reward info
            note = f"infrastructure error: {info.get('termination_detail', '')}"
        reward_info = (RewardInfo(reward=0.0, info={"note": note}) if unscored
                       else RewardInfo.model_validate(info["reward_info"]))
        cost = costs.get(episode_id, {})
        out[domain].append(Simulation(
            id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"uxlocal:{run_id}:{episode_id}")),
            task_id=item_id.split("/", 1)[1], trial=int(trial or 0),
            timestamp=ended.isoformat() if ended else str(info.get("end_time") or utc_now()),
            start_time=started.isoformat() if started else None,
            end_time=ended.isoformat() if ended else None,
            duration=float(info.get("duration") or 0.0),
            termination_reason=INFRASTRUCTURE_ERROR if failed else termination,
            agent_cost=cost.get(AGENT_ROLE, 0.0), user_cost=cost.get(USER_ROLE, 0.0),
            reward_info=reward_info, messages=[] if failed else messages.get(episode_id, []),
        ))
    return dict(out)


def _messages(con: Any, run_id: str) -> dict[str, list[Message]]:
    """Every episode's trajectory from its turns, with each model message's cost in USD."""
    rows = con.execute(
        "SELECT t.episode_id, t.meta, "
        "  (g.prompt_tokens * coalesce(m.price_input_per_mtok, 0) "
        "   + g.completion_tokens * coalesce(m.price_output_per_mtok, 0)) / 1e6 AS cost_usd "
        "FROM turns t LEFT JOIN generations g USING (request_hash) "
        "LEFT JOIN models m ON m.model_identity = g.model_identity "
        "WHERE t.run_id = ? ORDER BY t.episode_id, t.idx", [run_id]).fetchall()
    out: dict[str, list[Message]] = defaultdict(list)
    for episode_id, meta, cost in rows:
        message = Message.model_validate((json_value(meta) or {})["message"])
        if cost is not None:
            message = message.model_copy(update={"cost": float(cost)})
        out[episode_id].append(message)
    return dict(out)


def _role_costs(con: Any, run_id: str) -> dict[str, dict[str, float]]:
    rows = con.execute("SELECT episode_id, role, cost_usd FROM episode_cost WHERE run_id = ?",
                       [run_id]).fetchall()
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for episode_id, role, cost in rows:
        out[episode_id][role] = float(cost or 0.0)
    return dict(out)

