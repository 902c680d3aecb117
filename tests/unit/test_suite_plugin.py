"""A suite outside uxlocal's tree plugs in through the ``uxlocal.suites`` entry point.

Its run, its command, its view and its report section (issue 31, item 1).

The example package (``tests/plugin_example``) is installed with pip into a temporary folder put
on ``sys.path``, as a third party's would be; the judge is the scripted fake engine.
``test_the_hand_written_install_is_what_pip_writes`` keeps the offline fallback honest.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.plugin_install import install_by_hand, install_example
from uxlocal.cli import cli
from uxlocal.engine import pool
from uxlocal.engine.backends import Backend
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.render import PlainRenderer
from uxlocal.reportkit import registry
from uxlocal.suites import base

EXAMPLE = Path(__file__).resolve().parents[1] / "plugin_example"
TRUE_SENTENCES = ("Water is wet.", "Two plus two is four.")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Install the example into a fresh target folder (tests/plugin_install.py)."""
    return install_example(EXAMPLE, "uxlocal_tiny", tmp_path_factory.mktemp("plugin"))


@pytest.fixture
def plugin(installed: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Yield the example on ``sys.path``; every registry it joined is restored afterwards."""
    monkeypatch.syspath_prepend(str(installed))
    before = dict(cli.commands)
    cli.suite_commands_added = False
    yield
    base._SUITES.pop("tiny", None)
    registry._SECTIONS.pop("tiny", None)
    cli.commands.clear()
    cli.commands.update(before)
    cli.suite_commands_added = False  # the next listing adds the built-in suites' commands again
    for name in [m for m in sys.modules if m.startswith("uxlocal_tiny")]:
        del sys.modules[name]


@pytest.fixture
def judge_says_true_sentences(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--model judge=fake`` answers yes for the true sentences, no for the others."""

    def answer(prepared: Any) -> str:
        asked = prepared.request.messages[0]["content"]
        return "yes" if any(s in asked for s in TRUE_SENTENCES) else "no"

    def engine(model: Any, renderer: Any, options: Any) -> FakeEngine:
        return FakeEngine(answer, identity=model.identity)

    monkeypatch.setitem(pool._BACKENDS, "fake", Backend("fake", lambda model: PlainRenderer(), engine))


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


@pytest.mark.usefixtures("plugin", "judge_says_true_sentences")
def test_plugin_suite_runs_and_its_view_and_section_reach_query_and_report(tmp_path: Path) -> None:
    db = str(tmp_path / "tiny.duckdb")
    code, out = invoke("run", "tiny", "--model", "judge=fake", "--db", db, "--no-progress")
    assert code == 0, out
    assert "3 episodes done" in out

    sql = "SELECT sentences, yes, yes_rate FROM tiny_summary"
    code, out = invoke("query", "--db", db, "--format", "csv", sql)
    assert code == 0, out
    assert out.splitlines()[1:] == ["3,2,0.667"]

    # the suite's own table, from its migrations/ folder (issue 45: suites ship their tables)
    sql = ("SELECT (SELECT count(*) FROM tiny_answers WHERE answer = 'yes'), "
           "(SELECT list(name) FROM _uxlocal_migrations WHERE name LIKE 'uxlocal_tiny/%')")
    code, out = invoke("query", "--db", db, "--format", "csv", sql)
    assert code == 0 and out.splitlines()[1] == "2,['uxlocal_tiny/001_tiny_answers.sql']", out

    code, out = invoke("report", "--db", db, "--format", "md")
    assert code == 0, out
    assert "Tiny: is the sentence true?" in out and "0.667" in out

    html = tmp_path / "r.html"
    code, out = invoke("report", "--db", db, "--html", str(html))
    assert code == 0 and "1 plot(s)" in out, out
    assert '<rect x="0" y="0" width="67" height="10"/>' in html.read_text(encoding="utf-8")


@pytest.mark.usefixtures("plugin")
def test_plugin_suite_adds_its_command_through_the_hook() -> None:
    code, out = invoke("--help")
    assert code == 0 and "tiny-items" in out
    code, out = invoke("tiny-items")
    assert code == 0 and out.splitlines() == ["The sky is green.", "Water is wet.", "Two plus two is four."]
    code, out = invoke("run", "--help")
    assert code == 0 and "tiny" in out


def test_builtins_and_plugins_load_through_the_same_entry_point_path() -> None:
    from uxlocal.plugins import suite_entry_points

    builtins = {ep.name: ep.value for ep in suite_entry_points()}
    assert {"judge", "palate", "selftest", "tau2", "userproxy", "uxbench"} <= set(builtins)
    for name, cls in base.suites().items():
        assert f"{cls.__module__}:{cls.__qualname__}" == builtins[name], name


def test_checkout_entry_points_read_the_pyproject_table(tmp_path: Path) -> None:
    from uxlocal.plugins import checkout_entry_points

    pyproject = tmp_path / "pyproject.toml"
    table = '[project.entry-points."uxlocal.suites"]\nmine = "pkg.mod:Mine"\n'
    pyproject.write_text('[project]\nname = "uxlocal"\n' + table, encoding="utf-8")
    found = [(ep.name, ep.module, ep.attr) for ep in checkout_entry_points(pyproject)]
    assert found == [("mine", "pkg.mod", "Mine")]
    assert checkout_entry_points(tmp_path / "absent.toml") == []
    pyproject.write_text('[project]\nname = "someone-else"\n' + table, encoding="utf-8")
    assert checkout_entry_points(pyproject) == []  # a stray pyproject beside an installed package


@pytest.mark.parametrize("value, message", [
    ("uxlocal.errors:InputError", "not a subclass of uxlocal.suites.base.Suite"),  # names something else
    ("uxlocal.suites.selftest.suite:Selftest", "the entry point's name must match"),  # class has another name
])
def test_a_bad_entry_point_is_an_error_naming_it(value: str, message: str) -> None:
    from importlib.metadata import EntryPoint

    from uxlocal.errors import UxlocalError

    ep = EntryPoint(name="broken", value=value, group="uxlocal.suites")
    with pytest.raises(UxlocalError, match="entry point broken = ") as caught:
        base._load_entry_point(ep)
    assert message in str(caught.value)
    assert "broken" not in base._SUITES


def test_a_suite_command_may_not_replace_a_core_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    import click

    main = importlib.import_module("uxlocal.cli.main")  # the package's ``main`` attribute is the function
    module = type(sys)("clash_commands")
    def register_commands(group: click.Group) -> None:
        group.add_command(click.Command("query"))

    module.register_commands = register_commands  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "clash_commands", module)
    monkeypatch.setattr(main, "suite_command_modules", lambda: ["clash_commands"])
    root = main.RootGroup(commands={"query": click.Command("query")})
    with pytest.raises(Exception, match="clash_commands adds a command 'query', which uxlocal already has"):
        root.add_suite_commands()


def test_command_modules_are_found_beside_each_suite_without_importing_it() -> None:
    from uxlocal.plugins import suite_command_modules

    assert suite_command_modules() == ["uxlocal.suites.judge.cli", "uxlocal.suites.palate.cli",
                                       "uxlocal.suites.tau2.cli", "uxlocal.suites.userproxy.cli"]


def test_the_hand_written_install_is_what_pip_writes(installed: Path, tmp_path: Path) -> None:
    from importlib.metadata import distributions

    by_hand = tmp_path / "site"
    install_by_hand(EXAMPLE, by_hand, "uxlocal_tiny")

    def suites_of(folder: Path) -> set[tuple[str, str]]:
        return {(ep.name, ep.value) for dist in distributions(path=[str(folder)])
                for ep in dist.entry_points if ep.group == "uxlocal.suites"}

    assert suites_of(by_hand) == suites_of(installed) == {("tiny", "uxlocal_tiny.suite:TinySuite")}
    assert sorted(p.name for p in (by_hand / "uxlocal_tiny").iterdir() if p.suffix in (".py", ".sql")) == \
        sorted(p.name for p in (installed / "uxlocal_tiny").iterdir() if p.suffix in (".py", ".sql"))
