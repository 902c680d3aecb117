"""Find suite plugins: the ``uxlocal.suites`` entry point group, the built-in suites included.

A suite package declares ``name = "module:SuiteClass"`` under
``[project.entry-points."uxlocal.suites"]`` in its ``pyproject.toml``; ``uxlocal`` declares its own
suites there the same way. This module only *finds* them, without importing suite code, so the
store (which loads each suite's ``views.sql``) can use it from below the suites;
``uxlocal.suites.base`` loads the classes.

A source checkout whose installed metadata predates the group (an editable install made before a
suite was added) would see no built-ins; then the group is read from the checkout's
``pyproject.toml`` instead, so both paths declare the built-ins in one place.
"""

from __future__ import annotations

import importlib.util
import tomllib
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

GROUP = "uxlocal.suites"
VIEWS_FILE = "views.sql"
_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def suite_entry_points() -> list[EntryPoint]:
    """Every suite entry point, sorted by name; the checkout's own when the installed metadata lacks them."""
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    if not any(ep.value.startswith("uxlocal.") for ep in found.values()):
        for ep in checkout_entry_points():
            found.setdefault(ep.name, ep)
    return sorted(found.values(), key=lambda ep: ep.name)


def checkout_entry_points(pyproject: Path = _PYPROJECT) -> list[EntryPoint]:
    """The group as a source checkout's ``pyproject.toml`` declares it ([] outside a checkout)."""
    if not pyproject.is_file():
        return []
    table = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    declared = table.get("project", {}).get("entry-points", {}).get(GROUP, {})
    return [EntryPoint(name=name, value=value, group=GROUP) for name, value in declared.items()]


def suite_folder(ep: EntryPoint) -> Path | None:
    """The package folder holding the entry point's module (None: a top-level module, or absent).

    ``find_spec`` imports the parent packages (their ``__init__``) but not the suite module.
    """
    try:
        spec = importlib.util.find_spec(ep.module)
    except ModuleNotFoundError:
        return None
    if spec is None or spec.origin is None:
        return None
    if spec.submodule_search_locations:
        return Path(spec.origin).parent
    return Path(spec.origin).parent if "." in ep.module else None


def suite_view_files() -> list[Path]:
    """Each registered suite's ``views.sql`` (beside its module, in its package), by suite name."""
    files: dict[Path, None] = {}  # two suites of one package share its file
    for ep in suite_entry_points():
        folder = suite_folder(ep)
        if folder is not None and (folder / VIEWS_FILE).is_file():
            files[folder / VIEWS_FILE] = None
    return list(files)
