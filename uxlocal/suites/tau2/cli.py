"""``uxlocal tau2 …``: commands about the tau2 runtime itself (no model, no store)."""

from __future__ import annotations

from pathlib import Path

import click

from uxlocal.clikit import CONTEXT, run_episodes_from_command
from uxlocal.errors import InputError
from uxlocal.tau2.registry import DEFAULT_TAU2_VERSION, TAU2_VERSIONS
from uxlocal.tau2.tool_words import TOOLS_ENV, ToolWordsError

TAU2_TOOLS_OPTION = click.option(
    "--tau2-tools", type=click.Path(path_type=Path), default=None, envvar=TOOLS_ENV,
    help="Folder with <domain>/tools_agent.json and tools_user.json: upstream's tool words "
         f"(default: {TOOLS_ENV}, then the domain's data folder, then our words).")


@click.group(name="tau2", context_settings=CONTEXT)
def tau2_group() -> None:
    """Check the offline tau2 runtime against tau2 data.

    \b
    Example:
      uxlocal tau2 replay --domain telecom --agent gold
    """


@tau2_group.command(name="replay")
@click.option("--domain", "domains", multiple=True, required=True, envvar="UXLOCAL_TAU2_DOMAIN",
              help="Domain to replay (mock, retail, airline, telecom, banking_knowledge), or all "
                   "(the four UserProxyBench domains, then a total line); repeat for several.")
@click.option("--tau2-data", type=click.Path(path_type=Path), default=None, envvar="UXLOCAL_TAU2_DATA",
              help="A tau2 checkout or data folder (default: UXLOCAL_TAU2_DATA, then ../shared/data/tau2).")
@TAU2_TOOLS_OPTION
@click.option("--agent", "agents", multiple=True, default=("gold",), show_default=True,
              type=click.Choice(["gold", "empty", "transfer-only"]),
              help="Scripted agent: gold actions, nothing, or one transfer; repeat for several.")
@click.option("--tau2-version", type=click.Choice(TAU2_VERSIONS), default=DEFAULT_TAU2_VERSION,
              show_default=True, envvar="UXLOCAL_TAU2_VERSION",
              help="Grading version: 8ebb749 (UserProxyBench's pin) or 1.0.1 (banking differs).")
def tau2_replay(domains: tuple[str, ...], tau2_data: Path | None, tau2_tools: Path | None,
                agents: tuple[str, ...], tau2_version: str) -> None:
    """Replay scripted agents through the runtime, with no model.

    \b
    Examples:
      uxlocal tau2 replay --domain telecom --agent gold
      uxlocal tau2 replay --domain all --agent gold --agent empty
      uxlocal tau2 replay --domain banking_knowledge --tau2-version 1.0.1
    """
    from uxlocal.tau2.data import resolve_data_dir
    from uxlocal.tau2.registry import expand_domains
    from uxlocal.tau2.replay import replay_domain, total_line

    root = resolve_data_dir(tau2_data)
    names = expand_domains(domains)
    for agent in agents:
        summaries = []
        for domain in names:
            try:
                summary = replay_domain(root, domain, agent, tau2_version=tau2_version,  # type: ignore[arg-type]
                                        tools_dir=tau2_tools)
            except KeyError as err:
                raise InputError(str(err.args[0]), path=root) from None
            except ToolWordsError as err:
                raise click.ClickException(str(err)) from None
            summaries.append(summary)
            click.echo("\n".join(summary.lines()))
        if len(names) > 1:
            click.echo(total_line(summaries))


@tau2_group.command(name="conformance")
@click.option("--domain", "domains", default="all", show_default=True,
              help="Comma-separated domains (mock, airline, retail, telecom, banking_knowledge) or all.")
@click.option("--recording", type=click.Path(path_type=Path), default=Path("../shared/conformance/tau2"),
              show_default=True, envvar="UXLOCAL_TAU2_RECORDING", help="The recorded suite's folder.")
@click.option("--tau2-data", type=click.Path(path_type=Path), default=Path("../shared/data/tau2"),
              show_default=True, envvar="UXLOCAL_TAU2_DATA", help="A tau2 data folder.")
@click.option("--show", type=int, default=0, show_default=True, envvar="UXLOCAL_TAU2_SHOW",
              help="Print the first N mismatches of each kind.")
@click.option("--episodes", type=click.Path(path_type=Path, file_okay=False), default=None,
              envvar="UXLOCAL_TAU2_EPISODES",
              help="An episode recording folder (<domain>.json.gz): replay whole episodes through the "
                   "upstream protocol instead of single calls (default: the call-level suite).")
@click.option("--upstream", type=click.Path(path_type=Path, file_okay=False), default=None,
              envvar="UXLOCAL_TAU2_UPSTREAM",
              help="tau2-bench's source (its src/tau2), for --episodes when --tau2-data is a bare data "
                   "folder (default: the checkout --tau2-data sits in).")
def tau2_conformance(domains: str, recording: Path, tau2_data: Path, show: int, episodes: Path | None,
                     upstream: Path | None) -> None:
    """Replay tau2's recorded suite and print the agreement table.

    \b
    Examples:
      uxlocal tau2 conformance --domain mock,retail --show 3
      uxlocal tau2 conformance --episodes ../shared/conformance/tau2-episodes \\
        --upstream ../shared/upstream/tau2-bench-8ebb749
    """
    if episodes is not None:
        _episode_conformance(episodes, tau2_data, upstream, domains, show)
        return
    from uxlocal.tau2.conformance.__main__ import main

    argv = [
        "--recording",
        str(recording),
        "--data",
        str(tau2_data),
        "--domains",
        domains,
        "--show",
        str(show),
    ]
    if main(argv) != 0:
        raise click.ClickException(f"no recorded suite for {domains} in {recording}")


def _episode_conformance(folder: Path, tau2_data: Path, upstream: Path | None, domains: str,
                         show: int) -> None:
    """Print the episode-level table for a recording folder (and the first ``show`` mismatches)."""
    import tempfile

    from uxlocal.tau2.conformance.episode_check import check_folder, episodes_table, find_checkout

    names = None if domains == "all" else [d.strip() for d in domains.split(",") if d.strip()]
    with tempfile.TemporaryDirectory(prefix="uxlocal-checkout-") as scratch:
        try:
            checkout = find_checkout(tau2_data, upstream, Path(scratch))
            reports = check_folder(folder, checkout, run_episodes_from_command, names, keep=max(show, 1))
        except ValueError as err:
            raise InputError(str(err)) from None
    click.echo(episodes_table(reports))
    for report in reports:
        for line in report.mismatches[:show]:
            click.echo(f"  {report.domain}: {line}")


def register_commands(cli: click.Group) -> None:
    """Add the suite's commands to the root ``uxlocal`` group (the CLI finds this hook in the package)."""
    cli.add_command(tau2_group)
