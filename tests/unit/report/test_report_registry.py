"""Suites own their report sections: registered through ``Suite.report_section`` (issue 14, item 2)."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from uxlocal.report import build
from uxlocal.reportkit import registry
from uxlocal.suites import base

REPORT_DIR = Path(build.__file__).parent


@pytest.fixture
def plugin_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Yield a plugin suite whose section module lives outside uxlocal; both registries cleaned after."""
    (tmp_path / "plugin_section_mod.py").write_text(
        "from uxlocal.report import register_section\n"
        "register_section('plugin_owned', title='Plugin owned', suites=('plugin_owned',), order=7)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    class PluginSuite(base.Suite):
        name = "plugin_owned"
        report_section = "plugin_section_mod"

    base.register_suite(PluginSuite)
    yield "plugin_owned"
    base._SUITES.pop("plugin_owned", None)
    registry._SECTIONS.pop("plugin_owned", None)
    sys.modules.pop("plugin_section_mod", None)


def test_section_specs_import_each_suites_report_section(plugin_suite: str) -> None:
    specs = {s.key: s for s in build.section_specs()}
    assert specs[plugin_suite].title == "Plugin owned" and specs[plugin_suite].order == 7
    # the built-ins register the same way, in display order
    assert [k for k in specs if k != plugin_suite] == ["uxbench", "tau2", "ufs", "palate", "judge"]


def test_builtin_sections_live_in_their_suites_packages() -> None:
    for name, suite in base.suites().items():
        if suite.report_section:
            module = importlib.import_module(suite.report_section)
            assert module.__name__.startswith(f"uxlocal.suites.{name}."), (name, module.__name__)


def test_report_package_never_imports_a_suites_package() -> None:
    for path in REPORT_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module != "uxlocal.suites.base":
                assert not node.module.startswith("uxlocal.suites."), f"{path.name} imports {node.module}"


def test_report_table_old_import_warns_and_is_the_same_class() -> None:
    from uxlocal.reportkit.model import ReportTable

    with pytest.warns(DeprecationWarning, match="uxlocal.reportkit.model"):
        old = base.ReportTable
    assert old is ReportTable
