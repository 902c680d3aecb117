"""``uxlocal run tau2``: tau2-bench tasks offline, with local agent, user-proxy and judge models.

Plan: one episode per (domain, task, trial), id ``<domain>/<task id>/trial-<k>``, and one
``items`` row per task holding the whole task. Every episode is a tau2 episode program in the
protocol of its domain (``play_trajectory``); the scheduler batches all of them per model. Metrics
are the views in ``suites/tau2/views.sql``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.engine.base import Sampling
from uxlocal.episode import EpisodeSpec
from uxlocal.errors import InputError
from uxlocal.reportkit.model import ReportTable
from uxlocal.store.db import query
from uxlocal.suites.base import DemoSpec, Suite, SuitePlan
from uxlocal.tau2 import Domain, Environment, Task
from uxlocal.tau2.data import demo_data, resolve_data_dir
from uxlocal.tau2.episode import AGENT_ROLE, JUDGE_ROLE, NOT_COMPARABLE, USER_ROLE, Tau2Options, parse_domains
from uxlocal.tau2.episode.setups import DomainSetups, Setup, play_trajectory, task_item
from uxlocal.tau2.episode.user_proxy import guidelines
from uxlocal.tau2.tasks import task_source
from uxlocal.tau2.upstream_words import Tau2Words

from .export import export_run


class Tau2Config(Tau2Options):
    """Options of ``uxlocal run tau2``."""

    not_in_identity: ClassVar[dict[str, str]] = {
        **Tau2Options.not_in_identity,
        "export_tau2": "where a copy of the results goes, not what they are",
    }

    domain: str = "retail"
    """tau2 domain (mock, retail, airline, telecom, banking_knowledge; homenet is our bundled sample; all =
    the four UserProxyBench domains); several, comma-separated."""
    judge_nl: Literal["gating", "always"] = "gating"
    """Judge NL assertions only where they gate the reward, or always (as a diagnostic)."""
    export_tau2: Path | None = None
    """Also write tau2's results.json here (a folder with one file per domain if several)."""

    def domains(self) -> list[str]:
        """Return the domain names in the order given; unknown domains are an input error."""
        return parse_domains(self.domain, "--domain")


class Tau2Suite(Suite):
    """tau2-bench text mode with local models in the agent, user and judge seats."""

    name = "tau2"
    report_section = "uxlocal.suites.tau2.section"
    help = "Run tau2-bench tasks offline: local agent, user-proxy and NL-judge models."
    config_cls = Tau2Config
    roles = (AGENT_ROLE, USER_ROLE, JUDGE_ROLE)

    def prompt_hashes(self, config: SuiteConfig) -> dict[str, str]:
        """Our prompt files plus every data file the run reads (policy, tasks, splits, DBs)."""
        assert isinstance(config, Tau2Config)
        return config.tau2_hashes(config.domains())

    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """One episode per (domain, task, trial); ``--limit`` caps the tasks per domain."""
        assert isinstance(config, Tau2Config)
        root = resolve_data_dir(config.tau2_data)
        plan = SuitePlan(episodes=[])
        for name in config.domains():
            domain = config.load_domain(root, name)
            tasks = config.selected_tasks(root, name, run.limit)
            _add_domain(plan, config, domain, tasks, source=task_source(root, name),
                        words=config.upstream_words(root, name))
        if not plan.episodes:
            raise InputError("no tau2 tasks selected", "check --split, --tasks and --limit")
        return plan

    def after_run(self, config: SuiteConfig, con: Any, run_id: str) -> list[str]:
        """Write tau2's results.json when ``--export-tau2`` is given."""
        assert isinstance(config, Tau2Config)
        if config.export_tau2 is None:
            return []
        root = resolve_data_dir(config.tau2_data)
        domains = {name: config.load_domain(root, name) for name in config.domains()}
        seed = con.execute("SELECT json_extract(config, '$.seed') FROM runs WHERE run_id = ?",
                           [run_id]).fetchone()
        settings = {
            "num_trials": config.trials, "max_steps": config.max_steps, "max_errors": config.max_errors,
            "seed": int(seed[0]) if seed and seed[0] is not None else None,
            "agent_llm_args": _llm_args(config.sampling(AGENT_ROLE)),
            "user_llm_args": _llm_args(config.sampling(USER_ROLE)),
        }
        written = export_run(
            con, run_id, config.export_tau2, settings=settings,
            policies={name: d.policy_text() for name, d in domains.items()},
            guidelines={name: _recorded_guidelines(config, root, d) for name, d in domains.items()},
        )
        return [f"tau2 results.json written: {path}" for path in written]

    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """Reward, pass^k, terminations and cost, from the ``tau2_*`` views."""
        tables = []
        for title, view, columns, order, note in _REPORTS:
            cols, rows = query(con, f"SELECT {columns} FROM {view} WHERE run_id = ? ORDER BY {order}",
                               [run_id])
            tables.append(ReportTable(title, cols, rows, note))
        return tables

    def demo(self) -> DemoSpec:
        """Two tasks with short budgets: tau2's mock domain if its data is here, else our sample domain.

        Both fit the embedded model's 2k window (retail and airline agent prompts need about 4.5k).
        """
        roles = {AGENT_ROLE: "embedded", USER_ROLE: "embedded", JUDGE_ROLE: "embedded"}
        data = demo_data()
        config = {"tau2_data": str(data.root), "domain": data.domain, "max_steps": 8, "agent_max_tokens": 96,
                  "user_max_tokens": 48, "judge_max_tokens": 64}
        return DemoSpec(config, roles, limit=2, data=data.description)


_REPORTS = (
    ("tau2 reward", "tau2_summary",
     "domain, episodes, tasks, avg_reward, success_rate, infrastructure_errors, comparable, mean_turns, "
     "mean_tool_calls, mean_user_tool_calls, mean_tool_errors", "domain",
     "reward = product of the task's reward-basis checks; infrastructure errors are left out (as tau2 does) "
     "and counted; comparable = every episode sent what tau2-bench sends (a checkout's words and protocol), "
     f"false = {NOT_COMPARABLE}"),
    ("tau2 pass^k", "tau2_pass_k", "domain, k, pass_k, tasks", "domain, k",
     "pass^k = mean over tasks of C(successes, k) / C(trials, k)"),
    ("tau2 terminations", "tau2_terminations",
     "domain, termination, episodes, share, mean_reward, mean_turns", "domain, episodes DESC, termination",
     "only user_stop/agent_stop episodes are scored; every other ending gets reward 0"),
    ("tau2 cost per episode", "tau2_cost",
     "domain, role, episodes, generations, tokens_per_episode, cost_per_episode_usd, total_cost_usd",
     "domain, role",
     "USD from tokens x the model presets' prices (episode_cost view)"),
)


def _add_domain(plan: SuitePlan, config: Tau2Config, domain: Domain, tasks: list[Task], *,
                source: Path, words: Tau2Words | None) -> None:
    """Items and episodes of one domain; the agent seat is shared by all its episodes.

    With upstream's ``words`` every episode runs the upstream protocol; without, ours.
    """
    setups = DomainSetups(config, domain, words, judge_always=config.judge_nl == "always")
    for task in tasks:
        item = task_item(domain, task, len(plan.items), source)
        plan.items.append(item)
        per_trial = setups.per_trial(task, config.sampling(USER_ROLE))
        for trial in range(config.trials):
            plan.episodes.append(EpisodeSpec(f"{item['item_id']}/trial-{trial}", _bind(per_trial(trial)),
                                             item_id=item["item_id"], task=domain.name, trial=trial))
    plan.notes.append(f"{domain.name}: {len(tasks)} tasks x {config.trials} trial(s), "
                      f"split {config.split!r}, max_steps {config.max_steps}, max_errors {config.max_errors}")
    plan.notes.append(config.protocol_note(domain.name, words))


def _bind(setup: Setup) -> Any:
    return lambda ctx: _episode(ctx, setup)


def _episode(ctx: Any, setup: Setup) -> Any:
    """Run a tau2 episode in its setup's protocol; returns its ``Outcome``."""
    outcome, _ = yield from play_trajectory(ctx, setup)
    return outcome


def _llm_args(sampling: Sampling) -> dict[str, Any]:
    return {"temperature": sampling.temperature, "max_tokens": sampling.max_tokens}


def _recorded_guidelines(config: Tau2Config, root: Path, domain: Domain) -> str:
    """Return the guidelines ``results.json`` records: upstream's file under its protocol, else ours."""
    words = config.upstream_words(root, domain.name)
    if words is not None:
        return words.guidelines_file()
    return guidelines(Environment(domain).tool_schemas("user"))
