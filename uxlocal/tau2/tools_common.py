"""Tools shared by several domains: ``calculate`` and ``transfer_to_human_agents``.

Neither touches the DB. ``calculate`` answers as tau2's does (spec §B.4.4): an expression of
digits, ``+ - * /``, parentheses, dots and spaces, evaluated and answered as a float rounded to
2 decimals (``1200.0``); any other character is refused with "Invalid characters in expression".
We evaluate by walking the syntax tree (never ``eval``), and refuse powers whose result would be
huge and very long input, so no expression can stall a run.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Annotated

from .toolkit import ToolError, Toolkit, arg

_ALLOWED_CHARS = frozenset("0123456789+-*/(). ")
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}

MAX_EXPRESSION_CHARS = 1000
"""Bounds parse depth and big-number work; real price sums are a few dozen characters."""
MAX_POWER_RESULT_DIGITS = 400
"""``2 ** 10`` is arithmetic; ``9 ** 9 ** 9`` would stall the process, so it is refused."""

TRANSFER_RESULT = "Transfer successful"
"""What tau2's transfer tool answers; the conversation then ends from the user's side."""


def calculate(
    db: object,
    expression: Annotated[
        str, arg("Arithmetic using numbers, + - * /, and parentheses, e.g. '(12.5 + 3) * 2'.")
    ],
) -> str:
    """Exact arithmetic for the candidate, so refunds and price differences are not guessed."""
    if not all(char in _ALLOWED_CHARS for char in expression):
        raise ToolError("Invalid characters in expression")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.lstrip(" "), filename="<string>", mode="eval")
        value = _evaluate(tree.body)
    except SyntaxError as err:
        raise ToolError(str(err)) from None
    except ZeroDivisionError as err:
        raise ToolError(str(err)) from None
    except (RecursionError, MemoryError, OverflowError):
        raise ToolError("the expression is too large or too deeply nested") from None
    return str(round(float(value), 2))


def _evaluate(node: ast.expr) -> float:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        base, exponent = _evaluate(node.left), _evaluate(node.right)
        if abs(exponent) * len(str(abs(int(base)))) > MAX_POWER_RESULT_DIGITS:
            raise ToolError("the expression is too large or too deeply nested")
        result = base**exponent
        if isinstance(result, complex):
            raise ToolError("the result is not a real number")
        return result
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
