"""Where the tau2 data is, and the fingerprint of the files a run reads from it.

The data (MIT, Sierra) is read in place and never bundled. A run names it with ``--tau2-data``,
else ``UXLOCAL_TAU2_DATA``, else a ``shared/data/tau2`` folder beside a uxlocal checkout (the
development layout), else the bundled sample data (our ``homenet`` domain only), so a fresh
install can run ``--domain homenet`` and is told how to get tau2's own domains otherwise. The path
is not part of the run identity; the sha256 of every file the run reads is (tasks, splits, policy,
DBs), so moving the data resumes the same run and editing it starts a new one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from uxlocal import settings
from uxlocal.errors import InputError
from uxlocal.tau2 import domain_spec, tau2_root
from uxlocal.tau2.layout import SAMPLE_DATA, SAMPLE_DOMAIN, domain_dir
from uxlocal.tau2.tool_words import SEAT_FILES, find_tools_dir

ENV_VAR = "UXLOCAL_TAU2_DATA"
_CHECKOUT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tau2"
"""``../shared/data/tau2`` beside the checkout (this file is ``<checkout>/uxlocal/tau2/data.py``)."""


def default_data_dir() -> Path | None:
    """Find the data dir without a flag (environment variable, then the checkout layout), or None."""
    configured = settings.current().tau2_data
    for candidate in ([Path(configured)] if configured else []) + [_CHECKOUT_DATA]:
        try:
            return tau2_root(candidate)
        except InputError:
            continue
    return None


def resolve_data_dir(explicit: Path | None) -> Path:
    """Return the data dir to use: the one given, the configured one, else the bundled sample data.

    With the sample data, asking for a domain it lacks is an error that says how to point at
    tau2's data (``layout.domain_dir``).
    """
    if explicit is not None:
        return tau2_root(explicit)
    return default_data_dir() or SAMPLE_DATA


@dataclass(frozen=True)
class DemoData:
    """Which tau2 data ``uxlocal demo`` plays, and the sentence that tells the user."""

    root: Path
    domain: str
    description: str


def demo_data() -> DemoData:
    """tau2's mock domain when the data is configured, else our bundled sample domain."""
    found = default_data_dir()
    if found is not None:
        return DemoData(found, "mock", f"tau2's mock domain from {found}")
    return DemoData(SAMPLE_DATA, SAMPLE_DOMAIN,
                    f"uxlocal's bundled sample domain {SAMPLE_DOMAIN!r} (no tau2 data found; set {ENV_VAR} "
                    "to a folder holding domains/<domain>/tasks.json, or a tau2-bench checkout, to play "
                    "tau2's own domains)")


def data_hashes(root: Path, domains: Sequence[str]) -> dict[str, str]:
    """sha256 of every data file a run of ``domains`` reads, keyed ``tau2-data/<domain>/<file>``
    (the tools files with upstream's words, when used, as ``tau2-tools/<domain>/<file>``)."""
    hashes: dict[str, str] = {}
    for name in domains:
        spec = domain_spec(name)
        folder = domain_dir(root, name)
        files = ["tasks.json", "split_tasks.json", spec.policy_file, spec.db_file, spec.user_db_file]
        files += [file for _, file in spec.policy_sections]
        if spec.task_glob is not None:
            files = [f for f in files if f != "tasks.json"]
            files += [path.relative_to(folder).as_posix() for path in sorted(folder.glob(spec.task_glob))]
        if spec.policy_components is not None:
            files += [path.relative_to(folder).as_posix()
                      for path in sorted((folder / spec.policy_components).glob("*.md"))]
        for file in sorted({f for f in files if f}):
            path = folder / file
            if path.is_file():
                hashes[f"tau2-data/{name}/{file}"] = hashlib.sha256(path.read_bytes()).hexdigest()
        words = find_tools_dir(folder, name)  # upstream's tool words change what the models read
        for file in SEAT_FILES.values() if words is not None else ():
            if (words / file).is_file():
                hashes[f"tau2-tools/{name}/{file}"] = hashlib.sha256((words / file).read_bytes()).hexdigest()
    return hashes
