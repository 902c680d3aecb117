"""A backend plugin installed from a temporary folder runs a suite (issue 45: backends join as suites do)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli

EXAMPLE = Path(__file__).resolve().parents[1] / "plugin_backend_example"
CONVERSATIONS = Path(__file__).resolve().parents[2] / "uxlocal" / "data" / "judge" / "conversations.jsonl"


def _install_by_hand(source: Path, target: Path) -> None:
    """The layout pip writes (package + dist-info with entry_points.txt), where pip cannot build offline."""
    import tomllib

    project = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    shutil.copytree(source / "uxlocal_echo", target / "uxlocal_echo")
    info = target / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n", encoding="utf-8")
    lines = [f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in table.items())
             for group, table in project["entry-points"].items()]
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("backend")
    source, target = work / "src", work / "site"
    shutil.copytree(EXAMPLE, source)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           "--no-build-isolation", "--target", str(target), str(source)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        _install_by_hand(source, target)
    return target


@pytest.fixture
def plugin(installed: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(installed))
    yield
    for name in [m for m in sys.modules if m.startswith("uxlocal_echo")]:
        del sys.modules[name]


@pytest.mark.usefixtures("plugin")
def test_a_backend_plugin_judges_conversations_through_the_cli(tmp_path: Path) -> None:
    folder = tmp_path / "echo-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    db = str(tmp_path / "echo.duckdb")
    result = CliRunner().invoke(cli, ["judge", str(CONVERSATIONS), "--rubric", "ux-liked", "-m",
                                      f"judge={folder}@echo", "--db", db, "--no-progress"])
    assert result.exit_code == 0, result.output
    out = CliRunner().invoke(cli, ["query", "--db", db, "--format", "csv",
                                   "SELECT count(*), count(DISTINCT value) FROM verdicts"])
    assert out.exit_code == 0 and out.output.splitlines()[1] == "40,1", out.output  # every row, one label
    models = CliRunner().invoke(cli, ["query", "--db", db, "--format", "csv", "SELECT backend FROM models"])
    assert models.output.splitlines()[1:] == ["echo"], models.output


def test_without_the_plugin_the_backend_is_unknown(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["judge", str(CONVERSATIONS), "--rubric", "ux-liked", "-m",
                                      f"judge={tmp_path}@echo", "--db", str(tmp_path / "x.duckdb")])
    assert result.exit_code != 0
