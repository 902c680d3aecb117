"""The code's shape, as tests: thin CLI commands, and suites that never import one another."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import click
import pytest

import uxlocal
from uxlocal.cli import cli

PACKAGE = Path(uxlocal.__file__).parent
MAX_COMMAND_BODY = 40


def _commands(group: click.Group, path: str = "uxlocal") -> list[tuple[str, click.Command]]:
    ctx = click.Context(group, info_name=path)
    found: list[tuple[str, click.Command]] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        found.append((f"{path} {name}", command))
        if isinstance(command, click.Group):
            found += _commands(command, f"{path} {name}")
    return found


def _body_lines(fn: object) -> int:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))  # type: ignore[arg-type]
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    return node.end_lineno - node.body[0].lineno + 1  # type: ignore[operator]


def test_cli_every_command_body_is_at_most_40_lines() -> None:
    commands = _commands(cli)
    assert len(commands) >= 20, "the walk missed the command tree"
    long = {path: _body_lines(cmd.callback) for path, cmd in commands
            if cmd.callback is not None and _body_lines(cmd.callback) > MAX_COMMAND_BODY}
    assert long == {}


def test_cli_body_counter_counts_docstring_and_statements() -> None:
    def sample() -> None:
        """Doc."""
        x = 1
        del x

    assert _body_lines(sample) == 3


SHARED_SUITE_MODULES = {"base"}
"""Modules of ``uxlocal.suites`` every suite may import (the suite protocol and registry)."""


def _suite_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) > 2 and parts[:2] == ["uxlocal", "suites"] and parts[2] not in SHARED_SUITE_MODULES:
        return parts[2]
    return None


def _imported_modules(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
    return names


def test_suites_never_import_another_suite() -> None:
    crossings = []
    for path in sorted((PACKAGE / "suites").rglob("*.py")):
        module = "uxlocal." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        own = _suite_of(module)
        if own is None:
            continue
        for name in _imported_modules(path, module):
            other = _suite_of(name)
            if other is not None and other != own:
                crossings.append(f"{module} -> {name}")
    assert crossings == []


def test_suite_import_check_sees_a_crossing() -> None:
    assert _suite_of("uxlocal.suites.tau2.suite") == "tau2"
    assert _suite_of("uxlocal.suites.base") is None
    assert _suite_of("uxlocal.suites.userproxy.ufs.report") == "userproxy"
    assert _suite_of("uxlocal.tau2.env") is None


def _modules_under(folder: str) -> list[tuple[str, set[str]]]:
    """(module, modules it imports) for every file under ``uxlocal/<folder>`` (or the one module)."""
    root = PACKAGE / folder
    paths = sorted(root.rglob("*.py")) if root.is_dir() else [root.with_suffix(".py")]
    found = []
    for path in paths:
        module = "uxlocal." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        found.append((module.removesuffix(".__init__"), _imported_modules(path, module)))
    return found


def _reaching(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{module} -> {name}" for module, names in _modules_under(folder) for name in sorted(names)
            if any(name == f or name.startswith(f + ".") for f in forbidden)]


# issue 31: what a layer may not import, so no arrow runs back up; one row per layer
@pytest.mark.parametrize("folder, forbidden", [
    ("reportkit", ("uxlocal.suites", "uxlocal.report", "uxlocal.runner", "uxlocal.cli")),  # below the suites
    ("clikit", ("uxlocal.suites", "uxlocal.report", "uxlocal.runner", "uxlocal.cli")),  # below the suites
    ("plugins", ("uxlocal.suites", "uxlocal.store", "uxlocal.report", "uxlocal.cli")),  # finds, not imports
    ("store", ("uxlocal.suites", "uxlocal.report", "uxlocal.runner", "uxlocal.cli")),  # views come as files
    ("suites", ("uxlocal.report", "uxlocal.runner", "uxlocal.cli", "uxlocal.demo")),  # suites use reportkit
])
def test_layer_never_imports_a_layer_above_it(folder: str, forbidden: tuple[str, ...]) -> None:
    assert _reaching(folder, forbidden) == []


def test_layer_check_sees_an_import_up() -> None:
    assert _reaching("cli", ("uxlocal.suites",)) != []


def test_only_the_command_modules_import_click() -> None:
    allowed = ("uxlocal.cli", "uxlocal.clikit", "uxlocal.errors")
    importers = [module for module, names in _modules_under("") if "click" in names
                 and not module.startswith(allowed) and not module.endswith(".cli")]
    assert importers == []


def test_core_commands_load_no_suite_and_help_loads_every_suites_commands(tmp_path: Path) -> None:
    import subprocess
    import sys

    probe = ("import sys, click\nfrom uxlocal.cli import cli\nctx = click.Context(cli)\n"
             "cli.get_command(ctx, 'query')\n"
             "print(any(m.startswith('uxlocal.suites.') and m != 'uxlocal.suites.base'\n"
             "          for m in sys.modules))\n"
             "print(' '.join(sorted(set(cli.list_commands(ctx)) - {'query'})))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         cwd=PACKAGE.parent, check=True).stdout.splitlines()
    assert out[0] == "False"
    assert {"palate", "judge", "tau2", "ingest", "ufs"} <= set(out[1].split())
