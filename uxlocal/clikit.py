"""What every command shares, the suites' own commands included.

Option builders generated from config classes, store connections, printing, and running a suite from
a suite's command.

It sits below the suites (a suite's ``cli.py`` builds its commands from it); the root group and
the one place a ``RunConfig`` is built (``uxlocal.cli``) sit above them.

Options of ``uxlocal run`` come from ``RunConfig``'s fields (their docstrings are the help texts,
their environment variable is ``UXLOCAL_<FIELD>``), and a suite's own options from its config class,
so a new field or a new suite needs no edit here.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import click

from uxlocal.errors import InputError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}

RUN_OPTION_FIELDS = ("db", "limit", "seed", "grammar", "max_batch", "shard", "fresh", "progress")
"""``RunConfig`` fields every ``uxlocal run`` command exposes as options."""
_METAVARS = {"shard": "I/N"}
_TYPES: dict[str, Any] = {"db": click.Path(dir_okay=False)}
_MODEL_HELP = "Bind a role to a preset, an HF folder (either @backend) or a server URL[#NAME] (repeatable)."


def parse_models(values: tuple[str, ...]) -> dict[str, str]:
    """Read repeated ``--model ROLE=SPEC`` values into role -> spec."""
    models: dict[str, str] = {}
    for value in values:
        role, sep, spec = value.partition("=")
        if not sep or not role or not spec:
            raise InputError(f"--model expects ROLE=PRESET_OR_PATH, got {value!r}",
                             "e.g. --model judge=embedded")
        models[role.strip()] = spec.strip()
    return models


def field_option(name: str, field: Any, *, envvar: str | None = None, metavar: str | None = None,
                 kind: Any = None, decls: tuple[str, ...] = ()) -> Any:
    """Return a click option from a pydantic field: Literal -> Choice, bool -> flag pair, docstring -> help.

    ``decls`` replaces the generated flag spelling (``("-r", "--rubric")``,
    ``("--both-orders/--one-order",)``).
    """
    flag = "--" + name.replace("_", "-")
    annotation = field.annotation
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    help_text = (field.description or "").strip()
    default = None if field.default is None else field.default
    common: dict[str, Any] = {"help": help_text, "envvar": envvar}
    if annotation is bool:
        spelled = decls or (f"{flag}/--no-{name.replace('_', '-')}",)
        return click.option(*spelled, name, default=default, show_default=True, **common)
    if get_origin(annotation) is Literal:
        return click.option(
            *(decls or (flag,)),
            name,
            type=click.Choice([str(a) for a in get_args(annotation)]),
            default=default,
            show_default=True,
            **common,
        )
    kind = kind or {int: int, float: float, Path: click.Path(path_type=Path)}.get(annotation, str)
    return click.option(
        *(decls or (flag,)),
        name,
        type=kind,
        default=default,
        show_default=default is not None,
        metavar=metavar,
        **common,
    )


def config_options(config_cls: Any, names: tuple[str, ...] | None = None, *, envvar_prefix: str | None = None,
                   decls: Mapping[str, tuple[str, ...]] | None = None) -> Callable[[Any], Any]:
    """Add one option per field of ``config_cls`` (a decorator; ``names`` selects and orders them).

    With ``envvar_prefix`` each option also reads ``<prefix><FIELD>`` from the environment.
    """
    fields = config_cls.model_fields
    chosen = names or tuple(fields)

    def decorate(fn: Any) -> Any:
        for name in reversed(chosen):
            envvar = f"{envvar_prefix}{name.upper()}" if envvar_prefix else None
            fn = field_option(name, fields[name], envvar=envvar, metavar=_METAVARS.get(name),
                              kind=_TYPES.get(name), decls=(decls or {}).get(name, ()))(fn)
        return fn

    return decorate


def run_options(fn: Any) -> Any:
    """Options shared by every command that runs a suite: ``--model`` and ``RunConfig``'s own."""
    from uxlocal.config import RunConfig

    fn = config_options(RunConfig, RUN_OPTION_FIELDS, envvar_prefix="UXLOCAL_")(fn)
    return click.option("-m", "--model", "model", multiple=True, metavar="ROLE=SPEC", help=_MODEL_HELP)(fn)


def split_run_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Remove the shared run options from a command's keyword arguments and return them."""
    return {key: kwargs.pop(key) for key in ("model", *RUN_OPTION_FIELDS)}


RUNNER_KEY = "uxlocal.run_configured"
"""Key of the run function in click's shared ``Context.meta`` (set by the root group)."""


def run_suite_from_command(suite_name: str, suite_config: Mapping[str, Any], common: Mapping[str, Any], *,
                           suite: Any = None, show: Callable[[Any], None] | None = None) -> Any:
    """Run a suite from a suite's own command and print the result (``uxlocal.cli.common.run_configured``).

    The runner sits above the suites, so a suite's command cannot import it; the root group puts it
    in click's ``Context.meta``, which every nested command shares.
    """
    run = click.get_current_context().meta.get(RUNNER_KEY)
    if run is None:
        raise RuntimeError("a suite's command runs only under the uxlocal root group (uxlocal.cli.cli)")
    return run(suite_name, suite_config, common, suite=suite, show=show)


EPISODES_KEY = "uxlocal.run_episodes"
"""Key of the episode-running function in click's shared ``Context.meta`` (set by the root group)."""


def run_episodes_from_command(engines: Mapping[str, Any], episodes: list[Any]) -> None:
    """Run episode programs under the scheduler, each role bound to its engine (``uxlocal.cli.common``).

    For a suite's command that plays scripted episodes itself (``tau2 conformance --episodes``): the
    scheduler sits above the suites, so it comes, like the runner, through ``Context.meta``.
    """
    run = click.get_current_context().meta.get(EPISODES_KEY)
    if run is None:
        raise RuntimeError("a suite's command runs only under the uxlocal root group (uxlocal.cli.cli)")
    run(engines, episodes)


def store_option(fn: Any) -> Any:
    """``--db`` for commands that write a store."""
    return click.option("--db", default="uxlocal.duckdb", show_default=True, envvar="UXLOCAL_DB",
                        type=click.Path(dir_okay=False), help="DuckDB store to write.")(fn)


def read_store_option(help_text: str = "Store to read.") -> Callable[[Any], Any]:
    """``--db`` for commands that read an existing store."""
    return click.option("--db", required=True, envvar="UXLOCAL_DB", type=click.Path(dir_okay=False),
                        help=help_text)


@contextmanager
def open_store(db: str | Path, *, read_only: bool = False) -> Iterator[Any]:
    """Open a store for one command and close it whatever happens."""
    from uxlocal.store.db import connect

    con = connect(db, read_only=read_only)
    try:
        yield con
    finally:
        con.close()


def print_result(result: Any) -> None:
    """Print a finished run: the summary line, notes, and the suite's tables."""
    from uxlocal.reportkit.tables import render_tables

    stats = result.stats
    state = "resumed" if result.resumed else "new"
    click.echo(
        f"\nrun {result.run_id} ({state}): {stats.episodes_done} episodes done, "
        f"{stats.episodes_skipped} already done, {stats.episodes_failed} failed; "
        f"{stats.requests} requests, {stats.cache_hits} from cache, {stats.engine_calls} engine calls, "
        f"{stats.wall_s:.1f}s"
    )
    for note in result.notes:
        click.echo(f"note: {note}")
    render_tables(result.tables)


def print_rows(cols: list[str], rows: list[tuple[Any, ...]], fmt: str = "table") -> None:
    """Print rows as a terminal table, CSV or JSON."""
    from uxlocal.reportkit.tables import ReportTable, render_tables

    if fmt == "json":
        click.echo(
            json.dumps(
                [dict(zip(cols, row, strict=True)) for row in rows], default=str, ensure_ascii=False, indent=1
            )
        )
    elif fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(cols)
        writer.writerows(rows)
    else:
        render_tables([ReportTable("", cols, rows)])
