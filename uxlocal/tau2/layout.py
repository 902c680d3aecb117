"""Where tau2 data files live: one resolver, so every loader accepts the same three spellings.

A data dir may be given as

- ``<dir>`` holding ``domains/<domain>/…`` (our shared copy, or a checkout's ``data/tau2``), or
- a tau2-bench checkout root, holding ``data/tau2/domains/<domain>/…``.

The data is MIT-licensed third-party material: we read it in place and never copy it. Our own
sample domains (``homenet``, CC0) ship in the package under ``uxlocal/data/tau2`` in the same
layout; ``domain_dir`` finds them whichever data dir is given, so ``--domain homenet`` works with
or without tau2's data.
"""

from __future__ import annotations

from pathlib import Path

from uxlocal.errors import InputError

_LAYOUT_HINT = "point at a folder holding domains/<domain>/tasks.json, or at a tau2-bench checkout root"
SAMPLE_DATA = Path(__file__).resolve().parents[1] / "data" / "tau2"
"""The sample domains we wrote (CC0), shipped in the package and laid out like a tau2 data dir."""
SAMPLE_DOMAIN = "homenet"
"""The bundled sample domain the demo and the machinery tests run when tau2's data is absent."""


def tau2_root(data_dir: str | Path) -> Path:
    """Find the folder that holds ``domains/`` (and ``user_simulator/``), whichever spelling was given."""
    base = Path(data_dir).expanduser()
    for candidate in (base, base / "data" / "tau2"):
        if (candidate / "domains").is_dir():
            return candidate
    raise InputError("no tau2 data here (no domains/ folder)", _LAYOUT_HINT, path=base)


def available_domains(data_dir: str | Path) -> list[str]:
    """Domain folder names present under the data dir, sorted."""
    return sorted(p.name for p in (tau2_root(data_dir) / "domains").iterdir() if p.is_dir())


def sample_domains() -> list[str]:
    """Names of the bundled sample domains, sorted."""
    return available_domains(SAMPLE_DATA)


def domain_dir(data_dir: str | Path, domain: str) -> Path:
    """``<root>/domains/<domain>``, else the bundled sample of that name; the error lists what exists."""
    root = tau2_root(data_dir)
    for path in (root / "domains" / domain, SAMPLE_DATA / "domains" / domain):
        if path.is_dir():
            return path
    known = ", ".join(sorted(set(available_domains(root)) | set(sample_domains())))
    hint = f"available: {known}"
    if root.resolve() == SAMPLE_DATA:
        hint += "; tau2's own domains need --tau2-data DIR or UXLOCAL_TAU2_DATA"
    raise InputError(f"no tau2 domain {domain!r}", hint, path=root / "domains")
