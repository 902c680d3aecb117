"""Errors users see: each says where the problem is and what to do about it.

Library code raises these plain exceptions and never imports click (simonw/llm's split): the
CLI's root group turns them into click's (``uxlocal.cli.main.RootGroup.invoke``), printed as one
line with exit code 2 (a user's input) or 1 (a runtime failure). A library user catches
``UxlocalError`` (or ``InputError`` for bad input) without click.
"""

from __future__ import annotations

from pathlib import Path


class UxlocalError(Exception):
    """A runtime failure that is not a bug: a model that will not load, a store that is corrupt."""

    exit_code = 1
    """The CLI's exit code for it."""

    @property
    def message(self) -> str:
        """The message, under the name click's exceptions give it."""
        return str(self)

    def format_message(self) -> str:
        """Return the message as the CLI prints it (after ``Error: ``)."""
        return str(self)


class InputError(UxlocalError):
    """A file or flag the user gave is wrong; ``path:line`` first so editors can jump to it."""

    exit_code = 2

    def __init__(self, problem: str, hint: str = "", *, path: str | Path | None = None,
                 line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line else f"{path}: "
        super().__init__(f"{where}{problem}" + (f" ({hint})" if hint else ""))
        self.path = None if path is None else Path(path)
        self.line = line
        self.problem = problem


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
