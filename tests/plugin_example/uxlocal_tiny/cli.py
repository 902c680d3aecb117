"""``uxlocal tiny-items``: the suite's own command, added through its ``register_commands`` hook."""

from __future__ import annotations

import click

from uxlocal.clikit import CONTEXT


@click.command(name="tiny-items", context_settings=CONTEXT)
def tiny_items() -> None:
    """List the sentences the tiny suite asks about."""
    from uxlocal_tiny.suite import SENTENCES

    for sentence in SENTENCES:
        click.echo(sentence)


def register_commands(cli: click.Group) -> None:
    """Add the suite's commands to ``uxlocal``."""
    cli.add_command(tiny_items)
