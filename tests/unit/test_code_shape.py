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


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """Return the absolute module a ``from ... import`` names (relative ones resolved against ``package``)."""
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([base] if base else []))
    return base


def _imported_modules(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(_from_module(node, package))
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


# ---- issue 31: imports run one way (no circles, no arrow back up) -------------------------------

REPO = PACKAGE.parent
KNOWN_CIRCLES: dict[frozenset[str], str] = {}
"""Two-module circles that stand today, each with its reason; a new one fails the test below."""


def _module_name(path: Path) -> str:
    return ".".join(("uxlocal", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")


def _runtime_imports(source: str, module: str, known: set[str], *, is_package: bool = False) -> set[str]:
    """Return the modules of ``known`` that ``module`` imports when it runs.

    Lazy imports count, ``TYPE_CHECKING`` ones do not, and ``from pkg import submodule`` is an arrow to the
    submodule, not to ``pkg/__init__``.
    """
    tree = ast.parse(source)
    package = module if is_package else module.rsplit(".", 1)[0]
    typing_only = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for stmt in node.body for n in ast.walk(stmt)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_module(node, package)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(base)
    return {name for name in found if name in known and name != module}


def _import_graph() -> dict[str, set[str]]:
    files = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {module: _runtime_imports(path.read_text(encoding="utf-8"), module, set(files),
                                     is_package=path.name == "__init__.py") for module, path in files.items()}


def test_no_two_modules_import_each_other_at_run_time() -> None:
    graph = _import_graph()
    circles = {frozenset({a, b}) for a, deps in graph.items() for b in deps if a in graph.get(b, set())}
    assert sorted(sorted(c) for c in circles - set(KNOWN_CIRCLES)) == []
    assert set(KNOWN_CIRCLES) <= circles, "a known circle is gone: drop it from KNOWN_CIRCLES"


def test_circle_check_counts_lazy_imports_but_not_type_checking_ones() -> None:
    known = {"uxlocal.a", "uxlocal.b", "uxlocal.c", "uxlocal.pkg", "uxlocal.pkg.sub"}
    source = textwrap.dedent("""
        from typing import TYPE_CHECKING
        from uxlocal.pkg import sub
        if TYPE_CHECKING:
            from uxlocal.b import Thing
        def later():
            from . import c
    """)
    assert _runtime_imports(source, "uxlocal.a", known) == {"uxlocal.pkg.sub", "uxlocal.c"}


def _imports_of(relative: str) -> set[str]:
    path = PACKAGE / relative
    return _runtime_imports(path.read_text(encoding="utf-8"), _module_name(path), set(_import_graph()))


def test_models_never_imports_the_engine() -> None:
    # served-name discovery is the engine's (engine/resolve.py); presets sit below the engines
    assert {m for m in _imports_of("models.py") if m.startswith("uxlocal.engine")} == set()


def test_episode_protocol_depends_on_the_engine_types_only() -> None:
    assert {m for m in _imports_of("episode.py") if m.startswith("uxlocal.")} == {"uxlocal.engine.base"}


def test_suites_and_the_tau2_runtime_never_import_the_scheduler_or_runner() -> None:
    # episode programs are written against uxlocal.episode; the scheduler runs them from above
    graph = _import_graph()
    above = ("uxlocal.rollout", "uxlocal.runner")
    crossings = sorted(f"{m} -> {dep}" for m, deps in graph.items()
                       if m.startswith(("uxlocal.suites.", "uxlocal.tau2.")) for dep in deps
                       if dep in above or dep.startswith(tuple(a + "." for a in above)))
    assert crossings == []


def test_runner_leaves_sql_to_the_store() -> None:
    tree = ast.parse((PACKAGE / "runner.py").read_text(encoding="utf-8"))
    calls = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr == "execute"]
    assert calls == [], "runs-table SQL belongs in uxlocal/store/runs.py"


def _sql_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr in ("execute", "sql", "executemany")]


def test_the_scheduler_leaves_sql_to_the_store() -> None:
    # issue 45: the generation cache's lookup is store/generation_cache.py's; the scheduler runs no SQL
    calls = {str(path.relative_to(PACKAGE)): lines for path in sorted((PACKAGE / "rollout").rglob("*.py"))
             if (lines := _sql_calls(path))}
    assert calls == {}
    assert _sql_calls(PACKAGE / "store" / "generation_cache.py") != []  # the check sees a query


def _engine_probes(tree: ast.AST) -> list[int]:
    """Lines that learn an engine's or renderer's abilities by probing instead of reading a declaration."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if name in ("inspect.signature", "signature"):
            found.append(node.lineno)
        elif (name in ("getattr", "hasattr") and node.args
              and isinstance(node.args[0], ast.Name | ast.Attribute)
              and any(w in ast.unparse(node.args[0]).lower() for w in ("engine", "renderer", "slot"))):
            found.append(node.lineno)
    return found


def test_engines_are_read_by_declaration_never_probed() -> None:
    # issue 45: every ability the scheduler uses is declared in engine/base.py (Engine, Renderer)
    outside = [path for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "engine" / "base.py"
               and "tau2" not in path.relative_to(PACKAGE).parts]  # tau2 binds tool functions by signature
    probes = {str(path.relative_to(PACKAGE)): lines for path in outside
              if (lines := _engine_probes(ast.parse(path.read_text(encoding="utf-8"))))}
    assert probes == {}
    sample = "import inspect\ninspect.signature(engine.generate)\ngetattr(renderer, 'ids_in_engine', False)\n"
    assert _engine_probes(ast.parse(sample)) == [2, 3]


def _environment_reads(tree: ast.AST) -> list[int]:
    """Lines that touch the process environment (``os.environ``, ``os.getenv``, ``os.putenv``)."""
    return sorted({node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                   and ast.unparse(node) in ("os.environ", "os.getenv", "os.putenv")})


def test_only_the_settings_module_and_the_cli_read_the_environment() -> None:
    # issue 45: one settings object (uxlocal/settings.py) says what every UXLOCAL_* variable means
    allowed = {PACKAGE / "settings.py"}
    reads = {str(path.relative_to(PACKAGE)): lines for path in sorted(PACKAGE.rglob("*.py"))
             if path not in allowed and "cli" not in path.relative_to(PACKAGE).parts[:1]
             and (lines := _environment_reads(ast.parse(path.read_text(encoding="utf-8"))))}
    assert reads == {}
    assert _environment_reads(ast.parse("import os\nos.environ.get('X')\nos.getenv('Y')\n")) == [2, 3]


def test_importing_uxlocal_changes_nothing_in_the_environment() -> None:
    import subprocess
    import sys

    probe = ("import os, json\nbefore = dict(os.environ)\nimport uxlocal, uxlocal.rollout, uxlocal.runner\n"
             "print(json.dumps(sorted(set(os.environ.items()) ^ set(before.items()))))\n")
    from uxlocal import settings

    defaults = {**settings.OFFLINE_DEFAULTS, **settings.VLLM_CPU_DEFAULTS}  # unset: a change would show
    env = {k: v for k, v in settings.environment().items() if k not in defaults}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         cwd=PACKAGE.parent, check=True, env=env).stdout
    assert out.strip() == "[]"


def test_no_scheduler_class_is_over_150_lines() -> None:
    long = {f"{path.name}:{node.name}": node.end_lineno - node.lineno + 1  # type: ignore[operator]
            for path in sorted((PACKAGE / "rollout").rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 150}  # type: ignore[operator]
    assert long == {}


def test_http_transport_leaves_label_walks_to_labelprobs() -> None:
    tree = ast.parse((PACKAGE / "engine" / "http.py").read_text(encoding="utf-8"))
    taken = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and node.module == "uxlocal.engine.labelprobs" for alias in node.names}
    assert taken & {"expand", "start_walk", "settle_in_proportion", "LabelWalk", "TokenTable"} == set()


def _edits_sys_path(tree: ast.AST) -> list[int]:
    found = []
    for node in ast.walk(tree):
        target = (node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  else None)
        if target is not None and ast.unparse(target) == "sys.path":
            found.append(node.lineno)
    return found


def test_no_code_edits_sys_path() -> None:
    edits = [f"{path.relative_to(REPO)}:{line}"
             for folder in ("uxlocal", "benchmarks", "kernels", "tests")
             for path in sorted((REPO / folder).rglob("*.py"))
             for line in _edits_sys_path(ast.parse(path.read_text(encoding="utf-8")))]
    assert edits == []
    assert _edits_sys_path(ast.parse("import sys\nsys.path.insert(0, 'x')\n")) == [2]


def test_every_benchmark_is_a_module_with_add_cli_args_and_main() -> None:
    import argparse
    import importlib
    import pkgutil

    import benchmarks
    from benchmarks import run_all

    names = [m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name != "_common"]
    assert len(names) >= 14, "the walk missed the scripts"
    for name in names:
        script = importlib.import_module(f"benchmarks.{name}")
        assert callable(script.add_cli_args) and callable(script.main), name
        assert list(inspect.signature(script.main).parameters) == ["args"], name
        parser = argparse.ArgumentParser()
        script.add_cli_args(parser)  # options build without conflicts
        assert f"python -m benchmarks.{name}" in (script.__doc__ or ""), f"{name}: the docstring's command"
    assert set(run_all.SCRIPTS) <= set(names)


def _modules_under(folder: str) -> list[tuple[str, set[str]]]:
    """Return (module, modules it imports) for every file under ``uxlocal/<folder>`` (or the one module)."""
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
