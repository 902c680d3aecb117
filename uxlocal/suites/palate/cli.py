"""``uxlocal palate``: card pool and panel tools, LoRA simulator training, and the agreement and
realism parts of the PALATE suite run on their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from uxlocal.clikit import CONTEXT, print_rows, run_options, run_suite_from_command, split_run_options
from uxlocal.errors import UxlocalError


@click.group(name="palate", context_settings=CONTEXT)
def palate_group() -> None:
    """PALATE tools: check cards, freeze panels, train simulators, validate.

    \b
    Examples:
      uxlocal palate check
      uxlocal palate train-simulator --user u2 --base embedded
      uxlocal palate agreement --users all -m judge=embedded --db palate.duckdb
    """


def _run_palate_part(part: str, kwargs: dict[str, Any]) -> None:
    """Run the palate suite with ``parts=part`` (the shared run options apply) and print its tables."""
    common = split_run_options(kwargs)
    run_suite_from_command("palate", {"parts": part, **kwargs}, common)


def _palate_user_options(fn: Any) -> Any:
    for option in reversed([
        click.option("--users", default="all", show_default=True, help="\"all\" or comma-separated ids."),
        click.option("--users-dir", default=None, help="Folder of user folders (default: bundled users)."),
        click.option("--heldout-sessions", type=int, default=None, help="At most N held-out sessions a user."),
    ]):
        fn = option(fn)
    return fn


@palate_group.command(name="agreement", context_settings=CONTEXT)
@run_options
@_palate_user_options
@click.option("--without-reaction/--no-without-reaction", "agreement_without_reaction", default=True,
              show_default=True, help="Also score the user's rubric without the next-turn evidence.")
def palate_agreement(**kwargs: Any) -> None:
    """Score held-out rated sessions; report pairwise agreement.

    \b
    Example:
      uxlocal palate agreement --users u1,u3 -m judge=qwen3-32b --db palate.duckdb
    """
    _run_palate_part("agreement", kwargs)


@palate_group.command(name="realism", context_settings=CONTEXT)
@run_options
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
    _run_palate_part("realism", kwargs)


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
    from uxlocal.engine.resolve import resolve
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
    print_rows(["user", "trained", "sequences", "held-out loss base (ppl)", "adapter (ppl)", "folder"], rows,
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


def register_commands(cli: click.Group) -> None:
    """Hook the CLI finds in the suite's package: add the suite's commands to the root ``uxlocal`` group."""
    cli.add_command(palate_group)
