"""Load external trajectories into the store: tau2 ``results.json`` and tau-bench v1 result files.

Ingested trajectories get the same rows a ``uxlocal run tau2`` episode writes, so the tau2
views, the UFS grading, the pre-checks and the UserProxyBench views treat them alike:

- ``runs``: one per file, ``suite = 'tau2'``, run id ``tau2-ingest-<first 12 hex of the file's
  sha256>``; ingesting the same bytes again finds the run and adds nothing.
- ``models`` / ``run_models``: the file's user model as role ``user`` (the proxy) and its agent
  model as role ``agent``, identity ``external:<name>``, no prices (the file's own USD costs are
  kept per episode instead).
- ``items``: one per task, ``<domain>/<task id>``, data ``{domain, position, task}``.
- ``episodes``: one per simulation, ``<domain>/<task id>/trial-<k>``; ``info`` holds
  ``reward_info``, the simulation's other fields (``simulation``), and the user side's cost,
  tokens and generation seconds as the file reports them.
- ``turns``: one per message, ``meta.message`` the exact tau2 message; ``tool_calls``: one per
  call with its result.

tau-bench v1 files (a JSON list of ``{task_id, reward, info, traj, trial}``) are converted to
tau2's shapes first: the agent's system prompt is dropped, the v1 instruction becomes a free-text
tau2 scenario, v1 gold actions become tau2 actions. v1 files do not record how a conversation
ended: an ``info.error`` means ``infrastructure_error``, a user stop token ``user_stop``, an agent
transfer ``agent_stop`` (v1 ends the episode there), anything else ``max_steps``.

``rebuild_results`` reads an ingested run back as a tau2 ``Results``; for a tau2 file it equals
what ``read_results`` gave (the round-trip the tests check).

Layer contract: an edge module; it writes the store through the given connection, in one
transaction per file, and reads only the file it is given.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uxlocal.errors import InputError
from uxlocal.store.db import json_value
from uxlocal.store.writer import StoreWriter
from uxlocal.tau2 import (
    AGENT_STOP,
    INFRASTRUCTURE_ERROR,
    MAX_STEPS,
    USER_STOP,
    Action,
    AgentInfo,
    EnvironmentInfo,
    EvaluationCriteria,
    Message,
    Results,
    RewardInfo,
    RunInfo,
    Simulation,
    Task,
    ToolCall,
    UserInfo,
    UserScenario,
    read_results,
    user_stop_token,
)
from uxlocal.tau2.episode import AGENT_ROLE, USER_ROLE  # the seats ``uxlocal run tau2`` binds (proxy = user)
from uxlocal.tau2.results_io import read_json_file

SUITE = "tau2"
RUN_PREFIX = "tau2-ingest-"


@dataclass(frozen=True)
class IngestReport:
    """What one ingest did."""

    run_id: str
    domain: str
    tasks: int
    episodes: int
    proxy: str
    agent: str
    already: bool = False
    """The file was ingested before; nothing was written."""


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (the ingest run's identity)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ingest_tau2(
    con: Any, path: str | Path, *, proxy: str | None = None, agent: str | None = None
) -> IngestReport:
    """Ingest a tau2 results file (monolithic or directory form)."""
    source = Path(path)
    results = read_results(source)
    data_file = source / "results.json" if source.is_dir() else source
    return _ingest(con, results, fmt="tau2", source=data_file, proxy=proxy, agent=agent)


def ingest_taubench_v1(
    con: Any,
    path: str | Path,
    *,
    domain: str | None = None,
    proxy: str | None = None,
    agent: str | None = None,
) -> IngestReport:
    """Ingest a tau-bench v1 result file; ``domain`` is detected from the trajectories if not given."""
    source = Path(path)
    results = read_taubench_v1(source, domain=domain, proxy=proxy, agent=agent)
    return _ingest(con, results, fmt="taubench-v1", source=source, proxy=proxy, agent=agent)


# --- the store rows -------------------------------------------------------------------------------


def _ingest(
    con: Any, results: Results, *, fmt: str, source: Path, proxy: str | None, agent: str | None
) -> IngestReport:
    domain = results.info.environment_info.domain_name
    digest = file_sha256(source)
    run_id = RUN_PREFIX + digest[:12]
    proxy_name = proxy or results.info.user_info.llm or "unknown-user"
    agent_name = agent or results.info.agent_info.llm or "unknown-agent"
    if con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]:
        episodes = con.execute("SELECT count(*) FROM episodes WHERE run_id = ?", [run_id]).fetchone()[0]
        return IngestReport(run_id, domain, len(results.tasks), int(episodes), proxy_name, agent_name, True)
    tasks = {t.id: t for t in results.tasks}
    missing = sorted({s.task_id for s in results.simulations} - set(tasks))
    if missing:
        raise InputError(f"simulations name tasks missing from its 'tasks': {', '.join(missing[:5])}",
                         path=source)
    now = dt.datetime.now(dt.timezone.utc)
    rows: dict[str, list[dict[str, Any]]] = {"items": [], "episodes": [], "turns": [], "tool_calls": []}
    for position, task in enumerate(results.tasks):
        rows["items"].append(
            {
                "run_id": run_id,
                "item_id": f"{domain}/{task.id}",
                "task": domain,
                "data": {"domain": domain, "position": position, "task": task.model_dump(mode="json")},
                "source_file": str(source),
            }
        )
    seen: set[str] = set()
    for sim in results.simulations:
        episode_id = f"{domain}/{sim.task_id}/trial-{sim.trial}"
        if episode_id in seen:  # two simulations of one task and trial: keep both, apart
            episode_id = f"{episode_id}/{sim.id}"
        seen.add(episode_id)
        _episode_rows(rows, run_id, episode_id, domain, sim, now)
    config = {
        "suite": SUITE,
        "source": "ingest",
        "format": fmt,
        "file": str(source),
        "file_sha256": digest,
        "timestamp": results.timestamp,
        "info": results.info.model_dump(mode="json"),
        "simulation_index": results.simulation_index,
        "extra": _extra(results),
        "simulation_order": [s.id for s in results.simulations],
    }
    writer = StoreWriter(con)
    con.execute("BEGIN")
    try:
        con.execute(
            "INSERT INTO runs (run_id, suite, config, config_sha256, versions, git_commit, status, "
            "started_at, ended_at, wall_s, engine_calls, engine_busy_s) "
            "VALUES (?, ?, ?, ?, NULL, NULL, 'done', ?, ?, 0, 0, 0)",
            [run_id, SUITE, json.dumps(config, sort_keys=True, ensure_ascii=False), digest, now, now],
        )
        for role, name in ((USER_ROLE, proxy_name), (AGENT_ROLE, agent_name)):
            identity = f"external:{name}"
            con.execute(
                "INSERT OR IGNORE INTO models (model_identity, name, backend) VALUES (?, ?, 'external')",
                [identity, name],
            )
            con.execute("INSERT INTO run_models VALUES (?, ?, ?, ?)", [run_id, role, identity, name])
        for table, part in rows.items():
            writer.insert_rows(table, part)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return IngestReport(run_id, domain, len(results.tasks), len(results.simulations), proxy_name, agent_name)


def _extra(model: Any) -> dict[str, Any]:
    return dict(model.model_extra or {})


def _episode_rows(
    rows: dict[str, list[dict[str, Any]]],
    run_id: str,
    episode_id: str,
    domain: str,
    sim: Simulation,
    now: dt.datetime,
) -> None:
    messages = sim.messages
    reward = sim.reward_info.reward if sim.reward_info is not None else None
    info = {
        "domain": domain,
        "task_id": sim.task_id,
        "trial": sim.trial,
        "source": "ingest",
        "reward_info": sim.reward_info.model_dump(mode="json") if sim.reward_info is not None else None,
        "simulation": sim.model_dump(mode="json", exclude={"messages"}),
        "user_cost": sim.user_cost,
        "agent_cost": sim.agent_cost,
        "user_usage": _usage(messages, "user"),
        "agent_usage": _usage(messages, "assistant"),
    }
    rows["episodes"].append(
        {
            "run_id": run_id,
            "episode_id": episode_id,
            "item_id": f"{domain}/{sim.task_id}",
            "task": domain,
            "trial": sim.trial,
            "status": "done",
            "termination": sim.termination_reason,
            "reward": reward,
            "info": info,
            "n_turns": len(messages),
            "started_at": _when(sim.start_time) or now,
            "ended_at": _when(sim.end_time) or now,
        }
    )
    results = {m.id: m for m in messages if m.role == "tool" and m.id}
    for idx, message in enumerate(messages):
        seat = {"user": USER_ROLE, "assistant": AGENT_ROLE}.get(message.role)
        rows["turns"].append(
            {
                "run_id": run_id,
                "episode_id": episode_id,
                "idx": idx,
                "role": message.role,
                "content": turn_text(message),
                "model_role": seat,
                "request_hash": None,
                "meta": {"message": message.model_dump(mode="json")},
            }
        )
        for k, call in enumerate(message.tool_calls or []):
            answer = results.get(call.id) if call.id else None
            failed = answer is not None and answer.error
            rows["tool_calls"].append(
                {
                    "run_id": run_id,
                    "episode_id": episode_id,
                    "turn_idx": idx,
                    "call_idx": k,
                    "requestor": call.requestor if "requestor" in call.model_fields_set else message.role,
                    "name": call.name,
                    "arguments": call.arguments,
                    "ok": None if answer is None else not answer.error,
                    "result": answer.content if answer is not None else None,
                    "error": (answer.content if failed and answer is not None else None),
                }
            )


def turn_text(message: Message) -> str:
    """``turns.content`` as ``uxlocal run tau2`` writes it: the text, then each call as protocol JSON."""
    if message.tool_calls:
        calls = [
            json.dumps({"tool": c.name, "arguments": c.arguments}, ensure_ascii=False)
            for c in message.tool_calls
        ]
        text = [message.content.strip()] if message.has_text() and message.content else []
        return "\n".join(text + calls)
    return message.content or ""


def _usage(messages: Sequence[Message], role: str) -> dict[str, float]:
    """Tokens and generation seconds of one side's messages, as the file recorded them."""
    prompt = completion = 0
    seconds = 0.0
    for m in messages:
        if m.role != role:
            continue
        usage = m.usage or {}
        prompt += int(usage.get("prompt_tokens") or 0)
        completion += int(usage.get("completion_tokens") or 0)
        extra = m.model_extra or {}
        seconds += float(extra.get("generation_time_seconds") or 0.0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "generation_s": seconds}


def _when(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


# --- reading an ingested run back ------------------------------------------------------------------


def rebuild_results(con: Any, run_id: str) -> Results:
    """Read an ingested run back as tau2 ``Results`` (tasks, simulations with messages, run info)."""
    row = con.execute("SELECT config FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        raise InputError(f"no run {run_id!r} in the store")
    config = json_value(row[0])
    if config.get("source") != "ingest":
        raise InputError(f"run {run_id!r} was not ingested from a file")
    items = sorted(
        (
            json_value(d)
            for (d,) in con.execute("SELECT data FROM items WHERE run_id = ?", [run_id]).fetchall()
        ),
        key=lambda d: d["position"],
    )
    messages: dict[str, list[Message]] = {}
    for episode_id, meta in con.execute(
        "SELECT episode_id, meta FROM turns WHERE run_id = ? ORDER BY episode_id, idx", [run_id]
    ).fetchall():
        messages.setdefault(episode_id, []).append(Message.model_validate(json_value(meta)["message"]))
    simulations = []
    for episode_id, info in con.execute(
        "SELECT episode_id, info FROM episodes WHERE run_id = ? ORDER BY episode_id", [run_id]
    ).fetchall():
        payload = json_value(info)["simulation"]
        simulations.append(
            (
                payload,
                Simulation.model_validate(
                    {**payload, "messages": [m.model_dump(mode="json") for m in messages.get(episode_id, [])]}
                ),
            )
        )
    order = {sim_id: k for k, sim_id in enumerate(config.get("simulation_order") or [])}
    simulations.sort(key=lambda p: (order.get(p[0]["id"], len(order)), p[0]["id"]))
    return Results.model_validate(
        {
            "timestamp": config["timestamp"],
            "info": config["info"],
            **config.get("extra", {}),
            "tasks": [d["task"] for d in items],
            "simulations": [s.model_dump(mode="json") for _, s in simulations],
            "simulation_index": config.get("simulation_index"),
        }
    )



# --- tau-bench v1 ----------------------------------------------------------------------------------

_V1_NAME = re.compile(
    r"^(?P<strategy>tool-calling|few-shot|react|act|[a-z]+)-(?P<model>.+)-(?P<temperature>[\d.]+)_range_"
    r"\d+--?\d+_user-(?P<user>.+)-(?P<user_strategy>[a-z]+)_\d"
)
_DOMAIN_TOOLS = {
    "airline": {
        "book_reservation",
        "search_direct_flight",
        "search_onestop_flight",
        "get_reservation_details",
        "update_reservation_flights",
        "update_reservation_baggages",
        "cancel_reservation",
        "send_certificate",
        "list_all_airports",
    },
    "retail": {
        "find_user_id_by_email",
        "find_user_id_by_name_zip",
        "get_order_details",
        "get_product_details",
        "cancel_pending_order",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
        "modify_pending_order_items",
        "modify_pending_order_address",
        "list_all_product_types",
    },
}


def read_taubench_v1(
    path: Path, *, domain: str | None = None, proxy: str | None = None, agent: str | None = None
) -> Results:
    """Convert a tau-bench v1 result file to tau2 ``Results`` (see the module docstring)."""
    raw = read_json_file(path)
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise InputError("expected a JSON list of tau-bench results ({task_id, reward, info, traj, trial})",
                         path=path, line=1)
    for k, record in enumerate(raw):
        missing = [key for key in ("task_id", "reward", "info", "traj") if key not in record]
        if missing:
            raise InputError(f"result {k}: missing {', '.join(missing)}", path=path)
    name = _V1_NAME.match(path.name)
    domain = domain or _detect_domain(path, raw)
    tasks: dict[str, Task] = {}
    simulations = []
    for record in raw:
        task = _v1_task(path, record, domain)
        tasks.setdefault(task.id, task)
        simulations.append(_v1_simulation(record, task.id))
    info = RunInfo(
        num_trials=1 + max((int(r.get("trial") or 0) for r in raw), default=0),
        max_steps=30,
        user_info=UserInfo(
            implementation="taubench_v1_user",
            llm=proxy or (name.group("user") if name else None),
            llm_args={"strategy": name.group("user_strategy")} if name else {},
        ),
        agent_info=AgentInfo(
            implementation=name.group("strategy") if name else "taubench_v1_agent",
            llm=agent or (name.group("model") if name else None),
        ),
        environment_info=EnvironmentInfo(domain_name=domain),
    )
    return Results(
        info=info, tasks=sorted(tasks.values(), key=lambda t: _numeric(t.id)), simulations=simulations
    )


def _numeric(task_id: str) -> tuple[int, str]:
    return (int(task_id), "") if task_id.isdigit() else (1 << 30, task_id)


def _detect_domain(path: Path, raw: list[dict[str, Any]]) -> str:
    """Which domain a v1 file is from: the tool names its trajectories and gold actions use."""
    votes = {d: 0 for d in _DOMAIN_TOOLS}
    for record in raw:
        names = {a.get("name") for a in ((record.get("info") or {}).get("task") or {}).get("actions", [])}
        for message in record.get("traj") or []:
            for call in message.get("tool_calls") or []:
                names.add((call.get("function") or {}).get("name"))
        for d, tools in _DOMAIN_TOOLS.items():
            votes[d] += len(names & tools)
    best = sorted(votes.items(), key=lambda kv: -kv[1])
    if best[0][1] == 0 or best[0][1] == best[1][1]:
        raise InputError("cannot tell the domain from the tool names", "pass --domain retail|airline",
                         path=path)
    return best[0][0]


def _v1_task(path: Path, record: dict[str, Any], domain: str) -> Task:
    task = (record.get("info") or {}).get("task") or {}
    instruction = task.get("instruction")
    if not isinstance(instruction, str):
        raise InputError(f"task {record['task_id']}: info.task.instruction is missing", path=path)
    actions = [
        Action(
            action_id=f"{record['task_id']}_{k}",
            requestor="assistant",
            name=a["name"],
            arguments=a.get("kwargs") or {},
        )
        for k, a in enumerate(task.get("actions") or [])
    ]
    outputs = list(task.get("outputs") or [])
    criteria = EvaluationCriteria(
        actions=actions, communicate_info=outputs, reward_basis=["DB", "COMMUNICATE"] if outputs else ["DB"]
    )
    return Task.model_validate(
        {
            "id": str(record["task_id"]),
            "user_scenario": UserScenario(instructions=instruction).model_dump(),
            "evaluation_criteria": criteria.model_dump(),
            "taubench_v1": {"user_id": task.get("user_id"), "domain": domain},
        }
    )


def _v1_simulation(record: dict[str, Any], task_id: str) -> Simulation:
    messages = _v1_messages(record.get("traj") or [])
    info = record.get("info") or {}
    if info.get("error"):
        termination = INFRASTRUCTURE_ERROR
    elif any(m.role == "user" and user_stop_token(m.content or "") for m in messages):
        termination = USER_STOP
    elif any(
        c.name == "transfer_to_human_agents"
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls or []
    ):
        termination = AGENT_STOP  # v1 ends the episode when the agent transfers
    else:
        termination = MAX_STEPS
    reward = float(record.get("reward") or 0.0)
    trial = int(record.get("trial") or 0)
    return Simulation(
        id=f"taubench-v1-{task_id}-{trial}",
        task_id=task_id,
        trial=trial,
        termination_reason=termination,
        user_cost=info.get("user_cost"),
        reward_info=RewardInfo(reward=reward, info={"taubench_v1": info.get("reward_info")}),
        messages=messages,
    )


def _v1_messages(traj: list[dict[str, Any]]) -> list[Message]:
    """v1's agent-side OpenAI chat -> tau2 messages (system prompt dropped, positions renumbered)."""
    out: list[Message] = []
    for raw in traj:
        role = raw.get("role")
        if role == "system":
            continue
        index = len(out)
        if role == "tool":
            content = str(raw.get("content") or "")
            out.append(
                Message(
                    role="tool",
                    id=raw.get("tool_call_id") or "",
                    content=content,
                    requestor="assistant",
                    error=content.startswith("Error"),
                    turn_idx=index,
                )
            )
        elif role in ("user", "assistant"):
            calls = [_v1_call(c) for c in raw.get("tool_calls") or [] if c.get("function")]
            out.append(
                Message(role=role, content=raw.get("content"), tool_calls=calls or None, turn_idx=index)
            )
    return out


def _v1_call(raw: dict[str, Any]) -> ToolCall:
    function = raw["function"]
    arguments = function.get("arguments") or "{}"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            arguments = {"_unparsed": arguments}
    return ToolCall(
        id=raw.get("id") or "", name=function.get("name") or "", arguments=arguments, requestor="assistant"
    )
