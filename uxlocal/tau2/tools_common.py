"""Tools shared by several domains: ``calculate`` and ``transfer_to_human_agents``.

Neither touches the DB. ``calculate`` evaluates arithmetic by walking the syntax tree (never
``eval``): numbers, ``+ - * /``, unary signs and parentheses, answer rounded to 2 decimals (spec
§B.4.4). Powers and very long input are refused, so no expression can stall a run.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Annotated

from .toolkit import ToolError, Toolkit, arg

_ALLOWED_CHARS = set("0123456789+-*/(). ")
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}

MAX_EXPRESSION_CHARS = 1000
"""Bounds parse depth and big-number work; real price sums are a few dozen characters."""

TRANSFER_RESULT = "Transfer successful"
"""What tau2's transfer tool answers; the conversation then ends from the user's side."""


def calculate(
    db: object,
    expression: Annotated[
        str, arg("Arithmetic using numbers, + - * /, and parentheses, e.g. '(12.5 + 3) * 2'.")
    ],
) -> str:
    """Exact arithmetic for the candidate, so refunds and price differences are not guessed."""
    if not expression.strip() or not set(expression) <= _ALLOWED_CHARS:
        raise ToolError("the expression may only contain digits, + - * /, parentheses, '.' and spaces")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression, mode="eval")
        value = _evaluate(tree.body)
    except SyntaxError:
        raise ToolError(f"cannot parse expression {expression!r}") from None
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (RecursionError, MemoryError, OverflowError):
        raise ToolError("the expression is too large or too deeply nested") from None
    return str(round(value, 2))


def _evaluate(node: ast.expr) -> float:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    raise ToolError("only + - * / and parentheses are supported")


def transfer_to_human_agents(
    db: object,
    summary: Annotated[
        str, arg("A short account of the customer's problem, for the human agent taking over.")
    ],
) -> str:
    """Hand-off with no state change; the reward sees it only through ACTION checks."""
    return TRANSFER_RESULT


CALCULATE_DESCRIPTION = "Evaluate an arithmetic expression and return the result rounded to two decimals."
TRANSFER_DESCRIPTION = (
    "Hand the customer over to a human agent, with a summary of the issue. Use it only when the "
    "request is outside what you may do with your tools and the policy allows a transfer."
)


def register_common(toolkit: Toolkit, *, with_calculate: bool = True) -> None:
    """Add the shared tools to a domain's agent toolkit."""
    if with_calculate:
        toolkit.tool("generic", CALCULATE_DESCRIPTION)(calculate)
    toolkit.tool("generic", TRANSFER_DESCRIPTION)(transfer_to_human_agents)
