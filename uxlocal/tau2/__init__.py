"""Model-free tau2 runtime: tasks, environments (mock, retail, airline), reward, results.json.

Layer contract: no model calls, no store, no logging setup; only ``results_io`` writes files.
The orchestrator, the candidate seat and the user-simulator seat live elsewhere and use the names
below. Typical episode::

    domain = load_domain(data_dir, "retail")            # once per process (cached)
    task = load_tasks(data_dir, "retail", task_ids=["0"])[0]
    env = Environment.for_task(domain, task)            # per episode: microseconds
    env.tool_schemas("assistant"), env.tool_schemas("user"), env.policy_text()
    result = env.call(name, arguments, requestor="assistant")   # never raises
    draft = score_episode(domain, task, messages, USER_STOP)    # phase 1, model-free
    info = draft.finish(verdicts if draft.needs_judge else None)  # phase 2
"""

from .env import Environment, InitialStateError, ReplayMismatch, ToolResult
from .layout import available_domains, tau2_root
from .messages import Message, ToolCall, trajectory_tool_calls, utc_now
from .registry import (
    DEFAULT_TAU2_VERSION,
    TAU2_VERSIONS,
    Domain,
    DomainDB,
    DomainSpec,
    domain_spec,
    load_domain,
    register_domain,
)
from .results_io import (
    AgentInfo,
    EnvironmentInfo,
    Results,
    RunInfo,
    Simulation,
    UserInfo,
    read_results,
    write_results,
)
from .reward import NLJudge, NLVerdict, RewardDraft, compute_reward, judge_transcript, score_episode
from .reward_info import RewardInfo
from .tasks import (
    DEFAULT_SPLIT,
    Action,
    EnvAssertion,
    EvaluationCriteria,
    InitialState,
    RewardType,
    Task,
    UserScenario,
    available_splits,
    load_tasks,
    render_scenario,
)
from .termination import (
    AGENT_ERROR,
    AGENT_STOP,
    CONTEXT_WINDOW_EXCEEDED,
    DEFAULT_MAX_ERRORS,
    DEFAULT_MAX_STEPS,
    INFRASTRUCTURE_ERROR,
    MAX_STEPS,
    SCORED_TERMINATIONS,
    TERMINATION_REASONS,
    TIMEOUT,
    TOO_MANY_ERRORS,
    UNEXPECTED_ERROR,
    USER_ERROR,
    USER_STOP,
    USER_STOP_TOKENS,
    TerminationReason,
    is_scored,
    user_stop_token,
)
from .toolkit import ToolError, Toolkit, arg

__all__ = [
    "AGENT_ERROR",
    "AGENT_STOP",
    "Action",
    "AgentInfo",
    "CONTEXT_WINDOW_EXCEEDED",
    "DEFAULT_MAX_ERRORS",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_SPLIT",
    "DEFAULT_TAU2_VERSION",
    "Domain",
    "DomainDB",
    "DomainSpec",
    "EnvAssertion",
    "Environment",
    "EnvironmentInfo",
    "EvaluationCriteria",
    "INFRASTRUCTURE_ERROR",
    "InitialState",
    "InitialStateError",
    "MAX_STEPS",
    "Message",
    "NLJudge",
    "NLVerdict",
    "ReplayMismatch",
    "Results",
    "RewardDraft",
    "RewardInfo",
    "RewardType",
    "RunInfo",
    "SCORED_TERMINATIONS",
    "Simulation",
    "TAU2_VERSIONS",
    "TERMINATION_REASONS",
    "TIMEOUT",
    "TOO_MANY_ERRORS",
    "Task",
    "TerminationReason",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "Toolkit",
    "UNEXPECTED_ERROR",
    "USER_ERROR",
    "USER_STOP",
    "USER_STOP_TOKENS",
    "UserInfo",
    "UserScenario",
    "arg",
    "available_domains",
    "available_splits",
    "compute_reward",
    "domain_spec",
    "is_scored",
    "judge_transcript",
    "load_domain",
    "load_tasks",
    "read_results",
    "register_domain",
    "render_scenario",
    "score_episode",
    "tau2_root",
    "trajectory_tool_calls",
    "user_stop_token",
    "utc_now",
    "write_results",
]
