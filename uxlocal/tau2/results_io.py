"""Read and write tau2's ``results.json`` (spec §B.2), so our runs and tau2's feed the same tools.

Layer contract: this is an edge module, the only one in the package that touches the file system
for output. Writing is atomic (temporary file, then rename). Reading accepts the monolithic file
and tau2's directory form (``results.json`` with ``simulation_index`` plus
``simulations/<id>.json``). Unknown keys survive a read-write cycle at every level.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from uxlocal.errors import InputError, format_validation_error

from .messages import Message, utc_now
from .reward_info import RewardInfo
from .tasks import Task
from .termination import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS

RESULTS_FILE = "results.json"
SIMULATIONS_DIR = "simulations"


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="allow")


class UserInfo(_Tolerant):
    """Which user simulator played the user seat."""

    implementation: str = "user_simulator"
    llm: str | None = None
    llm_args: dict[str, Any] = Field(default_factory=dict)
    global_simulation_guidelines: str | None = None


class AgentInfo(_Tolerant):
    """Which candidate played the agent seat."""

    implementation: str = "llm_agent"
    llm: str | None = None
    llm_args: dict[str, Any] = Field(default_factory=dict)


class EnvironmentInfo(_Tolerant):
    """The domain and the policy text the candidate was given."""

    domain_name: str
    policy: str = ""
    tool_defs: dict[str, Any] | None = None


class RunInfo(_Tolerant):
    """Run-level settings (tau2's ``info``)."""

    git_commit: str = ""
    num_trials: int = 1
    max_steps: int = DEFAULT_MAX_STEPS
    max_errors: int = DEFAULT_MAX_ERRORS
    user_info: UserInfo = Field(default_factory=UserInfo)
    agent_info: AgentInfo = Field(default_factory=AgentInfo)
    environment_info: EnvironmentInfo
    seed: int | None = None


class Simulation(_Tolerant):
    """One episode: a task, a trial, its full trajectory and its reward (tau2's ``SimulationRun``)."""

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    task_id: str
    trial: int = 0
    seed: int | None = None
    timestamp: str = Field(default_factory=utc_now)
    start_time: str | None = None
    end_time: str | None = None
    duration: float = 0.0
    """Seconds from start to end."""
    termination_reason: str
    """One of ``termination.TERMINATION_REASONS``; kept as text so files from newer tau2 still read."""
    agent_cost: float | None = None
    user_cost: float | None = None
    reward_info: RewardInfo | None = None
    messages: list[Message] = Field(default_factory=list)
    """The flat trajectory, ``message_history`` first; ``turn_idx`` is the position."""
    mode: str = "half_duplex"


class Results(_Tolerant):
    """A whole results file: run info, the tasks as run, and every simulation."""

    timestamp: str = Field(default_factory=utc_now)
    info: RunInfo
    tasks: list[Task] = Field(default_factory=list)
    simulations: list[Simulation] = Field(default_factory=list)
    simulation_index: list[dict[str, Any]] | None = None


def write_results(path: str | Path, results: Results) -> Path:
    """Write the monolithic form atomically; a folder path gets ``results.json`` inside it."""
    target = Path(path)
    if target.is_dir():
        target = target / RESULTS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results.model_dump(mode="json"), indent=2, ensure_ascii=False)
    handle, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_results(path: str | Path) -> Results:
    """Read either form; errors name the file and the failing field."""
    source = Path(path)
    if source.is_dir():
        source = source / RESULTS_FILE
    raw = read_json_file(source)
    if not isinstance(raw, dict):
        raise InputError("expected a JSON object with info, tasks and simulations", path=source, line=1)
    folder = source.parent / SIMULATIONS_DIR
    if not raw.get("simulations") and raw.get("simulation_index") and folder.is_dir():
        raw = {
            **raw,
            "simulations": [read_json_file(folder / f"{row['id']}.json") for row in raw["simulation_index"]],
        }
    try:
        return Results.model_validate(raw)
    except ValidationError as err:
        raise InputError(f"not a tau2 results file: {format_validation_error(err)}", path=source) from None


def read_json_file(path: Path) -> Any:
    """Parse a JSON file; a missing or malformed file is an ``InputError`` naming the file and line."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON: {err.msg}", path=path, line=err.lineno) from None
