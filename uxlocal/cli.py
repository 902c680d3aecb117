"""The ``uxlocal`` command line: thin wrappers that parse options, call the library, print results.

Only this module and ``errors.py`` import click. Suites' options are generated from their
config classes, so adding a suite adds ``uxlocal run <suite>`` without touching this file.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import click

from uxlocal import _env

_env.apply_defaults()

from uxlocal.errors import InputError, UxlocalError  # noqa: E402

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def _parse_models(values: tuple[str, ...]) -> dict[str, str]:
    models: dict[str, str] = {}
    for value in values:
        role, sep, spec = value.partition("=")
        if not sep or not role or not spec:
            raise InputError(None, None, f"--model expects ROLE=PRESET_OR_PATH, got {value!r}",
                             "e.g. --model judge=embedded")
        models[role.strip()] = spec.strip()
    return models


def common_run_options(fn: Any) -> Any:
    """Options shared by every ``uxlocal run SUITE``."""
    options = [
        click.option("-m", "--model", "model", multiple=True, metavar="ROLE=SPEC",
                     help="Bind a role to a preset, an HF folder (either @backend) or a server "
                          "URL[#NAME] (repeatable)."),
        click.option("--db", default="uxlocal.duckdb", show_default=True, envvar="UXLOCAL_DB",
                     type=click.Path(dir_okay=False), help="DuckDB store to write (resumes the same run)."),
        click.option("--limit", type=int, default=None, envvar="UXLOCAL_LIMIT", help="At most N items per task."),
        click.option("--seed", type=int, default=0, show_default=True, envvar="UXLOCAL_SEED", help="Base seed."),
        click.option("--grammar", type=click.Choice(["xgrammar", "outlines"]), default="xgrammar",
                     show_default=True, envvar="UXLOCAL_GRAMMAR", help="Grammar engine for constrained output."),
        click.option("--max-batch", type=int, default=256, show_default=True, envvar="UXLOCAL_MAX_BATCH",
                     help="Most requests per engine call."),
        click.option("--shard", default=None, metavar="I/N", help="Run only shard I of N (stable hash of item ids)."),
        click.option("--fresh", is_flag=True, help="Start a new run even if an identical one exists."),
        click.option("--no-progress", is_flag=True, envvar="UXLOCAL_NO_PROGRESS", help="Hide the progress bar."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _field_option(name: str, field: Any) -> Any:
    """A click option from a pydantic field: Literal -> Choice, bool -> flag, docstring -> help."""
    flag = "--" + name.replace("_", "-")
    annotation = field.annotation
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    help_text = (field.description or "").strip()
    default = None if field.default is None else field.default
    if annotation is bool:
        return click.option(f"{flag}/--no-{name.replace('_', '-')}", name, default=default, show_default=True,
                            help=help_text)
    if get_origin(annotation) is Literal:
        return click.option(flag, name, type=click.Choice([str(a) for a in get_args(annotation)]),
                            default=default, show_default=True, help=help_text)
    kind = {int: int, float: float, Path: click.Path(path_type=Path)}.get(annotation, str)
    return click.option(flag, name, type=kind, default=default, show_default=default is not None, help=help_text)


def _suite_command(suite_cls: Any) -> click.Command:
    """``uxlocal run <suite>`` with the suite's own options plus the common ones."""

    @common_run_options
    def command(**kwargs: Any) -> None:
        from uxlocal.config import RunConfig
        from uxlocal.runner import run_suite

        common = {k: kwargs.pop(k) for k in ("model", "db", "limit", "seed", "grammar", "max_batch", "shard",
                                             "fresh", "no_progress")}
        suite_config = {k: v for k, v in kwargs.items() if v is not None}
        from uxlocal.runner import bind_roles

        specs = bind_roles(suite_cls(), suite_config, _parse_models(common["model"]))
        run = RunConfig(suite=suite_cls.name, suite_config=suite_config, model_names=specs, seed=common["seed"],
                        limit=common["limit"], grammar=common["grammar"], db=common["db"],
                        max_batch=common["max_batch"], shard=common["shard"], fresh=common["fresh"],
                        progress=not common["no_progress"] and sys.stderr.isatty())
        from uxlocal.runner import resolve_models

        result = run_suite(run, models=resolve_models(specs))
        _print_result(result)

    for name, field in reversed(list(suite_cls.config_cls.model_fields.items())):
        command = _field_option(name, field)(command)
    binds = suite_cls.example or " ".join(f"--model {role}=embedded" for role in suite_cls.roles)
    doc = f"{suite_cls.help}\n\n\b\nExample:\n  uxlocal run {suite_cls.name} {binds}"
    return click.command(name=suite_cls.name, help=doc, context_settings=CONTEXT)(command)


class SuiteGroup(click.Group):
    """``uxlocal run``: one subcommand per registered suite, built on demand."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from uxlocal.suites.base import suites

        return sorted(suites())

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from uxlocal.suites.base import suites

        known = suites()
        return _suite_command(known[name]) if name in known else None


@click.group(context_settings=CONTEXT)
@click.option("--debug", is_flag=True, envvar="UXLOCAL_DEBUG", help="Show tracebacks for errors.")
@click.version_option(package_name="uxlocal")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Evaluate multi-turn assistants and simulated users on local models.

    \b
    Examples:
      uxlocal demo
      uxlocal run uxbench --model candidate=embedded --model judge=embedded
      uxlocal query --db uxlocal.duckdb "select * from run_summary"
    """
    ctx.obj = {"debug": debug}
    if debug:
        import logging

        logging.basicConfig(level=logging.INFO)


@cli.group(name="run", cls=SuiteGroup, context_settings=CONTEXT)
def run_group() -> None:
    """Run one suite on local models and print its results.

    \b
    Example:
      uxlocal run selftest --model candidate=embedded --model user=embedded --model judge=embedded
    """


@cli.command(name="demo", context_settings=CONTEXT)
@click.option("--db", default="uxlocal-demo.duckdb", show_default=True, envvar="UXLOCAL_DEMO_DB",
              type=click.Path(dir_okay=False), help="DuckDB store the demo writes.")
@click.option("--suites", "suite_names", default=None, help="Comma-separated subset of suites.")
@click.option("--model", "model_spec", default="embedded", show_default=True, help="Model for every role.")
@click.option("--no-progress", is_flag=True, help="Hide progress bars.")
def demo_cmd(db: str, suite_names: str | None, model_spec: str, no_progress: bool) -> None:
    """Run every suite on bundled sample data with the embedded model.

    \b
    Example:
      uxlocal demo --db demo.duckdb
    """
    from uxlocal.demo import run_demo

    chosen = [s.strip() for s in suite_names.split(",")] if suite_names else None
    results = run_demo(db=Path(db), suites=chosen, model=model_spec,
                       progress=not no_progress and sys.stderr.isatty(), echo=click.echo)
    for result in results:
        _print_result(result)
    from uxlocal.demo import NEXT_STEPS

    store = Path(db).resolve()
    click.echo(f"\nDuckDB store: {store}")
    click.echo(f"Read it as a page: uxlocal report --db {store} --html report.html   "
               f"(trajectories: uxlocal view --db {store})")
    click.echo(NEXT_STEPS)


@cli.command(name="query", context_settings=CONTEXT)
@click.argument("sql")
@click.option("--db", required=True, envvar="UXLOCAL_DB", type=click.Path(dir_okay=False), help="Store to read.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="Output format.")
def query_cmd(sql: str, db: str, fmt: str) -> None:
    """Run read-only SQL over a store (metric views included).

    \b
    Example:
      uxlocal query --db uxlocal.duckdb "select * from run_summary"
    """
    import duckdb

    from uxlocal.store.db import connect, query

    con = connect(db, read_only=True)
    try:
        cols, rows = query(con, sql)
    except duckdb.Error as exc:
        raise InputError(None, None, f"SQL failed: {str(exc).splitlines()[0]}") from exc
    finally:
        con.close()
    _print_rows(cols, rows, fmt)


@cli.command(name="merge", context_settings=CONTEXT)
@click.argument("out", type=click.Path(dir_okay=False))
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--on-conflict", type=click.Choice(["error", "first"]), default="error", show_default=True,
              envvar="UXLOCAL_ON_CONFLICT",
              help="An episode in several inputs with different results: stop, or keep the first finished copy.")
def merge_cmd(out: str, inputs: tuple[str, ...], on_conflict: str) -> None:
    """Merge stores (e.g. shards of one run) into a new store.

    \b
    Example:
      uxlocal merge all.duckdb shard0.duckdb shard1.duckdb
    """
    from uxlocal.merge import merge_stores

    report = merge_stores(Path(out), [Path(p) for p in inputs], keep=on_conflict)  # type: ignore[arg-type]
    rows = [(r.run_id, r.suite, ",".join(r.shards) or "all", r.status, r.episodes_done) for r in report.runs]
    _print_rows(["run_id", "suite", "shards", "status", "episodes_done"], rows, "table")
    click.echo(f"merged {len(report.inputs)} store(s) into {report.out}: {report.episodes} episodes, "
               f"{report.identical_duplicates} identical duplicate(s) dropped")
    for note in report.notes:
        click.echo(f"note: {note}")


@cli.command(name="report", context_settings=CONTEXT)
@click.option("--db", required=True, envvar="UXLOCAL_DB", type=click.Path(dir_okay=False),
              help="Store to read.")
@click.option("--run", "run_ids", multiple=True, metavar="RUN_ID",
              help="Report only this run (repeatable; default: every run in the store).")
@click.option("--html", "html_path", default=None, type=click.Path(dir_okay=False),
              help="Write one self-contained HTML file (tables and plots, no network) here.")
@click.option("--format", "fmt", type=click.Choice(["terminal", "html", "md"]), default=None,
              help="terminal tables (default), html, or md (a Markdown summary).")
@click.option("-o", "--out", default=None, type=click.Path(dir_okay=False),
              help="Write the html or md output here instead of stdout.")
def report_cmd(db: str, run_ids: tuple[str, ...], html_path: str | None, fmt: str | None,
               out: str | None) -> None:
    """Show a store's results: terminal tables, an HTML report with plots, or Markdown.

    \b
    Examples:
      uxlocal report --db uxlocal.duckdb
      uxlocal report --db uxlocal.duckdb --html report.html
      uxlocal report --db uxlocal.duckdb --run uxbench-0123456789ab --format md -o summary.md
    """
    if html_path and fmt not in (None, "html"):
        raise click.UsageError(f"--html writes HTML; drop --format {fmt} (or use --format {fmt} --out FILE)")
    if html_path and out:
        raise click.UsageError("give the HTML file once: --html FILE")
    fmt = fmt or ("html" if html_path else "terminal")
    target = html_path or out
    if fmt == "terminal" and target:
        raise click.UsageError("--out needs --format html or md")
    from uxlocal.report import build_report, render_html, render_markdown
    from uxlocal.report.readonly import open_store
    from uxlocal.report.tables import render_report

    con, broken_views = open_store(db)
    try:
        report = build_report(con, run_ids=list(run_ids), db=db, figures=fmt == "html")
    finally:
        con.close()
    report.skipped += [f"view not available in this store: {line}" for line in broken_views]
    if fmt == "terminal":
        render_report(report)
        return
    text = render_html(report) if fmt == "html" else render_markdown(report)
    if target is None:
        click.echo(text, nl=False)
        return
    Path(target).write_text(text, encoding="utf-8")
    plots = sum(len(s.figures) for s in report.sections)
    click.echo(f"wrote {target}: {len(report.sections)} section(s), {plots} plot(s), "
               f"{len(report.runs)} run(s)")


@cli.command(name="view", context_settings=CONTEXT)
@click.option("--db", required=True, envvar="UXLOCAL_DB", type=click.Path(dir_okay=False),
              help="Store to browse.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True,
              envvar="UXLOCAL_VIEW_PORT", help="Port on 127.0.0.1.")
def view_cmd(db: str, port: int) -> None:
    """Browse runs and conversations in a local web page (127.0.0.1 only, store opened read-only).

    \b
    Example:
      uxlocal view --db uxlocal.duckdb --port 8765
    """
    try:
        from uxlocal.report.viewer import serve
    except ModuleNotFoundError as exc:
        raise UxlocalError(f"the viewer needs {exc.name}: pip install 'uxlocal[report]'") from exc
    serve(db, port=port, echo=click.echo)


@cli.group(name="models", context_settings=CONTEXT)
def models_group() -> None:
    """List and prepare model presets."""


@models_group.command(name="list")
def models_list() -> None:
    """Show presets and whether each is ready to load."""
    from uxlocal.models import is_ready, load_presets

    rows = []
    for name, preset in sorted(load_presets().items()):
        ready, why = is_ready(preset)
        rows.append((name, preset.backend, preset.dtype, preset.max_model_len, "yes" if ready else "no", why))
    _print_rows(["preset", "backend", "dtype", "max_model_len", "ready", "where / how"], rows, "table")


@models_group.command(name="prepare")
@click.argument("name")
@click.option("--force", is_flag=True, help="Convert again even if ready.")
def models_prepare(name: str, force: bool) -> None:
    """Prepare a preset (convert the embedded GGUF once).

    \b
    Example:
      uxlocal models prepare embedded
    """
    from uxlocal.models import load_presets, prepare

    presets = load_presets()
    if name not in presets:
        raise InputError(None, None, f"unknown preset {name!r}", f"known: {', '.join(sorted(presets))}")
    folder = prepare(presets[name], force=force)
    click.echo(f"{name}: ready at {folder}")


@cli.command(name="doctor", context_settings=CONTEXT)
def doctor() -> None:
    """Check the serving stack: vLLM build and whether our CPU LoRA kernels are active.

    \b
    Example:
      uxlocal doctor
    """
    from uxlocal.doctor import checks

    _print_rows(["check", "status", "detail"], checks(), "table")


def _store_option(fn: Any) -> Any:
    return click.option("--db", default="uxlocal.duckdb", show_default=True, envvar="UXLOCAL_DB",
                        type=click.Path(dir_okay=False), help="DuckDB store to write.")(fn)


def _names_options(fn: Any) -> Any:
    fn = click.option("--agent", default=None, help="Agent model name (default: the file's).")(fn)
    return click.option("--proxy", default=None, help="User-proxy model name (default: the file's).")(fn)


@cli.group(name="ingest", context_settings=CONTEXT)
def ingest_group() -> None:
    """Load trajectories produced elsewhere into a store.

    \b
    Example:
      uxlocal ingest tau2 results.json --db runs.duckdb
    """


@ingest_group.command(name="tau2")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@_store_option
@_names_options
def ingest_tau2_cmd(path: Path, db: str, proxy: str | None, agent: str | None) -> None:
    """Load a tau2 results.json (file or run folder).

    \b
    Example:
      uxlocal ingest tau2 data/simulations/my-run/results.json --db runs.duckdb
    """
    from uxlocal.store.db import connect
    from uxlocal.suites.userproxy.ufs.ingest import ingest_tau2

    con = connect(db)
    try:
        report = ingest_tau2(con, path, proxy=proxy, agent=agent)
    finally:
        con.close()
    _print_ingest(report)


@ingest_group.command(name="taubench-v1")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_store_option
@click.option("--domain", type=click.Choice(["retail", "airline"]), default=None,
              help="Domain of the file (default: read from its tool names).")
@_names_options
def ingest_taubench_v1_cmd(path: Path, db: str, domain: str | None, proxy: str | None,
                           agent: str | None) -> None:
    """Load a tau-bench v1 result file.

    \b
    Example:
      uxlocal ingest taubench-v1 results/tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_0101.json
    """
    from uxlocal.store.db import connect
    from uxlocal.suites.userproxy.ufs.ingest import ingest_taubench_v1

    con = connect(db)
    try:
        report = ingest_taubench_v1(con, path, domain=domain, proxy=proxy, agent=agent)
    finally:
        con.close()
    _print_ingest(report)


def _print_ingest(report: Any) -> None:
    if report.already:
        click.echo(f"already ingested as run {report.run_id} ({report.episodes} episodes); nothing added")
        return
    click.echo(f"run {report.run_id}: {report.episodes} episodes of {report.domain} ({report.tasks} tasks), "
               f"proxy {report.proxy}, agent {report.agent}")


@cli.group(name="ufs", context_settings=CONTEXT)
def ufs_group() -> None:
    """Score user proxies: criteria sets, pre-checks, frontier.

    \b
    Example:
      uxlocal ufs precheck --db runs.duckdb
    """


@ufs_group.command(name="precheck")
@_store_option
@click.option("--run", "run_id", default=None, help="Only this run (default: every tau2-shaped run).")
def ufs_precheck(db: str, run_id: str | None) -> None:
    """Run the model-free pre-checks on stored trajectories.

    \b
    Example:
      uxlocal ufs precheck --db runs.duckdb
    """
    from uxlocal.store.db import connect
    from uxlocal.suites.userproxy.ufs.episodes import run_store_prechecks

    con = connect(db)
    try:
        trajectories, flagged = run_store_prechecks(con, run_id=run_id)
    finally:
        con.close()
    click.echo(f"pre-checks on {trajectories} trajectories: {flagged} flagged (view ufs_prechecks)")


@ufs_group.command(name="criteria-import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--set", "criteria_set", required=True, help="Name of the criteria set to freeze them into.")
@click.option("--tau2-data", type=click.Path(path_type=Path), default=None, envvar="UXLOCAL_TAU2_DATA",
              help="Folder with domains/<domain>/tasks.json.")
@click.option("--contract", default="ours", show_default=True, envvar="UXLOCAL_UFS_CONTRACT",
              help="Guidelines the proxy saw: ours, tau2, or a file.")
@click.option("--lenient", is_flag=True, help="Store failing criteria as dropped instead of stopping.")
@_store_option
def ufs_criteria_import(path: Path, criteria_set: str, tau2_data: Path | None, contract: str, lenient: bool,
                        db: str) -> None:
    """Freeze a hand-written criteria file (JSONL) into a set.

    \b
    Example:
      uxlocal ufs criteria-import retail.jsonl --set handmade --tau2-data /data/tau2
    """
    from uxlocal.store.db import connect
    from uxlocal.suites.userproxy.tau2_suite.data import resolve_data_dir
    from uxlocal.suites.userproxy.ufs.sets import import_criteria_file

    root = resolve_data_dir(tau2_data)
    con = connect(db)
    try:
        written, unchanged, dropped = import_criteria_file(
            con, path, criteria_set=criteria_set, data_dir=root, contract=contract, strict=not lenient)
    finally:
        con.close()
    click.echo(f"set {criteria_set!r}: {written} tasks written, {unchanged} already identical, "
               f"{dropped} criteria dropped")


@ufs_group.command(name="criteria")
@click.option("--domain", default="retail", show_default=True, help="tau2 domain whose tasks get criteria.")
@click.option("--tau2-data", type=click.Path(path_type=Path), default=None, envvar="UXLOCAL_TAU2_DATA",
              help="Folder with domains/<domain>/tasks.json.")
@click.option("-m", "--model", "model", multiple=True, metavar="ROLE=SPEC",
              help="writer=SPEC and verifier=SPEC (preset, folder, or either @backend).")
@click.option("--set", "criteria_set", default="default", show_default=True,
              help="Name of the criteria set to freeze them into.")
@click.option("--tasks", default=None, help="Comma-separated task ids (default: all).")
@click.option("--split", default=None, help="Task split (default: every task in tasks.json).")
@click.option("--contract", default="ours", show_default=True, envvar="UXLOCAL_UFS_CONTRACT",
              help="Guidelines the graded proxies see: ours, tau2, or a file.")
@click.option("--limit", type=int, default=None, help="At most N tasks.")
@click.option("--template", is_flag=True,
              help="No models: freeze the rule-based baseline criteria (ufs/template_writer.py).")
@click.option("--sample-run", default=None, metavar="RUN_ID",
              help="Show the writer this run's trajectory of each task (labelled: not an oracle).")
@click.option("--db", default="uxlocal.duckdb", show_default=True, envvar="UXLOCAL_DB",
              type=click.Path(dir_okay=False), help="DuckDB store to write (resumes the same run).")
def ufs_criteria(domain: str, tau2_data: Path | None, model: tuple[str, ...], criteria_set: str, tasks: str | None,
                 split: str | None, contract: str, limit: int | None, template: bool, sample_run: str | None,
                 db: str) -> None:
    """Write and verify a domain's criteria with local models, then freeze them into a set.

    \b
    Examples:
      uxlocal ufs criteria --domain retail --model writer=embedded --model verifier=embedded --set v1
      uxlocal ufs criteria --domain retail --template --set rules
    """
    from uxlocal.config import RunConfig
    from uxlocal.runner import resolve_models, run_suite
    from uxlocal.store.db import connect
    from uxlocal.suites.userproxy.criteria_run import SUITE_NAME, CriteriaSuite, load_samples
    from uxlocal.suites.userproxy.tau2_suite.data import resolve_data_dir

    if template:
        from uxlocal.suites.userproxy.ufs.template_writer import freeze_template_set

        if model or sample_run:
            raise click.UsageError("--template writes criteria without models: drop --model and --sample-run")
        ids = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
        con = connect(db)
        try:
            written, unchanged, summary = freeze_template_set(
                con, resolve_data_dir(tau2_data), domain, criteria_set=criteria_set, contract=contract,
                split=split, task_ids=ids, limit=limit)
        finally:
            con.close()
        thin = summary["thin_tasks"]
        click.echo(f"set {criteria_set!r}: {summary['tasks']} {domain} tasks, {summary['criteria']} template "
                   f"criteria; {written} tasks written, {unchanged} already identical"
                   + (f"; {len(thin)} task(s) under 4 criteria: {', '.join(thin[:5])}" if thin else ""))
        return
    options = {"domain": domain, "criteria_set": criteria_set, "tasks": tasks, "split": split,
               "contract": contract, "tau2_data": tau2_data, "sample_run": sample_run}
    samples = {}
    if sample_run:
        con = connect(db)
        try:
            samples = load_samples(con, sample_run, domain)
        finally:
            con.close()
    specs = _parse_models(model)
    run = RunConfig(suite=SUITE_NAME, suite_config={k: v for k, v in options.items() if v is not None},
                    model_names=specs, limit=limit, db=db, progress=sys.stderr.isatty())
    result = run_suite(run, models=resolve_models(specs), suite=CriteriaSuite(samples))
    _print_result(result)


@ufs_group.command(name="frontier")
@click.option("--db", required=True, envvar="UXLOCAL_DB", type=click.Path(dir_okay=False),
              help="Store to read.")
@click.option("--axis", type=click.Choice(["cost", "engine"]), default="cost", show_default=True,
              help="cost: USD per simulation; engine: engine seconds per simulation.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also draw it (.svg, or .png with matplotlib).")
def ufs_frontier(db: str, axis: str, plot_path: Path | None) -> None:
    """Show which proxies are cost-fidelity efficient.

    \b
    Example:
      uxlocal ufs frontier --db runs.duckdb --plot frontier.svg
    """
    from uxlocal.report.tables import ReportTable, render_tables
    from uxlocal.store.db import connect
    from uxlocal.suites.userproxy.ufs.frontier import frontier_table
    from uxlocal.suites.userproxy.ufs.plot import write_frontier_plot
    from uxlocal.suites.userproxy.ufs.report import store_frontier

    con = connect(db, read_only=True)
    try:
        groups = store_frontier(con, axis=axis)
    finally:
        con.close()
    if not groups:
        raise UxlocalError("no graded proxies with a cost in this store (grade some trajectories first)")
    for number, ((criteria_set, judge, agent), rows) in enumerate(groups.items(), start=1):
        columns, table = frontier_table(rows)
        title = f"frontier: criteria {criteria_set}, judge {judge}, agent {agent}"
        render_tables([ReportTable(title, columns, table)])
        if plot_path is not None:
            target = plot_path if len(groups) == 1 else plot_path.with_stem(f"{plot_path.stem}-{number}")
            x_label = "engine seconds per simulation" if axis == "engine" else None
            written = write_frontier_plot(target, rows, **({"x_label": x_label} if x_label else {}))
            click.echo(f"plot written: {written}")


# ---- palate: cards, panel, simulators, agreement, realism ---------------------------------------


@cli.group(name="palate", context_settings=CONTEXT)
def palate_group() -> None:
    """PALATE tools: check cards, freeze panels, train simulators, validate.

    \b
    Examples:
      uxlocal palate check
      uxlocal palate train-simulator --user u2 --base embedded
      uxlocal palate agreement --users all -m judge=embedded --db palate.duckdb
    """


def _run_palate_part(part: str, options: dict[str, Any], common: dict[str, Any]) -> None:
    """Run the palate suite with ``parts=part`` and print its tables (the shared run options apply)."""
    from uxlocal.config import RunConfig
    from uxlocal.runner import bind_roles, resolve_models, run_suite
    from uxlocal.suites.base import get_suite

    suite_config = {"parts": part, **{k: v for k, v in options.items() if v is not None}}
    specs = bind_roles(get_suite("palate"), suite_config, _parse_models(common["model"]))
    run = RunConfig(suite="palate", suite_config=suite_config, model_names=specs, seed=common["seed"],
                    limit=common["limit"], grammar=common["grammar"], db=common["db"],
                    max_batch=common["max_batch"], shard=common["shard"], fresh=common["fresh"],
                    progress=not common["no_progress"] and sys.stderr.isatty())
    _print_result(run_suite(run, models=resolve_models(specs)))


_COMMON_KEYS = ("model", "db", "limit", "seed", "grammar", "max_batch", "shard", "fresh", "no_progress")


def _palate_user_options(fn: Any) -> Any:
    for option in reversed([
        click.option("--users", default="all", show_default=True, help="\"all\" or comma-separated ids."),
        click.option("--users-dir", default=None, help="Folder of user folders (default: bundled users)."),
        click.option("--heldout-sessions", type=int, default=None, help="At most N held-out sessions a user."),
    ]):
        fn = option(fn)
    return fn


@palate_group.command(name="agreement", context_settings=CONTEXT)
@common_run_options
@_palate_user_options
@click.option("--without-reaction/--no-without-reaction", "agreement_without_reaction", default=True,
              show_default=True, help="Also score the user's rubric without the next-turn evidence.")
def palate_agreement(**kwargs: Any) -> None:
    """Score held-out rated sessions; report pairwise agreement.

    \b
    Example:
      uxlocal palate agreement --users u1,u3 -m judge=qwen3-32b --db palate.duckdb
    """
    common = {k: kwargs.pop(k) for k in _COMMON_KEYS}
    _run_palate_part("agreement", kwargs, common)


@palate_group.command(name="realism", context_settings=CONTEXT)
@common_run_options
@_palate_user_options
@click.option("--simulator", default="prompted", show_default=True, help="prompted, lora, or both (comma).")
@click.option("--realism-turns", type=int, default=2, show_default=True, help="Real user turns per session.")
@click.option("--adapters-dir", default=None, help="Folder of trained LoRA simulators.")
def palate_realism(**kwargs: Any) -> None:
    """Run the 2AFC realism test of the user simulators.

    \b
    Example:
      uxlocal palate realism --simulator prompted,lora -m user=embedded -m judge=embedded --db palate.duckdb
    """
    common = {k: kwargs.pop(k) for k in _COMMON_KEYS}
    _run_palate_part("realism", kwargs, common)


@palate_group.command(name="train-simulator", context_settings=CONTEXT)
@click.option("--user", "user_ids", required=True, help="User id(s), comma-separated, or \"all\".")
@click.option("--base", default="embedded", show_default=True, envvar="UXLOCAL_PALATE_BASE",
              help="Base model (preset or folder) the user seat will run.")
@click.option("--users-dir", default=None, help="Folder of user folders (default: the bundled users).")
@click.option("--steps", type=int, default=60, show_default=True, help="Optimizer steps.")
@click.option("--rank", type=int, default=8, show_default=True, help="LoRA rank.")
@click.option("--lr", type=float, default=1e-3, show_default=True, help="Peak learning rate.")
@click.option("--batch-size", type=int, default=4, show_default=True, help="Sequences per step.")
@click.option("--adapters-dir", default=None, help="Adapter folder (default: $UXLOCAL_HOME/palate/adapters).")
@click.option("--force", is_flag=True, help="Train again even if this exact adapter exists.")
def palate_train_simulator(user_ids: str, base: str, users_dir: str | None, steps: int, rank: int, lr: float,
                           batch_size: int, adapters_dir: str | None, force: bool) -> None:
    """Train a user's LoRA simulator (next message or [QUIT]).

    \b
    Example:
      uxlocal palate train-simulator --user u2 --base embedded --steps 60
    """
    from uxlocal.models import resolve
    from uxlocal.suites.palate.training import TrainSettings, perplexity, train_simulator
    from uxlocal.suites.palate.users import load_users

    settings = TrainSettings(steps=steps, rank=rank, alpha=2 * rank, lr=lr, batch_size=batch_size)
    model = resolve(base)
    rows = []
    for user in load_users(user_ids, users_dir):
        result = train_simulator(user, model, settings=settings, adapters_dir=adapters_dir, force=force)
        rows.append((user.user_id, "reused" if result.reused else f"{result.seconds:.0f}s", result.examples,
                     f"{result.heldout_loss_base:.3f} ({perplexity(result.heldout_loss_base):.0f})",
                     f"{result.heldout_loss_adapter:.3f} ({perplexity(result.heldout_loss_adapter):.0f})",
                     str(result.folder)))
    _print_rows(["user", "trained", "sequences", "held-out loss base (ppl)", "adapter (ppl)", "folder"], rows,
                "table")


@palate_group.command(name="check", context_settings=CONTEXT)
@click.option("--cards", default=None, help="Card file or folder (default: bundled pool, checked strictly).")
@click.option("--panel", default="default", show_default=True, help="Panel name or manifest to verify.")
def palate_check(cards: str | None, panel: str) -> None:
    """Check the card pool and the panel's card hashes.

    \b
    Example:
      uxlocal palate check --cards my-cards.jsonl --panel my-panel.json
    """
    from uxlocal.suites.palate.tools import check

    report = check(cards, panel)
    sims = ", ".join(f"{lang} {sim:.2f} ({a}~{b})" for lang, (sim, a, b) in report.similarity.items())
    click.echo(f"{report.cards} cards; most similar pair: {sims}; panel {report.panel}")
    for problem in report.problems:
        click.echo(f"problem: {problem}")
    if report.panel_error:
        click.echo(f"panel: {report.panel_error}")
    if not report.ok:
        mismatch = ", panel mismatch" if report.panel_error else ""
        raise UxlocalError(f"{len(report.problems)} pool problem(s){mismatch}")
    click.echo("ok")


@palate_group.command(name="import-cards", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="JSONL to write.")
def palate_import_cards(files: tuple[Path, ...], out: Path) -> None:
    """Import Character Card V1/V2/V3 (JSON or PNG) into a pool.

    \b
    Example:
      uxlocal palate import-cards cards/*.json cards/*.png --out my-cards.jsonl
    """
    from uxlocal.suites.palate.tools import import_cards

    cards = import_cards(list(files), out)
    click.echo(f"{len(cards)} card(s) written to {out}; next: uxlocal palate freeze-panel --cards {out} ...")


@palate_group.command(name="export-cards", context_settings=CONTEXT)
@click.option("--ids", default="", help="Comma-separated card ids (default: every card).")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True, help="Language.")
@click.option("--cards", default=None, help="Card file or folder (default: the bundled pool).")
@click.option("--out-dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder.")
def palate_export_cards(ids: str, lang: str, cards: str | None, out_dir: Path) -> None:
    """Export cards as Character Card V2 JSON files.

    \b
    Example:
      uxlocal palate export-cards --ids c0001,c0002 --lang zh --out-dir exported/
    """
    from uxlocal.suites.palate.tools import export_cards

    written = export_cards([i.strip() for i in ids.split(",") if i.strip()], out_dir, lang=lang, cards=cards)
    click.echo(f"{len(written)} card(s) written to {out_dir}")


@palate_group.command(name="freeze-panel", context_settings=CONTEXT)
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Manifest file.")
@click.option("--cards", default=None, help="Card file or folder (default: the bundled pool).")
@click.option("--from", "keep", default=None, help="Re-freeze this panel (same cards, version + 1).")
@click.option("--name", default="custom", show_default=True, help="Panel name (new panels).")
@click.option("--size", type=int, default=10, show_default=True, help="Cards in a new panel.")
@click.option("--seed", type=int, default=20260729, show_default=True, help="Sampling seed (new panels).")
def palate_freeze_panel(out: Path, cards: str | None, keep: str | None, name: str, size: int,
                        seed: int) -> None:
    """Freeze a panel manifest (card ids and content hashes).

    \b
    Examples:
      uxlocal palate freeze-panel --cards my-cards.jsonl --size 5 --name mine --out mine.json
      uxlocal palate freeze-panel --from default --out default-v2.json
    """
    from uxlocal.suites.palate.tools import freeze

    panel = freeze(out, cards=cards, size=size, seed=seed, name=name, keep=keep)
    click.echo(f"panel {panel.name} v{panel.version}: {', '.join(e.id for e in panel.cards)} -> {out}")


def _print_result(result: Any) -> None:
    from uxlocal.report.tables import render_tables

    stats = result.stats
    state = "resumed" if result.resumed else "new"
    click.echo(f"\nrun {result.run_id} ({state}): {stats.episodes_done} episodes done, "
               f"{stats.episodes_skipped} already done, {stats.episodes_failed} failed; "
               f"{stats.requests} requests, {stats.cache_hits} from cache, {stats.engine_calls} engine calls, "
               f"{stats.wall_s:.1f}s")
    for note in result.notes:
        click.echo(f"note: {note}")
    render_tables(result.tables)


def _print_rows(cols: list[str], rows: list[tuple[Any, ...]], fmt: str) -> None:
    from uxlocal.report.tables import ReportTable, render_tables

    if fmt == "json":
        click.echo(json.dumps([dict(zip(cols, row)) for row in rows], default=str, ensure_ascii=False, indent=1))
    elif fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(cols)
        writer.writerows(rows)
    else:
        render_tables([ReportTable("", cols, rows)])


from uxlocal.judge_cli import judge as judge_cmd  # noqa: E402

cli.add_command(judge_cmd)


def main() -> None:
    """Entry point: user errors exit 2 with one line; ``--debug`` shows the traceback."""
    debug = "--debug" in sys.argv[1:] or bool(__import__("os").environ.get("UXLOCAL_DEBUG"))
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if debug:
            raise
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted; rerun the same command to resume", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
