"""Where the tau2 data is, and the fingerprint of the files a run reads from it.

The data (MIT, Sierra) is read in place and never bundled. A run names it with ``--tau2-data``,
else ``UXLOCAL_TAU2_DATA``, else a ``shared/data/tau2`` folder beside a uxlocal checkout (the
development layout). The path is not part of the run identity; the sha256 of every file the run
reads is (tasks, splits, policy, DBs), so moving the data resumes the same run and editing it
starts a new one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from uxlocal.errors import InputError
from uxlocal.tau2 import domain_spec, tau2_root
from uxlocal.tau2.layout import domain_dir

ENV_VAR = "UXLOCAL_TAU2_DATA"
_CHECKOUT_DATA = Path(__file__).resolve().parents[4].parent / "shared" / "data" / "tau2"
_HINT = (f"pass --tau2-data DIR or set {ENV_VAR}; DIR holds domains/<domain>/tasks.json "
         "(a tau2-bench checkout works)")


def default_data_dir() -> Path | None:
    """Find the data dir without a flag (environment variable, then the checkout layout), or None."""
    configured = os.environ.get(ENV_VAR)
    for candidate in ([Path(configured)] if configured else []) + [_CHECKOUT_DATA]:
        try:
            return tau2_root(candidate)
        except InputError:
            continue
    return None


def resolve_data_dir(explicit: Path | None) -> Path:
    """Return the data dir to use; a clear error when none is given or found."""
    if explicit is not None:
        return tau2_root(explicit)
    found = default_data_dir()
    if found is None:
        raise InputError(None, None, "no tau2 data found", _HINT)
    return found


def data_hashes(root: Path, domains: Sequence[str]) -> dict[str, str]:
    """sha256 of every data file a run of ``domains`` reads, keyed ``tau2-data/<domain>/<file>``."""
    hashes: dict[str, str] = {}
    for name in domains:
        spec = domain_spec(name)
        folder = domain_dir(root, name)
        files = ["tasks.json", "split_tasks.json", spec.policy_file, spec.db_file, spec.user_db_file]
        files += [file for _, file in spec.policy_sections]
        for file in sorted({f for f in files if f}):
            path = folder / file
            if path.is_file():
                hashes[f"tau2-data/{name}/{file}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes
