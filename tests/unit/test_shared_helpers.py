"""Helpers written once (issue 14, item 3): JSON columns, language, role names, no import circles."""

from __future__ import annotations

import ast
import datetime as dt
import typing
from pathlib import Path

import duckdb
import pytest

import uxlocal
from uxlocal.engine.base import ROLES, Role
from uxlocal.store.db import json_value, migrate
from uxlocal.store.writer import StoreWriter

PACKAGE = Path(uxlocal.__file__).parent


def test_json_value_decodes_what_the_writer_stored() -> None:
    con = duckdb.connect(":memory:")
    migrate(con)
    writer = StoreWriter(con)
    writer.add("runs", {"run_id": "r1", "suite": "s", "status": "done", "config": {"seed": 3, "a": [1, 2]},
                        "config_sha256": "x", "versions": {}, "started_at": dt.datetime.now(dt.timezone.utc)})
    writer.close()
    raw = con.execute("SELECT config FROM runs").fetchone()[0]
    assert isinstance(raw, str)  # the client hands JSON columns back as text
    assert json_value(raw) == {"seed": 3, "a": [1, 2]}


@pytest.mark.parametrize(("value", "expected"), [
    (None, None),  # NULL stays NULL
    ({"a": 1}, {"a": 1}),  # already decoded: passed through
    ("[1, 2]", [1, 2]),  # JSON text
    ('"x"', "x"),  # a JSON string
])
def test_json_value_passes_decoded_values_and_decodes_text(value: object, expected: object) -> None:
    assert json_value(value) == expected


def test_json_value_raises_on_bad_text_unless_lenient() -> None:
    with pytest.raises(ValueError):
        json_value("not json")
    assert json_value("not json", lenient=True) == "not json"


def test_roles_tuple_is_the_role_literal() -> None:
    assert ROLES == typing.get_args(Role) == ("candidate", "user", "judge")


def test_language_rule_is_defined_once() -> None:
    """Only uxlocal/lang.py defines detect_lang or a CJK threshold."""
    owners = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        names |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
                  if isinstance(t, ast.Name)}
        if names & {"detect_lang", "cjk_share", "ZH_MIN_CJK_SHARE"}:
            owners.append(path.relative_to(PACKAGE).as_posix())
    assert owners == ["lang.py"]


def _imports(module: str) -> set[str]:
    """Every uxlocal module a file imports, at module level or inside functions (relative resolved)."""
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    package = module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


@pytest.mark.parametrize(("a", "b"), [
    ("uxlocal.tau2.registry", "uxlocal.tau2.env"),  # Environment.for_task lives in env.py
    ("uxlocal.suites.palate.profiles", "uxlocal.suites.palate.cardv2"),  # file reading is cardfiles.py
])
def test_former_import_circles_stay_open(a: str, b: str) -> None:
    assert not (b in _imports(a) and a in _imports(b)), f"{a} and {b} import each other"
    assert b not in _imports(a)  # the lower module does not reach up, not even inside a function
