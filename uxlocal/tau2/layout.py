"""Where tau2 data files live: one resolver, so every loader accepts the same three spellings.

A data dir may be given as

- ``<dir>`` holding ``domains/<domain>/…`` (our shared copy, or a checkout's ``data/tau2``), or
- a tau2-bench checkout root, holding ``data/tau2/domains/<domain>/…``.

The data is MIT-licensed third-party material: we read it in place and never copy it.
"""

from __future__ import annotations

from pathlib import Path

from uxlocal.errors import InputError

_LAYOUT_HINT = "point at a folder holding domains/<domain>/tasks.json, or at a tau2-bench checkout root"


def tau2_root(data_dir: str | Path) -> Path:
    """Find the folder that holds ``domains/`` (and ``user_simulator/``), whichever spelling was given."""
    base = Path(data_dir).expanduser()
    for candidate in (base, base / "data" / "tau2"):
        if (candidate / "domains").is_dir():
            return candidate
    raise InputError(base, None, "no tau2 data here (no domains/ folder)", _LAYOUT_HINT)


def available_domains(data_dir: str | Path) -> list[str]:
    """Domain folder names present under the data dir, sorted."""
    return sorted(p.name for p in (tau2_root(data_dir) / "domains").iterdir() if p.is_dir())


def domain_dir(data_dir: str | Path, domain: str) -> Path:
    """``<root>/domains/<domain>``; the error lists the domains that do exist."""
    root = tau2_root(data_dir)
    path = root / "domains" / domain
    if not path.is_dir():
        known = ", ".join(available_domains(root)) or "none"
        raise InputError(root / "domains", None, f"no tau2 domain {domain!r}", f"available: {known}")
    return path
