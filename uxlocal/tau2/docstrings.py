"""Google-style docstrings split the way upstream's tool builder splits them.

tau2-bench describes a tool by parsing its docstring with the ``docstring_parser`` package: the
first line is the short description, the text up to the first section title the long one, and
``Args:`` entries give each parameter's description. Its rules, which we follow (our code, not
theirs): the text is PEP 257-cleaned first; a section title is a whole line ``Title:`` from a fixed
list; a section ends at the next title or at the first unindented line; entries of a multi-entry
section are the lines indented exactly as its first line, each ``name (type): description``, and
a description's continuation lines are cleaned and joined with newlines.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_TITLES = ("Arguments", "Args", "Parameters", "Params", "Raises", "Exceptions", "Except", "Attributes",
           "Example", "Examples", "Returns", "Yields")
_PARAM_TITLES = frozenset({"Arguments", "Args", "Parameters", "Params"})
_MULTIPLE = frozenset({"Arguments", "Args", "Parameters", "Params", "Raises", "Exceptions", "Except",
                       "Attributes"})
_TITLE_LINE = re.compile("^(" + "|".join(f"({t})" for t in _TITLES) + "):[ \t\r\f\v]*$", re.M)
_TYPED_NAME = re.compile(r"\s*(.+?)\s*\(\s*(.*[^\s]+)\s*\)")


class DocstringError(ValueError):
    """A section entry without the ``name: description`` colon."""


@dataclass(frozen=True)
class Docstring:
    """What a tool's schema takes from its docstring."""

    short: str | None = None
    long: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    """Parameter name -> description, in the order written."""

    def description(self, name: str) -> str:
        """Give the tool description upstream shows: short, then a blank line and the long part if any.

        A docstring without a first line describes the tool by its name (upstream logs a warning).
        """
        if not self.short:
            return name
        return self.short + ("\n\n" + self.long if self.long else "")


def parse_docstring(text: str | None) -> Docstring:
    """Split a Google-style docstring into descriptions and parameter descriptions."""
    if not text:
        return Docstring()
    text = inspect.cleandoc(text)
    first = _TITLE_LINE.search(text)
    description, sections = (text[: first.start()], text[first.start():]) if first else (text, "")
    short, _, rest = description.partition("\n")
    long = rest.strip() or None if "\n" in description else None
    params: dict[str, str] = {}
    for title, chunk in _sections(sections):
        if title not in _MULTIPLE:
            continue
        for entry in _entries(chunk):
            name, desc = _split_entry(entry)
            if title in _PARAM_TITLES:
                params[name] = desc
    return Docstring(short or None, long, params)


def _sections(text: str) -> list[tuple[str, str]]:
    matches = list(_TITLE_LINE.finditer(text))
    out: list[tuple[str, str]] = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        chunk = text[match.end(): end]
        unindented = re.search(r"\n\S", chunk)  # text after the section, back at the margin
        if unindented is not None:
            chunk = chunk[: unindented.start()]
        out.append((match.group(1), chunk.strip("\n")))
    return out


def _entries(chunk: str) -> list[str]:
    indent = re.match(r"\s*", chunk)
    starts = list(re.finditer("^" + re.escape(indent.group() if indent else "") + r"(?=\S)", chunk, re.M))
    if not starts:
        return []
    out: list[str] = []
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(chunk)
        out.append(chunk[start.end(): end].strip("\n"))
    return out


def _split_entry(entry: str) -> tuple[str, str]:
    if ":" not in entry:
        raise DocstringError(f"expected 'name: description' in {entry!r}")
    before, desc = entry.split(":", 1)
    if desc:
        desc = desc[1:] if desc[0] == " " else desc
        if "\n" in desc:
            first, rest = desc.split("\n", 1)
            desc = first + "\n" + inspect.cleandoc(rest)
        desc = desc.strip("\n")
    typed = _TYPED_NAME.match(before)
    return (typed.group(1) if typed else before), desc
