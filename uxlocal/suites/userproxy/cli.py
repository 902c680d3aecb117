"""UserProxyBench tools: ``uxlocal ingest`` and ``uxlocal ufs``.

``ingest`` loads outside trajectories; ``ufs`` handles criteria sets, pre-checks and the
cost-fidelity frontier.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from uxlocal.clikit import CONTEXT, open_store, read_store_option, run_suite_from_command, store_option
from uxlocal.errors import UxlocalError

_TAU2_DATA_HELP = "Folder with domains/<domain>/tasks.json, or a tau2-bench checkout."
_CONTRACT_HELP = ("What the graded proxies read beside their scenario: tau2 (tau2-bench's guidelines and "
                  "user tool words, from the checkout: run userproxy's upstream protocol), ours (our "
                  "protocol's), auto (tau2 on a checkout, ours elsewhere, as --protocol auto), or a "
                  "guidelines file.")


def _names_options(fn: Any) -> Any:
    fn = click.option("--agent", default=None, help="Agent model name (default: the file's).")(fn)
    return click.option("--proxy", default=None, help="User-proxy model name (default: the file's).")(fn)


def _tau2_data_option(fn: Any) -> Any:
    return click.option(
        "--tau2-data",
        type=click.Path(path_type=Path),
        default=None,
        envvar="UXLOCAL_TAU2_DATA",
        help=_TAU2_DATA_HELP,
    )(fn)


@click.group(name="ingest", context_settings=CONTEXT)
def ingest_group() -> None:
    """Load trajectories produced elsewhere into a store.

    \b
    Example:
      uxlocal ingest tau2 results.json --db runs.duckdb
    """


@ingest_group.command(name="tau2")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@store_option
@_names_options
def ingest_tau2_cmd(path: Path, db: str, proxy: str | None, agent: str | None) -> None:
    """Load a tau2 results.json (file or run folder).

    \b
    Example:
      uxlocal ingest tau2 data/simulations/my-run/results.json --db runs.duckdb
    """
    from uxlocal.suites.userproxy.ufs.ingest import ingest_tau2

    with open_store(db) as con:
        _print_ingest(ingest_tau2(con, path, proxy=proxy, agent=agent))


@ingest_group.command(name="taubench-v1")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@store_option
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
    from uxlocal.suites.userproxy.ufs.ingest import ingest_taubench_v1

    with open_store(db) as con:
        _print_ingest(ingest_taubench_v1(con, path, domain=domain, proxy=proxy, agent=agent))


def _print_ingest(report: Any) -> None:
    if report.already:
        click.echo(f"already ingested as run {report.run_id} ({report.episodes} episodes); nothing added")
        return
    click.echo(f"run {report.run_id}: {report.episodes} episodes of {report.domain} ({report.tasks} tasks), "
               f"proxy {report.proxy}, agent {report.agent}")


@click.group(name="ufs", context_settings=CONTEXT)
def ufs_group() -> None:
    """Score user proxies: criteria sets, pre-checks, frontier.

    \b
    Example:
      uxlocal ufs precheck --db runs.duckdb
    """


@ufs_group.command(name="precheck")
@store_option
@click.option("--run", "run_id", default=None, help="Only this run (default: every tau2-shaped run).")
def ufs_precheck(db: str, run_id: str | None) -> None:
    """Run the model-free pre-checks on stored trajectories.

    \b
    Example:
      uxlocal ufs precheck --db runs.duckdb
    """
    from uxlocal.suites.userproxy.ufs.episodes import run_store_prechecks

    with open_store(db) as con:
        trajectories, flagged = run_store_prechecks(con, run_id=run_id)
    click.echo(f"pre-checks on {trajectories} trajectories: {flagged} flagged (view ufs_prechecks)")


@ufs_group.command(name="criteria-import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--set", "criteria_set", required=True, help="Name of the criteria set to freeze them into.")
@_tau2_data_option
@click.option("--contract", default="auto", show_default=True, envvar="UXLOCAL_UFS_CONTRACT",
              help=_CONTRACT_HELP)
@click.option("--lenient", is_flag=True, help="Store failing criteria as dropped instead of stopping.")
@store_option
def ufs_criteria_import(path: Path, criteria_set: str, tau2_data: Path | None, contract: str, lenient: bool,
                        db: str) -> None:
    """Freeze a hand-written criteria file (JSONL) into a set.

    \b
    Example:
      uxlocal ufs criteria-import retail.jsonl --set handmade --tau2-data /data/tau2
    """
    from uxlocal.suites.userproxy.ufs.sets import import_criteria_file
    from uxlocal.tau2.data import resolve_data_dir

    root = resolve_data_dir(tau2_data)
    with open_store(db) as con:
        written, unchanged, dropped = import_criteria_file(
            con, path, criteria_set=criteria_set, data_dir=root, contract=contract, strict=not lenient)
    click.echo(f"set {criteria_set!r}: {written} tasks written, {unchanged} already identical, "
               f"{dropped} criteria dropped")


@ufs_group.command(name="criteria")
@click.option("--domain", default="retail", show_default=True, help="tau2 domain whose tasks get criteria.")
@_tau2_data_option
@click.option("-m", "--model", "model", multiple=True, metavar="ROLE=SPEC",
              help="writer=SPEC and verifier=SPEC (preset, folder, or either @backend).")
@click.option("--set", "criteria_set", default="default", show_default=True,
              help="Name of the criteria set to freeze them into.")
@click.option("--tasks", default=None, help="Comma-separated task ids (default: all).")
@click.option("--split", default=None, help="Task split (default: every task in tasks.json).")
@click.option("--contract", default="auto", show_default=True, envvar="UXLOCAL_UFS_CONTRACT",
              help=_CONTRACT_HELP)
@click.option("--limit", type=int, default=None, help="At most N tasks.")
@click.option("--template", is_flag=True,
              help="No models: freeze the rule-based baseline criteria (ufs/template_writer.py).")
@click.option("--sample-run", default=None, metavar="RUN_ID",
              help="Show the writer this run's trajectory of each task (labelled: not an oracle).")
@click.option("--db", default="uxlocal.duckdb", show_default=True, envvar="UXLOCAL_DB",
              type=click.Path(dir_okay=False), help="DuckDB store to write (resumes the same run).")
def ufs_criteria(template: bool, model: tuple[str, ...], sample_run: str | None, **options: Any) -> None:
    """Write and verify a domain's criteria with local models, then freeze them into a set.

    \b
    Examples:
      uxlocal ufs criteria --domain retail --model writer=embedded --model verifier=embedded --set v1
      uxlocal ufs criteria --domain retail --template --set rules
    """
    if not template:
        _criteria_by_models(model, sample_run, **options)
    elif model or sample_run:
        raise click.UsageError("--template writes criteria without models: drop --model and --sample-run")
    else:
        _criteria_by_template(**options)


def _criteria_by_template(domain: str, tau2_data: Path | None, criteria_set: str, tasks: str | None,
                          split: str | None, contract: str, limit: int | None, db: str) -> None:
    """``ufs criteria --template``: the rule-based set, no model."""
    from uxlocal.suites.userproxy.ufs.template_writer import freeze_template_set
    from uxlocal.tau2.data import resolve_data_dir

    ids = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    with open_store(db) as con:
        written, unchanged, summary = freeze_template_set(
            con, resolve_data_dir(tau2_data), domain, criteria_set=criteria_set, contract=contract,
            split=split, task_ids=ids, limit=limit)
    thin = summary["thin_tasks"]
    click.echo(f"set {criteria_set!r}: {summary['tasks']} {domain} tasks, {summary['criteria']} template "
               f"criteria; {written} tasks written, {unchanged} already identical"
               + (f"; {len(thin)} task(s) under 4 criteria: {', '.join(thin[:5])}" if thin else ""))
    click.echo(summary["coverage"])


def _criteria_by_models(model: tuple[str, ...], sample_run: str | None, *, limit: int | None, db: str,
                        **options: Any) -> None:
    """``ufs criteria`` with writer and verifier models, run as the criteria suite."""
    from uxlocal.suites.userproxy.criteria_run import SUITE_NAME, CriteriaSuite, load_samples

    samples = {}
    if sample_run:
        with open_store(db) as con:
            samples = load_samples(con, sample_run, options["domain"])
    run_suite_from_command(SUITE_NAME, {**options, "sample_run": sample_run},
                   {"model": model, "limit": limit, "db": db}, suite=CriteriaSuite(samples))


@ufs_group.command(name="frontier")
@read_store_option()
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
    from uxlocal.reportkit.tables import ReportTable, render_tables
    from uxlocal.suites.userproxy.ufs.frontier import frontier_table
    from uxlocal.suites.userproxy.ufs.plot import write_frontier_plot
    from uxlocal.suites.userproxy.ufs.report import store_frontier

    with open_store(db, read_only=True) as con:
        groups = store_frontier(con, axis=axis)
    if not groups:
        raise UxlocalError("no graded proxies with a cost in this store (grade some trajectories first)")
    for number, ((criteria_set, judge, agent), rows) in enumerate(groups.items(), start=1):
        columns, table = frontier_table(rows)
        render_tables([ReportTable(f"frontier: criteria {criteria_set}, judge {judge}, agent {agent}",
                                   columns, table)])
        if plot_path is not None:
            target = plot_path if len(groups) == 1 else plot_path.with_stem(f"{plot_path.stem}-{number}")
            x_label = "engine seconds per simulation" if axis == "engine" else None
            written = write_frontier_plot(target, rows, **({"x_label": x_label} if x_label else {}))
            click.echo(f"plot written: {written}")


def register_commands(cli: click.Group) -> None:
    """Add the suite's commands to the root ``uxlocal`` group (the CLI finds this hook in the package)."""
    cli.add_command(ingest_group)
    cli.add_command(ufs_group)
