"""Errors users see: each says where the problem is and what to do about it.

Only this module and the ``cli`` package import click. Library code raises these; the CLI
prints them as one line and exits with code 2 (user errors) or 1 (runtime failures).
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

import click


class InputError(click.UsageError):
    """A file or flag the user gave is wrong; ``path:line`` first so editors can jump to it."""

    def __init__(self, path: str | Path | None, line: int | None, problem: str, hint: str = "") -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line else f"{path}: "
        message = f"{where}{problem}" + (f" ({hint})" if hint else "")
        super().__init__(message)
        self.path = None if path is None else Path(path)
        self.line = line
        self.problem = problem

    def show(self, file: typing.IO[typing.Any] | None = None) -> None:
        """One line, no usage block: the message already says where and what."""
        click.echo(f"Error: {self.format_message()}", file=file or sys.stderr)


class UxlocalError(click.ClickException):
    """A runtime failure that is not a bug: a model that will not load, a store that is corrupt."""

    exit_code = 1


class ModelNotReady(InputError):
    """The model preset or folder named by the user cannot be used yet."""


def format_validation_error(err: Exception) -> str:
    """Render a pydantic ValidationError as ``field: message`` pairs joined by '; '."""
    errors = getattr(err, "errors", None)
    if errors is None:
        return str(err)
    parts = []
    for item in errors():
        loc = ".".join(str(x) for x in item.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {item.get('msg', '')}")
    return "; ".join(parts)
