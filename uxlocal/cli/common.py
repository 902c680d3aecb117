"""The one place the CLI builds a ``RunConfig`` and runs a suite; option builders are ``uxlocal.clikit``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from uxlocal.clikit import RUN_OPTION_FIELDS, parse_models, print_result


def run_configured(suite_name: str, suite_config: Mapping[str, Any], common: Mapping[str, Any], *,
                   suite: Any = None, show: Callable[[Any], None] | None = None) -> Any:
    """Build the ``RunConfig`` (the only place the CLI does), run the suite and print its result.

    The result is printed with ``show``, or as the common summary line and the suite's tables.
    """
    from uxlocal.config import RunConfig
    from uxlocal.runner import bind_roles, resolve_models, run_suite
    from uxlocal.suites.base import get_suite

    options = {k: v for k, v in suite_config.items() if v is not None}
    specs = bind_roles(suite or get_suite(suite_name), options, parse_models(tuple(common.get("model", ()))))
    settings = {k: common[k] for k in RUN_OPTION_FIELDS if k in common and k != "progress"}
    run = RunConfig(suite=suite_name, suite_config=options, model_names=specs, **settings,
                    progress=bool(common.get("progress", True)) and sys.stderr.isatty())
    result = run_suite(run, models=resolve_models(specs), **({"suite": suite} if suite is not None else {}))
    (show or print_result)(result)
    return result


def run_episodes(engines: Mapping[str, Any], episodes: list[Any]) -> None:
    """Run episode programs with the scheduler, no store: each role's requests go to its engine."""
    from uxlocal.engine.pool import ModelPool
    from uxlocal.rollout import Scheduler

    Scheduler(ModelPool.from_engines(dict(engines))).run(episodes)
