"""Find plugins: suites, engine backends and tau2 domains, each an entry point group, built-ins included.

The three extension points look alike: a package declares ``name = "module:attr"`` under
``[project.entry-points."<group>"]`` in its ``pyproject.toml``, and uxlocal declares its own
built-ins there the same way:

- ``uxlocal.suites`` (``GROUP``): a ``Suite`` class (``uxlocal run NAME``);
- ``uxlocal.backends`` (``BACKENDS_GROUP``): an ``engine.backends.Backend`` (``--model ROLE=SPEC@NAME``);
- ``uxlocal.tau2_domains`` (``TAU2_DOMAINS_GROUP``): a ``tau2.registry.DomainSpec``.

For suites:

A suite package declares ``name = "module:SuiteClass"`` under
``[project.entry-points."uxlocal.suites"]`` in its ``pyproject.toml``; ``uxlocal`` declares its own
suites there the same way. The suite's package may hold ``views.sql`` (its metric views) and
``cli.py`` (its commands, added by ``register_commands(cli)``) beside the suite module. This module
only *finds* them, without importing suite code, so the store can load every suite's views from
below the suites and ``uxlocal --help`` need not import the suites; ``uxlocal.suites.base`` loads
the classes.

A source checkout whose installed metadata predates a built-in (an editable install made before
the suite was added) would not see it; so a checkout's own ``pyproject.toml`` adds the names the
metadata lacks. Either way the built-ins are declared in one place and load as entry points.
"""

from __future__ import annotations

import importlib.util
import tomllib
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

GROUP = "uxlocal.suites"
BACKENDS_GROUP = "uxlocal.backends"
TAU2_DOMAINS_GROUP = "uxlocal.tau2_domains"
VIEWS_FILE = "views.sql"
MIGRATIONS_FOLDER = "migrations"
COMMANDS_FILE = "cli.py"
_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def group_entry_points(group: str) -> list[EntryPoint]:
    """Return every entry point of ``group``, sorted by name; a checkout's own fill in what the metadata lacks."""
    found = {ep.name: ep for ep in entry_points(group=group)}
    for ep in checkout_entry_points(group=group):
        found.setdefault(ep.name, ep)
    return sorted(found.values(), key=lambda ep: ep.name)


def suite_entry_points() -> list[EntryPoint]:
    """Return every suite entry point, sorted by name."""
    return group_entry_points(GROUP)


def checkout_entry_points(pyproject: Path = _PYPROJECT, *, group: str = GROUP) -> list[EntryPoint]:
    """Return ``group`` as uxlocal's source checkout declares it.

    [] outside a checkout: an installed package has no ``pyproject.toml`` beside it, or another project's.
    """
    if not pyproject.is_file():
        return []
    project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    if project.get("name") != "uxlocal":
        return []
    declared = project.get("entry-points", {}).get(group, {})
    return [EntryPoint(name=name, value=value, group=group) for name, value in declared.items()]


def load_named(group: str, name: str) -> object | None:
    """Return the object entry point ``name`` of ``group`` names (imported now), or None when none is declared."""
    for ep in group_entry_points(group):
        if ep.name == name:
            return ep.load()
    return None


def suite_package(ep: EntryPoint) -> tuple[str, Path] | None:
    """(name, folder) of the package holding the entry point's module; None for a top-level
    module or one that is absent. ``find_spec`` imports the parent packages (their ``__init__``),
    not the suite module.
    """
    try:
        spec = importlib.util.find_spec(ep.module)
    except ModuleNotFoundError:
        return None
    if spec is None or spec.origin is None:
        return None
    if spec.submodule_search_locations:
        return ep.module, Path(spec.origin).parent
    package = ep.module.rpartition(".")[0]
    return (package, Path(spec.origin).parent) if package else None


def suite_view_files() -> list[Path]:
    """Each registered suite's ``views.sql`` (in its package, beside its module), by suite name."""
    files: dict[Path, None] = {}  # two suites of one package share its file
    for ep in suite_entry_points():
        found = suite_package(ep)
        if found is not None and (found[1] / VIEWS_FILE).is_file():
            files[found[1] / VIEWS_FILE] = None
    return list(files)


def suite_migration_folders() -> list[tuple[str, Path]]:
    """Return (package, folder) of each registered suite package's ``migrations/`` folder, by suite name.

    A suite's tables come with the suite: its numbered ``NNN_snake_name.sql`` files are applied
    after the core migrations and recorded as ``<package>/<file>`` (two suites of one package share them).
    """
    folders: dict[Path, str] = {}
    for ep in suite_entry_points():
        found = suite_package(ep)
        if found is not None and (found[1] / MIGRATIONS_FOLDER).is_dir():
            folders.setdefault(found[1] / MIGRATIONS_FOLDER, found[0])
    return [(package, folder) for folder, package in folders.items()]


def suite_command_modules() -> list[str]:
    """Each registered suite's ``<package>.cli`` module (when its package has a ``cli.py``), by suite name.

    The CLI imports these for their ``register_commands(cli)`` hook; the suites themselves stay unimported.
    """
    modules: dict[str, None] = {}
    for ep in suite_entry_points():
        found = suite_package(ep)
        if found is not None and (found[1] / COMMANDS_FILE).is_file():
            modules[f"{found[0]}.{COMMANDS_FILE.removesuffix('.py')}"] = None
    return list(modules)
