"""``uxlocal ufs criteria``: write, screen, verify and freeze a domain's UFS criteria with local models.

Spec userproxybench.md §A.4 and §A.9 steps 1-4. One ``criteria_program`` episode per task (id
``<domain>/<task id>``): a writer request, the code screen, a verifier request; the scheduler
batches every task's writer requests together, then the verifiers'. It runs as a store run of
the unregistered suite ``ufs-criteria`` through ``run_suite``, so generations are cached and an
interrupted command resumes; afterwards every task with a usable writer answer is frozen into the
set with ``save_criteria`` (a task already in the set with other criteria is refused: sets are
frozen). Tasks whose writer answer was unusable are not stored; they are listed in the notes.

The blueprints use the contract ``auto`` by default (``ufs/sets.py``): on a tau2-bench checkout,
tau2-bench's guidelines file and user tool words, which the proxies read in ``uxlocal run
userproxy``'s upstream protocol; elsewhere our user seat's guidelines and tool words (``--protocol
ours``). Either way it is what ``run userproxy --protocol auto`` on the same ``--tau2-data`` checks
criteria against; ``--contract ours`` or ``tau2`` picks one. The resolved contract is part of the
run identity, and the notes say which it was and how much of each task's scenario the frozen
criteria cover (``ufs/coverage.py``).

With ``--sample-run RUN_ID`` the writer also sees that run's finished trajectory of the task (the
first one, by episode id), labelled as an example and not an oracle (§A.9 step 3); the run id is
part of the identity, and a task the run has no trajectory of is written without one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.engine.base import Sampling
from uxlocal.episode import EpisodeSpec
from uxlocal.errors import InputError
from uxlocal.reportkit.model import ReportTable
from uxlocal.store.db import json_value
from uxlocal.suites.base import Suite, SuitePlan
from uxlocal.suites.userproxy.ufs.coverage import coverage_note, field_coverage
from uxlocal.suites.userproxy.ufs.programs import (
    VERIFIER_ROLE,
    WRITER_ROLE,
    CriteriaJob,
    criteria_program,
    task_criteria_from_outcome,
)
from uxlocal.suites.userproxy.ufs.prompts import prompt_hashes
from uxlocal.suites.userproxy.ufs.sets import AUTO, domain_blueprints, resolve_contract
from uxlocal.suites.userproxy.ufs.store import save_criteria
from uxlocal.tau2 import Message, domain_spec
from uxlocal.tau2.data import data_hashes, resolve_data_dir
from uxlocal.tau2.layout import domain_dir

SUITE_NAME = "ufs-criteria"
"""``runs.suite`` of a criteria-writing run (not a ``uxlocal run`` suite)."""


class CriteriaConfig(SuiteConfig):
    """Options of ``uxlocal ufs criteria``."""

    not_in_identity: ClassVar[dict[str, str]] = {
        "tau2_data": "where the data sits; the sha256 of every file read is in the identity instead",
    }

    domain: str = "retail"
    """tau2 domain whose tasks get criteria."""
    criteria_set: str = "default"
    """Name of the set the criteria are frozen into."""
    tau2_data: Path | None = None
    """Folder with domains/<domain>/tasks.json (default: $UXLOCAL_TAU2_DATA)."""
    split: str | None = None
    """Task split (default: every task in tasks.json)."""
    tasks: str | None = None
    """Comma-separated task ids (default: all)."""
    contract: str = AUTO
    """What the graded proxies read: auto (tau2-bench's words on a checkout, else ours), ours, tau2, or a
    guidelines file."""
    writer_max_tokens: int = Field(default=2048, ge=64)
    """Completion budget of the writer's answer (tokens)."""
    verifier_max_tokens: int = Field(default=1024, ge=64)
    """Completion budget of the verifier's answer (tokens)."""
    writer_temperature: float = Field(default=0.0, ge=0.0)
    """Writer sampling temperature."""
    sample_run: str | None = None
    """Run whose trajectory of each task the writer is shown as a sample (not an oracle)."""


class CriteriaSuite(Suite):
    """Criteria writing as a run: one ``criteria_program`` episode per task (unregistered)."""

    name = SUITE_NAME
    help = "Write and verify UFS criteria for a tau2 domain."
    config_cls = CriteriaConfig
    roles = (WRITER_ROLE, VERIFIER_ROLE)

    def __init__(self, samples: dict[tuple[str, str], tuple[Message, ...]] | None = None) -> None:
        self.samples = samples or {}
        """(domain, task id) -> the sample trajectory shown to the writer (from ``load_samples``)."""

    def prompt_hashes(self, config: SuiteConfig) -> dict[str, str]:
        """Return the writer/verifier/grader prompts and the domain's data files."""
        assert isinstance(config, CriteriaConfig)
        root = resolve_data_dir(config.tau2_data)
        contract = resolve_contract(config.contract, data_dir=root, domain_name=config.domain)
        return {**prompt_hashes(), **data_hashes(root, [config.domain]),
                f"ufs-contract/{config.domain}": contract.identity()}

    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """One episode per task of the domain; ``--limit`` caps the tasks."""
        assert isinstance(config, CriteriaConfig)
        try:
            domain_spec(config.domain)
        except KeyError as err:
            raise InputError(str(err.args[0]), "pass --domain mock, retail, airline or telecom") from None
        root = resolve_data_dir(config.tau2_data)
        ids = [t.strip() for t in config.tasks.split(",") if t.strip()] if config.tasks else None
        contract = resolve_contract(config.contract, data_dir=root, domain_name=config.domain)
        blueprints = domain_blueprints(root, config.domain, contract=contract, split=config.split,
                                       task_ids=ids)
        if run.limit is not None:
            blueprints = dict(list(blueprints.items())[: run.limit])
        if not blueprints:
            raise InputError(f"no {config.domain} tasks selected", "check --split, --tasks and --limit")
        writer = Sampling(temperature=config.writer_temperature, max_tokens=config.writer_max_tokens)
        verifier = Sampling(temperature=0.0, max_tokens=config.verifier_max_tokens)
        plan = SuitePlan(episodes=[])
        source = str(domain_dir(root, config.domain) / "tasks.json")
        for (domain, task_id), bp in blueprints.items():
            item_id = f"{domain}/{task_id}"
            plan.items.append(
                {
                    "item_id": item_id,
                    "task": domain,
                    "source_file": source,
                    "data": {"domain": domain, "task_id": task_id, "blueprint_sha256": bp.sha256()},
                }
            )
            if config.sample_run and not self.samples:
                raise InputError(f"--sample-run {config.sample_run}: no trajectories were loaded",
                                 "load them with load_samples (the CLI does)")
            job = CriteriaJob(bp, writer, verifier, self.samples.get((domain, task_id), ()))
            plan.episodes.append(EpisodeSpec(item_id, _bind(job), item_id=item_id, task=domain))
        plan.notes.append(f"{config.domain}: {len(blueprints)} tasks, criteria grounded in "
                          f"{contract.describe()}")
        if config.sample_run:
            shown = sum(1 for key in blueprints if key in self.samples)
            plan.notes.append(
                f"sample trajectories from run {config.sample_run}: {shown}/{len(blueprints)} tasks"
            )
        return plan

    def after_run(self, config: SuiteConfig, con: Any, run_id: str) -> list[str]:
        """Freeze every written task into the set."""
        assert isinstance(config, CriteriaConfig)
        models = {role: (name, identity) for role, identity, name in con.execute(
            "SELECT role, model_identity, model_name FROM run_models WHERE run_id = ?", [run_id]).fetchall()}
        tasks, unusable = [], []
        for episode_id, termination, info in con.execute(
                "SELECT episode_id, termination, info FROM episodes WHERE run_id = ? AND status = 'done' "
                "ORDER BY episode_id", [run_id]).fetchall():
            info = json_value(info)
            if termination != "written":
                unusable.append(episode_id)
                continue
            tasks.append(task_criteria_from_outcome(info, writer=models.get(WRITER_ROLE),
                                                    verifier=models.get(VERIFIER_ROLE)))
        written, unchanged = save_criteria(con, config.criteria_set, tasks)
        notes = [
            f"criteria set {config.criteria_set!r}: {written} tasks written, {unchanged} already identical"
        ]
        if tasks:
            root = resolve_data_dir(config.tau2_data)
            blueprints = domain_blueprints(root, config.domain, contract=config.contract, split=None,
                                           task_ids=[t.task_id for t in tasks])
            notes.append(coverage_note([field_coverage(blueprints[t.key], t.graded()) for t in tasks]))
        if unusable:
            notes.append(f"{len(unusable)} task(s) got no usable writer output and were not stored: "
                         + ", ".join(unusable[:5]) + (" ..." if len(unusable) > 5 else ""))
        return notes

    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """Criteria per domain of the set(s) (view ``ufs_criteria_summary``)."""
        from uxlocal.store.db import query

        cols, rows = query(con, "SELECT * FROM ufs_criteria_summary ORDER BY criteria_set, domain")
        return [ReportTable("UFS criteria sets", cols, rows)]


def _bind(job: CriteriaJob) -> Any:
    return lambda ctx: criteria_program(ctx, job)


def load_samples(con: Any, run_id: str, domain: str) -> dict[tuple[str, str], tuple[Message, ...]]:
    """(domain, task id) -> the first finished trajectory of that task in run ``run_id``.

    An unknown run, or one without trajectories of ``domain``, is an ``InputError``.
    """
    from uxlocal.suites.userproxy.ufs.episodes import load_trajectories

    samples: dict[tuple[str, str], tuple[Message, ...]] = {}
    for trajectory in load_trajectories(con, run_id=run_id):
        key = (trajectory.domain, trajectory.task.id)
        if trajectory.domain == domain and trajectory.messages and key not in samples:
            samples[key] = trajectory.messages
    if not samples:
        raise InputError(f"run {run_id!r} has no finished {domain} trajectories in this store",
                         "pick a tau2 or userproxy run id from `uxlocal runs`")
    return samples
