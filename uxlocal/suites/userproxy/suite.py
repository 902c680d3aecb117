"""``uxlocal run userproxy``: UserProxyBench, several user proxies on the same tau2 episodes, graded by UFS.

Spec userproxybench.md Part A (§A.6, §A.9). For every selected (domain, task, trial) and every
proxy in ``--proxies`` there is one episode, id ``<domain>/<task id>/<proxy>/trial-<k>``. Each
is a tau2 episode (the ``tau2`` suite's orchestrator and seats, unchanged) whose user seat is
played by model role ``user:<proxy>``, so generations, tokens and cost are attributed per proxy,
followed in the same episode by ``grading_program``: one judge request per frozen criterion of
the task, sent as one batch, recorded as ``ufs:<criterion_id>`` verdicts on the trajectory
itself. The agent, its sampling and seeds (one per task and trial when the agent samples) and the
judge are the same for every proxy, so proxies differ only by what the user seat does. After the
episodes, the deterministic pre-checks run on the run's trajectories (``precheck:<kind>``
verdicts). Metrics are the views in ``suites/userproxy/views.sql`` (read through ``ufs/report.py``).

"Unchanged" above means the tau2 seats are reused as they are: ``UserSeat`` only takes the model
role to ask, and ``tau2_trajectory`` hands the finished messages to the grading step.

Proxy specs (``--proxies P1,P2``): each entry is a model preset, a model folder, or either with
``@temp=T`` appended (``embedded@temp=0.7``), which seats the same model at user temperature
``T`` instead of ``--user-temperature``. The entry as typed is the proxy's name (``info.proxy``,
the ``proxy`` column of the views) and its role is ``user:<entry>``; two variants of one model
share one engine. An explicit ``--model user:<entry>=SPEC`` wins over the entry's own model.

Criteria come from a frozen set in the store (``--criteria-set NAME``, written by ``uxlocal ufs
criteria`` or ``uxlocal ufs criteria-import``) or from a JSONL file (``--criteria-file F``,
screened and frozen into the set ``--criteria-set`` or ``file:<stem>`` before any episode runs).
Every selected task must have criteria in the set, written against the blueprint this run's user
seat sees; otherwise the run stops before it starts, with an ``InputError``. The blueprint carries
what the proxy reads (``ufs/sets.py``'s ``Contract``): in the upstream protocol tau2-bench's
guidelines file and user tool schemas from the checkout (``--contract tau2``), in ours our user
seat's guidelines and tool schemas (``--contract ours``). Criteria written for one are refused for
the other, saying which they were written for. Each task's coverage (which scenario fields a graded
criterion is grounded in, ``ufs/coverage.py``) goes into its item and the run's notes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.engine.base import Sampling
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.errors import InputError
from uxlocal.reportkit.model import ReportTable
from uxlocal.store.db import query
from uxlocal.suites.base import DemoSpec, Suite, SuitePlan
from uxlocal.suites.userproxy.run_criteria import check_run_criteria, played_contract, run_criteria
from uxlocal.suites.userproxy.ufs.coverage import coverage_note, field_coverage
from uxlocal.suites.userproxy.ufs.criteria import Blueprint
from uxlocal.suites.userproxy.ufs.episodes import run_store_prechecks
from uxlocal.suites.userproxy.ufs.programs import GradingJob, graded_criteria, grading_program
from uxlocal.suites.userproxy.ufs.prompts import prompt_hashes as ufs_prompt_hashes
from uxlocal.suites.userproxy.ufs.report import ufs_tables
from uxlocal.suites.userproxy.ufs.sets import OURS, TAU2
from uxlocal.suites.userproxy.ufs.store import TaskCriteria
from uxlocal.tau2 import INFRASTRUCTURE_ERROR, Domain, Task
from uxlocal.tau2.data import demo_data, resolve_data_dir
from uxlocal.tau2.episode import (
    AGENT_ROLE,
    JUDGE_ROLE,
    NOT_COMPARABLE,
    USER_ROLE,
    Tau2Options,
    parse_domains,
)
from uxlocal.tau2.episode.setups import DomainSetups, Setup, play_trajectory, task_item
from uxlocal.tau2.tasks import task_source
from uxlocal.tau2.upstream_words import Tau2Words

TEMPLATE_SET = "template"
"""Criteria set ``--criteria-template`` fills when no ``--criteria-set`` is named."""
DEMO_PROXIES = ("embedded@temp=0", "embedded@temp=0.7")
PROXY_ROLE_PREFIX = "user:"
"""Model role of a proxy: ``user:<proxy name>``."""
_TEMP_SUFFIX = "@temp="


@dataclass(frozen=True)
class Proxy:
    """One ``--proxies`` entry: its name (as typed), the model spec, and its own temperature, if any."""

    name: str
    spec: str
    temperature: float | None = None

    @property
    def role(self) -> str:
        """The model role this proxy's user seat asks (``user:<name>``)."""
        return PROXY_ROLE_PREFIX + self.name


def parse_proxies(text: str | None) -> list[Proxy]:
    """Read ``--proxies``: comma-separated ``SPEC`` or ``SPEC@temp=T``; names must be unique."""
    entries = [part.strip() for part in (text or "").split(",") if part.strip()]
    if not entries:
        raise InputError("--proxies names no user proxy",
                         "e.g. --proxies embedded or --proxies embedded@temp=0,embedded@temp=0.7")
    proxies: list[Proxy] = []
    for entry in entries:
        spec, sep, raw = entry.partition(_TEMP_SUFFIX)
        temperature = None
        if sep:
            try:
                temperature = float(raw)
            except ValueError:
                temperature = -1.0
            if not spec or temperature < 0:
                raise InputError(f"--proxies entry {entry!r}: expected SPEC@temp=T with T >= 0",
                                 "e.g. embedded@temp=0.7")
        if any(p.name == entry for p in proxies):
            raise InputError(f"--proxies names {entry!r} twice")
        proxies.append(Proxy(entry, spec, temperature))
    return proxies


class UserProxyConfig(Tau2Options):
    """Options of ``uxlocal run userproxy``."""

    not_in_identity: ClassVar[dict[str, str]] = {
        **Tau2Options.not_in_identity,
        "criteria_file": "where the file sits; its sha256 is in the identity instead",
    }

    proxies: str | None = None
    """User proxies to compare, comma-separated: preset, folder, or either with @temp=T (required)."""
    domains: str = "mock"
    """tau2 domains (mock, retail, airline, telecom, banking_knowledge; homenet: our sample; all = the four
    UserProxyBench domains, 375 tasks), comma-separated, same tasks per proxy."""
    criteria_set: str | None = None
    """Frozen criteria set to grade against (or the set name --criteria-file is frozen into)."""
    criteria_file: Path | None = None
    """Criteria JSONL file, screened and frozen into --criteria-set (default name file:<stem>)."""
    criteria_template: bool = False
    """Give selected tasks the set lacks rule-based template criteria (no model; default set: template)."""
    grader_max_tokens: int = Field(default=512, ge=24)
    """Completion budget of one UFS criterion grade (tokens)."""

    def domain_names(self) -> list[str]:
        """Return the ``--domains`` names in order; unknown domains are an input error."""
        return parse_domains(self.domains, "--domains")

    def proxy_list(self) -> list[Proxy]:
        """Return the ``--proxies`` entries (an ``InputError`` when none or malformed)."""
        return parse_proxies(self.proxies)

    def set_name(self) -> str:
        """Return the criteria set graded against; one of --criteria-set / --criteria-file is required."""
        if self.criteria_set:
            return self.criteria_set
        if self.criteria_file is not None:
            return f"file:{self.criteria_file.stem}"
        if self.criteria_template:
            return TEMPLATE_SET
        raise InputError(
            "no criteria to grade against",
            "pass --criteria-set NAME (written by `uxlocal ufs criteria`) or --criteria-file F.jsonl",
        )

    def contract_source(self) -> str:
        """Return the ``ufs criteria --contract`` whose blueprints hold what this run's proxies read."""
        if self.protocol == "ours" or self.agent_first_tool is not None:
            return OURS
        return TAU2 if self.protocol == "upstream" else "auto"

    def user_sampling(self, proxy: Proxy) -> Sampling:
        """Return one proxy's user-seat decoding settings."""
        temperature = self.user_temperature if proxy.temperature is None else proxy.temperature
        return Sampling(temperature=temperature, max_tokens=self.user_max_tokens)


class UserProxySuite(Suite):
    """Compare user proxies on the same tau2 episodes by User Fidelity Score."""

    name = "userproxy"
    report_section = "uxlocal.suites.userproxy.section"
    help = ("Compare user proxies on the same tau2 episodes: agent reward, UFS, violations, cost, frontier. "
            "Needs --proxies P1,P2 and --criteria-set, --criteria-file or --criteria-template.")
    config_cls = UserProxyConfig
    roles = (AGENT_ROLE, JUDGE_ROLE)

    def demo(self) -> DemoSpec:
        """Return the demo's settings: two tasks, two user temperatures, short budgets.

        The tasks are tau2's mock, else our sample domain; the embedded model plays at two user
        temperatures, graded by template criteria.
        """
        roles = {AGENT_ROLE: "embedded", JUDGE_ROLE: "embedded",
                 **{f"{PROXY_ROLE_PREFIX}{p}": "embedded" for p in DEMO_PROXIES}}
        data = demo_data()
        config = {"tau2_data": str(data.root), "domains": data.domain, "proxies": ",".join(DEMO_PROXIES),
                  "criteria_template": True, "max_steps": 6, "agent_max_tokens": 64, "user_max_tokens": 32,
                  "judge_max_tokens": 48, "grader_max_tokens": 64}
        return DemoSpec(config, roles, limit=2, data=data.description)

    def role_specs(self, config: SuiteConfig, specs: dict[str, str]) -> dict[str, str]:
        """Add ``user:<proxy>`` per ``--proxies`` entry (an explicit ``--model user:<proxy>=`` wins)."""
        assert isinstance(config, UserProxyConfig)
        out = dict(specs)
        for proxy in config.proxy_list():
            out.setdefault(proxy.role, proxy.spec)
        return out

    def prompt_hashes(self, config: SuiteConfig) -> dict[str, str]:
        """tau2 and UFS prompts, every tau2 data file read, and the criteria file (if any)."""
        assert isinstance(config, UserProxyConfig)
        hashes = {**config.tau2_hashes(config.domain_names()), **ufs_prompt_hashes()}
        if config.criteria_file is not None:
            hashes["criteria-file"] = _file_sha256(config.criteria_file)
        return hashes

    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """One episode per (domain, task, proxy, trial); ``--limit`` caps the tasks per domain."""
        assert isinstance(config, UserProxyConfig)
        proxies = config.proxy_list()
        set_name = config.set_name()
        root = resolve_data_dir(config.tau2_data)
        selected = []
        for name in config.domain_names():
            tasks = config.selected_tasks(root, name, run.limit)
            selected.append((config.load_domain(root, name), tasks))
        if not any(tasks for _, tasks in selected):
            raise InputError("no tau2 tasks selected", "check --split, --tasks and --limit")
        words = {d.name: config.upstream_words(root, d.name) for d, _ in selected}
        contracts = {name: played_contract(w) for name, w in words.items()}
        blueprints = {(d.name, t.id): contracts[d.name].blueprint(d, t)
                      for d, tasks in selected for t in tasks}
        stored = run_criteria(run, config, set_name, root, blueprints, contracts)
        check_run_criteria(set_name, blueprints, stored, config, root, selected, contracts)
        plan = SuitePlan(episodes=[])
        for domain, tasks in selected:
            graded = {t.id: (blueprints[(domain.name, t.id)], stored[(domain.name, t.id)]) for t in tasks}
            _add_domain(plan, config, run.seed, domain, tasks, proxies, set_name, graded,
                        source=task_source(root, domain.name), words=words[domain.name])
            plan.notes.append(config.protocol_note(domain.name, words[domain.name]))
            plan.notes.append(f"{domain.name}: criteria grounded in {contracts[domain.name].describe()}")
        plan.notes.append(coverage_note([field_coverage(bp, stored[key].graded())
                                         for key, bp in blueprints.items()]))
        plan.notes.append(f"proxies: {', '.join(p.name for p in proxies)}; criteria set {set_name!r}")
        return plan

    def after_run(self, config: SuiteConfig, con: Any, run_id: str) -> list[str]:
        """Run the deterministic pre-checks on this run's trajectories."""
        trajectories, flagged = run_store_prechecks(con, run_id=run_id)
        return [f"pre-checks on {trajectories} trajectories: {flagged} flagged (view ufs_prechecks)"]

    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """Return UFS by proxy (with intervals), domain and family, then effort, the frontier, pre-checks."""
        proxies = [r[0] for r in con.execute(
            "SELECT DISTINCT json_extract_string(info, '$.proxy') FROM episodes WHERE run_id = ? "
            "ORDER BY 1", [run_id]).fetchall() if r[0] is not None]
        sets = [r[0] for r in con.execute(
            "SELECT DISTINCT json_extract_string(info, '$.ufs.criteria_set') FROM episodes WHERE run_id = ? "
            "ORDER BY 1",
            [run_id]).fetchall() if r[0] is not None]
        if not proxies or not sets:
            return []
        tables = ufs_tables(con, [run_id])  # the report's UFS section shows the same tables
        marks = ", ".join("?" for _ in proxies)
        where = f"criteria_set = ? AND proxy IN ({marks})"
        params = [sets[0], *proxies]
        for title, view, columns, note in _REPORTS:
            cols, rows = query(con, f"SELECT {columns} FROM {view} WHERE {where} ORDER BY ALL", params)
            tables.append(ReportTable(title, cols, rows, note))
        cols, rows = query(
            con,
            "SELECT proxy, kind, family, count(*) AS episodes, count(*) FILTER (WHERE flagged) AS flagged "
            "FROM ufs_prechecks WHERE run_id = ? GROUP BY ALL ORDER BY proxy, kind",
            [run_id],
        )
        tables.append(ReportTable("Pre-checks (no model)", cols, rows, "deterministic audits of the judge"))
        cols, rows = query(
            con,
            "SELECT domain, count(*) AS tasks, sum(fields) AS fields, sum(covered) AS covered, "
            "string_agg(item_id || ': ' || uncovered, '; ' ORDER BY item_id) FILTER (WHERE uncovered <> '') "
            "AS uncovered FROM ufs_coverage WHERE run_id = ? GROUP BY domain ORDER BY domain",
            [run_id],
        )
        tables.append(ReportTable("Criteria coverage of scenario fields", cols, rows,
                                  "a field is covered when a graded criterion quotes its span from it"))
        cols, rows = query(con, "SELECT domain, proxy, episodes, infrastructure_errors, failed, comparable "
                                "FROM ufs_protocol WHERE run_id = ? ORDER BY domain, proxy", [run_id])
        tables.append(ReportTable("Episodes left out and comparability", cols, rows,
                                  "infrastructure errors and failed episodes are left out of every number; "
                                  f"comparable false = {NOT_COMPARABLE} (our protocol and words)"))
        return tables


_REPORTS = (
    (
        "Agent effort when a family is violated",
        "ufs_effort_deltas",
        "proxy, family, n_with, n_without, tool_calls_with, tool_calls_without, "
        "delta_tool_calls, delta_questions",
        "agent tool calls and questions, episodes with a violation minus those without",
    ),
    (
        "Cost-fidelity frontier",
        "ufs_frontier",
        "proxy, judge_model, mean_ufs, mean_reward, cost_per_sim_usd, dominated, dominated_by, frontier_rank",
        "a proxy is dominated when another is no costlier and no less faithful (one strictly)",
    ),
)


# --- episodes -------------------------------------------------------------------------------------


def _add_domain(plan: SuitePlan, config: UserProxyConfig, seed: int, domain: Domain, tasks: list[Task],
                proxies: list[Proxy], set_name: str, graded: dict[str, tuple[Blueprint, TaskCriteria]], *,
                source: Path, words: Tau2Words | None) -> None:
    """Items, and one episode per (task, proxy, trial); agent and judge seats are shared.

    With upstream's ``words`` the episodes run the upstream protocol (every proxy gets upstream's
    user request; the agent's seed is the trial's, the same for every proxy); else ours.
    """
    setups = DomainSetups(config, domain, words)
    grader = Sampling(temperature=0.0, max_tokens=config.grader_max_tokens)
    for task in tasks:
        item = task_item(domain, task, len(plan.items), source)
        blueprint, criteria = graded[task.id]
        item["data"]["ufs_coverage"] = field_coverage(blueprint, criteria.graded()).as_json()
        plan.items.append(item)
        item_id = item["item_id"]
        job = GradingJob(set_name, blueprint, graded_criteria(criteria.graded()), (), grader)
        for proxy in proxies:
            per_trial = setups.per_trial(task, config.user_sampling(proxy), proxy.role,
                                         agent_seed=partial(_seed, seed, item_id))
            for trial in range(config.trials):
                plan.episodes.append(EpisodeSpec(f"{item_id}/{proxy.name}/trial-{trial}",
                                                 _bind(per_trial(trial), job, proxy.name), item_id=item_id,
                                                 task=domain.name, trial=trial))
    plan.notes.append(
        f"{domain.name}: {len(tasks)} tasks x {len(proxies)} proxies x {config.trials} trial(s), "
        f"split {config.split!r}, max_steps {config.max_steps}"
    )


def userproxy_episode(ctx: EpisodeContext, setup: Setup, job: GradingJob, proxy: str) -> Any:
    """Run a tau2 episode, then UFS grading of its trajectory; ``info.proxy`` names the proxy."""
    outcome, messages = yield from play_trajectory(ctx, setup)
    info = {**outcome.info, "proxy": proxy}
    if outcome.termination != INFRASTRUCTURE_ERROR:
        graded = yield from grading_program(ctx, replace(job, trajectory=tuple(messages)))
        info["ufs"] = graded.info
    return Outcome(outcome.termination, reward=outcome.reward, info=info)


def _bind(setup: Setup, job: GradingJob, proxy: str) -> Any:
    return lambda ctx: userproxy_episode(ctx, setup, job, proxy)


def _seed(base: int, item_id: str, trial: int) -> int:
    return int(hashlib.sha256(f"{base}:{item_id}:{trial}".encode()).hexdigest()[:8], 16)


def _file_sha256(path: Path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        raise InputError("criteria file not found", path=path) from None


__all__ = ["PROXY_ROLE_PREFIX", "USER_ROLE", "Proxy", "UserProxyConfig", "UserProxySuite", "parse_proxies",
           "userproxy_episode"]
