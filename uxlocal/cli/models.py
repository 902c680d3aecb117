"""The serving stack: ``uxlocal models list|prepare`` and ``uxlocal doctor``."""

from __future__ import annotations

import click

from uxlocal.clikit import CONTEXT, print_rows
from uxlocal.errors import InputError


@click.group(name="models", context_settings=CONTEXT)
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
    print_rows(["preset", "backend", "dtype", "max_model_len", "ready", "where / how"], rows, "table")


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
        raise InputError(f"unknown preset {name!r}", f"known: {', '.join(sorted(presets))}")
    folder = prepare(presets[name], force=force)
    click.echo(f"{name}: ready at {folder}")


@click.command(name="doctor", context_settings=CONTEXT)
def doctor() -> None:
    """Check the serving stack: vLLM, LoRA kernels, CPU tuning.

    Reports the vLLM build, whether our CPU LoRA kernels and the preloaded CPU libraries
    (tcmalloc, Intel OpenMP) are active, the CPU engine settings, and the last
    benchmarks/engine_roofline.py figure if one is stored.

    \b
    Example:
      uxlocal doctor
    """
    from uxlocal.doctor import checks

    print_rows(["check", "status", "detail"], checks(), "table")
