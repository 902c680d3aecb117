"""``uxlocal demo``: every suite on bundled sample data, one shared engine, small and capped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.errors import InputError
from uxlocal.runner import RunResult, run_suite
from uxlocal.suites.base import suites

NEXT_STEPS = """
The demo ran on SmolLM2-135M: its verdicts are near chance and only prove the pipeline.
To run the full benchmarks on real models (on a GPU box, offline):
  1. copy HF model folders under $UXLOCAL_MODELS (see models/*.toml, `uxlocal models list`);
  2. run a suite on the released data, e.g.
     uxlocal run uxbench --data /data/uxbench --model candidate=qwen2.5-7b-instruct --model judge=qwen3-32b --db runs.duckdb
     UserProxyBench, all 375 tau2 tasks (telecom, airline, retail, banking_knowledge) and every proxy:
     uxlocal run userproxy --domains all --tau2-data /data/tau2 --model agent=qwen2.5-7b-instruct --model judge=qwen3-32b --proxies llama-3.1-8b-instruct,qwen2.5-7b-instruct --criteria-template --db runs.duckdb
  3. read the numbers back with SQL: uxlocal query --db runs.duckdb "select * from run_summary"
  4. judge your own conversations against your human labels, e.g.
     uxlocal judge chats.jsonl --rubric ux-liked --human-col thumb --model judge=qwen3-32b --db judged.duckdb
See docs/running.md ("Running the full benchmarks") for every suite."""


def run_demo(*, db: Path, suites: list[str] | None = None, model: str = "embedded", progress: bool = False,
             echo: Callable[[str], None] = print) -> list[RunResult]:
    """Run each suite's demo settings with every role on ``model`` (one engine for all)."""
    registered = _registered()
    chosen = suites or [name for name, cls in registered.items() if cls().demo() is not None]
    unknown = [name for name in chosen if name not in registered]
    if unknown:
        raise InputError(None, None, f"unknown suite(s) {', '.join(unknown)}", f"known: {', '.join(registered)}")
    specs = {name: registered[name]().demo() for name in chosen}
    missing = [name for name, spec in specs.items() if spec is None]
    if missing:
        raise InputError(None, None, f"suite(s) {', '.join(missing)} have no demo settings")
    echo(f"preparing model {model!r} (converted once, then cached)...")
    resolved = resolve(model)
    results = []
    runnable = {name: spec for name, spec in specs.items() if spec is not None and spec.unavailable is None}
    pool_roles = sorted({role for spec in runnable.values() for role in spec.roles})
    pool = ModelPool.from_models({role: resolved for role in pool_roles})
    try:
        for name in chosen:
            spec = specs[name]
            assert spec is not None
            echo(f"\n== {name} ==")
            if spec.unavailable is not None:
                echo(f"skipped: {spec.unavailable}")
                continue
            if spec.data is not None:
                echo(f"data: {spec.data}")
            run = RunConfig(suite=name, suite_config=spec.config, model_names={r: model for r in spec.roles},
                            limit=spec.limit, db=str(db), progress=progress)
            results.append(run_suite(run, pool=_subpool(pool, spec.roles)))
    finally:
        pool.close()
    return results


def _registered() -> dict[str, type]:
    return suites()


def _subpool(pool: ModelPool, roles: dict[str, str]) -> ModelPool:
    """The shared pool restricted to the roles one suite uses (same engines)."""
    sub = ModelPool()
    sub.slots = pool.slots
    sub.roles = {role: pool.roles[role] for role in roles}
    return sub
