"""Tool schemas read from a checkout's source (``upstream_tools``) and the docstring rules they use.

Every checkout here is a toy one written by the test (our words), so these run in every clone; the
real tau2-bench checkout is compared in ``tests/conformance/test_tau2_checkout_words.py``.
"""

from __future__ import annotations

import ast
import enum
import json
import textwrap
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, create_model

from uxlocal.tau2.docstrings import DocstringError, parse_docstring
from uxlocal.tau2.upstream_source import Checkout, CheckoutError, checkout_root, string_value
from uxlocal.tau2.upstream_tools import TypeBuilder, toolkit_tools


def test_docstring_splits_short_long_and_args_when_google_style() -> None:
    doc = parse_docstring('''
        Move a box.
        It must be empty.

        Second paragraph.

        Args:
            box_id: The box to move,
                never a crate.
            to (str): Where it goes.

        Returns:
            Nothing useful.
        ''')
    assert doc.short == "Move a box."
    assert doc.long == "It must be empty.\n\nSecond paragraph."
    assert doc.params == {"box_id": "The box to move,\nnever a crate.", "to": "Where it goes."}
    assert doc.description("move") == "Move a box.\n\nIt must be empty.\n\nSecond paragraph."


def test_docstring_describes_by_name_when_empty() -> None:
    assert parse_docstring(None).description("ping") == "ping"
    assert parse_docstring("Ping.\n\nReturns:\n    pong").description("ping") == "Ping."


def test_docstring_section_ends_at_the_margin_and_needs_colons() -> None:
    doc = parse_docstring("Do it.\n\nArgs:\n    a: first\n    b: second\nafter the section\n")
    assert doc.params == {"a": "first", "b": "second"}
    with pytest.raises(DocstringError, match="name: description"):
        parse_docstring("Do it.\n\nArgs:\n    a without colon\n")


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def toy(tmp_path: Path) -> Checkout:
    _write(tmp_path, "src/tau2/__init__.py", "")
    _write(tmp_path, "src/tau2/shop/model.py", '''
        from enum import Enum
        from typing import Literal, Optional
        from pydantic import BaseModel, ConfigDict, Field

        Size = Literal["s", "m"]

        class Colour(str, Enum):
            RED = "red"
            BLUE = "blue"

        class Strict(BaseModel):
            model_config = ConfigDict(extra="forbid")

        class Item(Strict):
            """A thing to buy."""

            name: str = Field(description="What it is called.")
            colour: Colour = Field(Colour.RED, description="Its colour.")
            note: Optional[str] = None
        ''')
    _write(tmp_path, "src/tau2/shop/tools.py", '''
        from typing import List, Optional
        from tau2.shop.model import Colour, Item, Size
        from tau2.kit import Base, is_tool, is_discoverable_tool

        class Mixin(Base):
            @is_tool()
            def search(self, query: str) -> str:
                """Search the shop.

                Args:
                    query: Words to look for.
                """

        class ShopTools(Mixin, Base):
            @is_tool()
            def buy(self, items: List[Item | dict], size: Size, colour: Colour | str = "red",
                    count: Optional[int] = None, gift: bool = False) -> str:
                """Buy items.

                Only paid orders ship.

                Args:
                    items: What to buy.
                    size: Which size.
                    count: How many.
                """

            def _helper(self) -> None:
                """Not a tool."""

            @is_discoverable_tool()
            def secret(self) -> str:
                """A hidden tool."""
        ''')
    _write(tmp_path, "src/tau2/kit.py", '''
        class Base:
            @is_tool()
            def transfer(self, summary: str) -> str:
                """Hand over."""
        ''')
    return Checkout(tmp_path)


def _expected_buy() -> dict[str, object]:
    colour = enum.Enum("Colour", [("RED", "red"), ("BLUE", "blue")], type=str)  # type: ignore[misc]
    colour.__doc__ = None
    item = type(BaseModel)("Item", (BaseModel,), {
        "__doc__": "A thing to buy.", "model_config": ConfigDict(extra="forbid"),
        "__annotations__": {"name": str, "colour": colour, "note": str | None},
        "name": Field(description="What it is called."),
        "colour": Field(colour.RED, description="Its colour."), "note": None})
    items = list[item | dict]  # type: ignore[valid-type]
    params = create_model("parameters", items=(items, Field(..., description="What to buy.")),
                          size=(Literal["s", "m"], Field(..., description="Which size.")),
                          colour=(colour | str, "red"),
                          count=(int | None, Field(None, description="How many.")), gift=(bool, False))
    return params.model_json_schema()


def test_toolkit_lists_tools_in_upstream_order_with_pydantic_schemas(toy: Checkout) -> None:
    tools = toolkit_tools(toy, "tau2.shop.tools", "ShopTools")
    assert [(t.name, t.discoverable) for t in tools] == [
        ("buy", False), ("secret", True), ("search", False), ("transfer", False)]
    buy = tools[0].schema
    assert buy["function"]["description"] == "Buy items.\n\nOnly paid orders ship."
    assert json.dumps(buy["function"]["parameters"]) == json.dumps(_expected_buy())
    assert buy["function"]["parameters"]["$defs"]["Item"]["additionalProperties"] is False
    assert tools[0].where.endswith("tools.py:17")


def test_toolkit_refusal_names_file_line_and_the_reproduced_version(toy: Checkout, tmp_path: Path) -> None:
    _write(tmp_path, "src/tau2/shop/odd.py", '''
        from tau2.kit import Base

        class OddTools(Base):
            @is_tool()
            def weird(self, x: Mystery) -> str:
                """Weird."""
        ''')
    with pytest.raises(CheckoutError) as err:
        toolkit_tools(Checkout(tmp_path), "tau2.shop.odd", "OddTools")
    assert "odd.py:6" in str(err.value) and "'Mystery'" in str(err.value) and "8ebb749" in str(err.value)
    with pytest.raises(CheckoutError, match="no toolkit class Nope"):
        toolkit_tools(toy, "tau2.shop.tools", "Nope")


def test_string_constants_evaluate_strip_and_concatenation(tmp_path: Path) -> None:
    _write(tmp_path, "src/tau2/p.py", 'A = """\n  hi\n""".strip()\nB = A + " there"\nC = f"{A}"\n')
    module = Checkout(tmp_path).module("tau2.p")
    assert string_value(module, module.defs["B"].value) == "hi there"  # type: ignore[attr-defined]
    with pytest.raises(CheckoutError, match="p.py:5"):
        string_value(module, module.defs["C"].value)  # type: ignore[attr-defined]


def test_checkout_root_is_found_only_for_a_checkout_layout(tmp_path: Path) -> None:
    (tmp_path / "co" / "src" / "tau2").mkdir(parents=True)
    (tmp_path / "co" / "data" / "tau2").mkdir(parents=True)
    (tmp_path / "bare" / "tau2").mkdir(parents=True)
    assert checkout_root(tmp_path / "co" / "data" / "tau2") == (tmp_path / "co").absolute()
    assert checkout_root(tmp_path / "bare" / "tau2") is None


def test_type_builder_refuses_a_class_that_is_not_a_model(tmp_path: Path) -> None:
    _write(tmp_path, "src/tau2/m.py", "class Plain:\n    x: int\n")
    checkout = Checkout(tmp_path)
    with pytest.raises(CheckoutError, match="not an enum nor a model"):
        TypeBuilder(checkout).annotation(checkout.module("tau2.m"), ast.parse("Plain", mode="eval").body)
