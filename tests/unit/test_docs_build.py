"""The documentation: the MkDocs site builds with warnings as errors, and the README stays a front page.

The build needs the ``docs`` extra (``.ci/setup`` installs it): in CI (``CI=true``) a missing mkdocs
fails, elsewhere the build test skips with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
HOOK = ROOT / "docs" / "hooks" / "store_reference.py"
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.M | re.S)


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("uxlocal_docs_store_reference", HOOK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _need_mkdocs() -> None:
    if importlib.util.find_spec("mkdocs") and importlib.util.find_spec("mkdocstrings_handlers"):
        return
    reason = "mkdocs or mkdocstrings-python missing: pip install -e '.[docs]' (.ci/setup installs it)"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"the docs must build in CI: {reason}")
    pytest.skip(reason)


def test_docs_build_strict_lists_every_table_and_view(tmp_path: Path) -> None:
    _need_mkdocs()
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    store = (site / "store" / "index.html").read_text(encoding="utf-8")
    assert "uxlocal:views" not in store and "uxlocal:tables" not in store
    hook = _hook()
    names = [view.name for path in hook.view_files(ROOT) for view in hook.parse_views(path)]
    assert len(names) >= 50  # every suite's views, not one file's
    missing = [
        name
        for name in names + ["runs", "episodes", "generations", "verdicts"]
        if f"<code>{name}</code>" not in store
    ]
    assert not missing
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "run_suite" in api and "FakeEngine" in api


def test_view_header_fields_split_on_pipes_and_continue_on_later_lines() -> None:
    fields = _hook().parse_header([
        "-- metric: uxbench_items | grain: one row per (run_id, item)",
        "-- source: items (task judge | eval | recovery) | caveat: blank keys group as 'unknown';",
        "-- NULL scores are left out",
    ])
    assert fields == {"metric": "uxbench_items", "grain": "one row per (run_id, item)",
                      "source": "items (task judge | eval | recovery)",
                      "caveat": "blank keys group as 'unknown'; NULL scores are left out"}


def test_view_without_header_names_file_and_line(tmp_path: Path) -> None:
    sql = tmp_path / "views.sql"
    sql.write_text("-- metric: a | grain: one row\nCREATE OR REPLACE VIEW a AS SELECT 1;\n\n"
                   "CREATE OR REPLACE VIEW b AS SELECT 2;\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"views\.sql:4: view b has no"):
        _hook().parse_views(sql)


def test_view_files_include_suite_owned_views(tmp_path: Path) -> None:
    (tmp_path / "db" / "views").mkdir(parents=True)
    (tmp_path / "uxlocal" / "suites" / "mine").mkdir(parents=True)
    for path in ("db/views/common.sql", "db/views/a.sql", "uxlocal/suites/mine/views.sql"):
        (tmp_path / path).write_text("", encoding="utf-8")
    files = [p.relative_to(tmp_path).as_posix() for p in _hook().view_files(tmp_path)]
    assert files == ["db/views/common.sql", "db/views/a.sql", "uxlocal/suites/mine/views.sql"]


def test_readme_first_block_is_setup_demo_then_setup_tests() -> None:
    first = FENCE.search(README.read_text(encoding="utf-8"))
    assert first is not None
    assert first.group(1).splitlines() == [".ci/setup && .venv/bin/uxlocal demo",
                                           ".ci/setup && .venv/bin/python -m pytest -q"]
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ".ci/setup && .venv/bin/python -m pytest -q" in ci_run


def test_readme_is_a_front_page_of_at_most_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_readme_and_docs_links_point_at_existing_files() -> None:
    broken = []
    for page in [README, *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken
