"""Store commands: ``uxlocal query`` (read-only SQL over a store) and ``uxlocal merge`` (shards)."""

from __future__ import annotations

from pathlib import Path

import click

from uxlocal.clikit import CONTEXT, open_store, print_rows, read_store_option
from uxlocal.errors import InputError


@click.command(name="query", context_settings=CONTEXT)
@click.argument("sql")
@read_store_option()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
def query_cmd(sql: str, db: str, fmt: str) -> None:
    """Run read-only SQL over a store (metric views included).

    The store cannot change; local files can be read and written (COPY ... TO exports). DuckDB
    extensions are never installed or loaded: uxlocal works offline.

    \b
    Examples:
      uxlocal query --db uxlocal.duckdb "select * from run_summary"
      uxlocal query --db uxlocal.duckdb "copy (select * from turns) to 'turns.parquet'"
    """
    import duckdb

    from uxlocal.store.db import user_query

    with open_store(db, read_only=True) as con:
        try:
            cols, rows = user_query(con, sql)
        except duckdb.Error as exc:
            raise InputError(f"SQL failed: {str(exc).splitlines()[0]}") from exc
    print_rows(cols, rows, fmt)


@click.command(name="merge", context_settings=CONTEXT)
@click.argument("out", type=click.Path(dir_okay=False))
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--on-conflict",
    type=click.Choice(["error", "first"]),
    default="error",
    show_default=True,
    envvar="UXLOCAL_ON_CONFLICT",
    help="An episode in several inputs with different results: stop, or keep the first finished copy.",
)
def merge_cmd(out: str, inputs: tuple[str, ...], on_conflict: str) -> None:
    """Merge stores (e.g. shards of one run) into a new store.

    \b
    Example:
      uxlocal merge all.duckdb shard0.duckdb shard1.duckdb
    """
    from uxlocal.merge import merge_stores

    report = merge_stores(Path(out), [Path(p) for p in inputs], keep=on_conflict)  # type: ignore[arg-type]
    rows = [(r.run_id, r.suite, ",".join(r.shards) or "all", r.status, r.episodes_done) for r in report.runs]
    print_rows(["run_id", "suite", "shards", "status", "episodes_done"], rows, "table")
    click.echo(f"merged {len(report.inputs)} store(s) into {report.out}: {report.episodes} episodes, "
               f"{report.identical_duplicates} identical duplicate(s) dropped")
    for note in report.notes:
        click.echo(f"note: {note}")
