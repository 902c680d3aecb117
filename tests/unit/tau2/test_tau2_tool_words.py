"""Tool words from data (``uxlocal/tau2/tool_words.py``): a tools file's words over our structure.

Runs on the bundled homenet domain in every clone: the tools files are written here from our own
schemas with other words, so the tests need no upstream data.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from uxlocal.tau2 import Environment, load_domain
from uxlocal.tau2.layout import SAMPLE_DATA
from uxlocal.tau2.tool_words import TOOLS_ENV, ToolWordsError, structure


def _reworded(schemas: list[dict[str, Any]], marker: str) -> list[dict[str, Any]]:
    """Our schemas with every description replaced, titles added and a ``$defs``-free layout."""
    out = json.loads(json.dumps(schemas))
    for schema in out:
        function = schema["function"]
        function["description"] = f"{marker}: {function['name']}"
        params = function["parameters"]
        params["title"] = "parameters"
        params.pop("additionalProperties", None)
        for name, prop in params["properties"].items():
            prop["description"] = f"{marker} {name}"
            prop["title"] = name.title()
    return out


def _write_tools(folder: Path, marker: str, *, edit: Any = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    bare = Environment(load_domain(SAMPLE_DATA, "homenet", tools_dir=folder.parent / "nothing"))
    for seat, file in (("assistant", "tools_agent.json"), ("user", "tools_user.json")):
        tools = _reworded(bare.tool_schemas(seat), marker)  # type: ignore[arg-type]
        if edit is not None and seat == "assistant":
            edit(tools)
        (folder / file).write_text(json.dumps({"tools": tools}), encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOOLS_ENV, raising=False)


def test_without_a_tools_file_the_model_sees_our_words() -> None:
    env = Environment(load_domain(SAMPLE_DATA, "homenet"))
    assert env.domain.tool_words is None
    schemas = env.tool_schemas("assistant")
    assert schemas == [spec.openai_schema() for spec in env.tool_specs("assistant")]
    assert all(s["function"]["description"] for s in schemas)


def test_the_files_words_are_shown_over_our_structure(tmp_path: Path) -> None:
    _write_tools(tmp_path / "words" / "homenet", "UP")
    env = Environment(load_domain(SAMPLE_DATA, "homenet", tools_dir=tmp_path / "words"))
    for seat in ("assistant", "user"):
        shown = env.tool_schemas(seat)  # type: ignore[arg-type]
        ours = [spec.openai_schema() for spec in env.tool_specs(seat)]  # type: ignore[arg-type]
        assert len(shown) == len(ours) > 0
        for mine, theirs in zip(ours, shown, strict=True):
            assert theirs["function"]["description"] == f"UP: {mine['function']['name']}"
            assert structure(theirs) == structure(mine)
            assert theirs["function"]["parameters"]["title"] == "parameters"
    # the call path (our validator) is unchanged by the words
    assert not env.call("no_such_tool", {}).ok


def test_a_tool_shaped_unlike_ours_is_an_error_naming_file_tool_and_field(tmp_path: Path) -> None:
    def retype(tools: list[dict[str, Any]]) -> None:
        target = next(t for t in tools if t["function"]["parameters"]["properties"])
        name, prop = next(iter(target["function"]["parameters"]["properties"].items()))
        prop["type"] = "boolean" if prop.get("type") != "boolean" else "string"
        retype.where = (target["function"]["name"], name)  # type: ignore[attr-defined]

    folder = _write_tools(tmp_path / "words" / "homenet", "UP", edit=retype)
    tool, argument = retype.where  # type: ignore[attr-defined]
    with pytest.raises(ToolWordsError) as err:
        load_domain(SAMPLE_DATA, "homenet", tools_dir=tmp_path / "words")
    message = str(err.value)
    assert str(folder / "tools_agent.json") in message
    assert repr(tool) in message and f"/parameters/properties/{argument}/type" in message


def test_a_tool_we_do_not_have_is_an_error(tmp_path: Path) -> None:
    def add(tools: list[dict[str, Any]]) -> None:
        extra = json.loads(json.dumps(tools[0]))
        extra["function"]["name"] = "teleport"
        tools.append(extra)

    _write_tools(tmp_path / "words" / "homenet", "UP", edit=add)
    with pytest.raises(ToolWordsError, match="'teleport' is not one of ours"):
        load_domain(SAMPLE_DATA, "homenet", tools_dir=tmp_path / "words")


def test_broken_json_names_the_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "words" / "homenet"
    folder.mkdir(parents=True)
    (folder / "tools_agent.json").write_text('{"tools": [\n  {,\n]}', encoding="utf-8")
    with pytest.raises(ToolWordsError, match=r"tools_agent\.json:2: not valid JSON"):
        load_domain(SAMPLE_DATA, "homenet", tools_dir=tmp_path / "words")


def _description(domain_args: dict[str, Any]) -> str:
    env = Environment(load_domain(**domain_args))
    return str(env.tool_schemas("assistant")[0]["function"]["description"])


def test_precedence_explicit_then_env_then_data_folder_then_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA / "domains" / "homenet", data / "domains" / "homenet")
    args: dict[str, Any] = {"data_dir": data, "name": "homenet"}
    ours = _description(args)
    assert not ours.startswith(("DATA", "ENV", "ARG"))

    _write_tools(data / "domains" / "homenet", "DATA")
    assert _description(args).startswith("DATA: ")

    _write_tools(tmp_path / "env" / "homenet", "ENV")
    monkeypatch.setenv(TOOLS_ENV, str(tmp_path / "env"))
    assert _description(args).startswith("ENV: ")

    _write_tools(tmp_path / "arg" / "homenet", "ARG")
    assert _description({**args, "tools_dir": tmp_path / "arg"}).startswith("ARG: ")

    # a words folder without this domain falls through to the data folder
    assert _description({**args, "tools_dir": tmp_path / "empty"}).startswith("DATA: ")


def test_a_runs_data_hashes_name_the_tools_files_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from uxlocal.tau2.data import data_hashes

    assert not [k for k in data_hashes(SAMPLE_DATA, ["homenet"]) if k.startswith("tau2-tools/")]
    _write_tools(tmp_path / "words" / "homenet", "UP")
    monkeypatch.setenv(TOOLS_ENV, str(tmp_path / "words"))
    hashes = data_hashes(SAMPLE_DATA, ["homenet"])
    assert {k for k in hashes if k.startswith("tau2-tools/")} == {
        "tau2-tools/homenet/tools_agent.json", "tau2-tools/homenet/tools_user.json"}
