"""``uxlocal tau2 …``: commands about the tau2 runtime itself (no model, no store)."""

from __future__ import annotations

from pathlib import Path

import click

from uxlocal.errors import InputError

from .common import CONTEXT


@click.group(name="tau2", context_settings=CONTEXT)
def tau2_group() -> None:
    """Check the offline tau2 runtime against tau2 data.

    \b
    Example:
      uxlocal tau2 replay --domain telecom --agent gold
    """


@tau2_group.command(name="replay")
@click.option("--domain", "domains", multiple=True, required=True, envvar="UXLOCAL_TAU2_DOMAIN",
              help="Domain to replay (mock, retail, airline, telecom); repeat for several.")
@click.option("--tau2-data", type=click.Path(path_type=Path), default=None, envvar="UXLOCAL_TAU2_DATA",
              help="A tau2 checkout or data folder (default: UXLOCAL_TAU2_DATA, then ../shared/data/tau2).")
@click.option("--agent", "agents", multiple=True, default=("gold",), show_default=True,
              type=click.Choice(["gold", "empty", "transfer-only"]),
              help="Scripted agent: gold actions, nothing, or one transfer; repeat for several.")
def tau2_replay(domains: tuple[str, ...], tau2_data: Path | None, agents: tuple[str, ...]) -> None:
    """Replay scripted agents through the runtime, with no model.

    \b
    Examples:
      uxlocal tau2 replay --domain telecom --agent gold
      uxlocal tau2 replay --domain retail --domain airline --agent empty --tau2-data ~/tau2-bench
    """
    from uxlocal.tau2.data import resolve_data_dir
    from uxlocal.tau2.replay import replay_domain

    root = resolve_data_dir(tau2_data)
    for domain in domains:
        for agent in agents:
            try:
                summary = replay_domain(root, domain, agent)  # type: ignore[arg-type]
            except KeyError as err:
                raise InputError(root, None, str(err.args[0])) from None
            click.echo("\n".join(summary.lines()))
