"""Report sections register by name, the way suites do; the report core never names a suite.

A *section* gathers the runs of one or more suites (``suites``), draws its figures (functions
added with ``@register_figure(key)``), and shows tables: by default each run's own
``Suite.report`` tables, so the HTML and Markdown numbers are the terminal's, character for
character. A suite with runs in the store but no registered section still gets a section with
those tables; registering one only adds plots (or replaces the tables, as UserProxyBench does for
numbers that span runs).

Each suite owns its section: the module named by its ``Suite.report_section`` (for the built-ins,
``uxlocal/suites/<suite>/section.py``) calls ``register_section`` and ``register_figure`` when
imported. The report (``uxlocal.report.build.section_specs``, above the suites) imports those
modules, so runs never load plotting code and a plugin suite adds its section the same way. This
registry sits below the suites and never imports one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from uxlocal.reportkit.model import Figure, TableGroup

FigureFn = Callable[[Any, Sequence[str]], list[Figure]]
"""(read-only connection, run ids of the section) -> figures; an empty list when nothing applies."""
TablesFn = Callable[[Any, Sequence[str]], list[TableGroup]]


@dataclass
class SectionSpec:
    """How one section is built."""

    key: str
    title: str
    suites: tuple[str, ...]
    """Runs of these suites feed the section (UFS grades tau2 runs, so it reads ``tau2`` runs too)."""
    tables: TablesFn | None = None
    """None: every run's ``Suite.report`` tables, one group per run."""
    order: int = 50
    figures: list[FigureFn] = field(default_factory=list)
    requires: Callable[[Any, Sequence[str]], bool] | None = None
    """Whether the section applies at all to these runs (default: it has runs); a UFS section
    needs grading verdicts, not just tau2 runs."""


_SECTIONS: dict[str, SectionSpec] = {}


def register_section(
    key: str,
    *,
    title: str,
    suites: Sequence[str] | None = None,
    tables: TablesFn | None = None,
    order: int = 50,
    requires: Callable[[Any, Sequence[str]], bool] | None = None,
) -> SectionSpec:
    """Declare a section (idempotent: figures registered earlier under ``key`` are kept)."""
    previous = _SECTIONS.get(key)
    spec = SectionSpec(
        key,
        title,
        tuple(suites or (key,)),
        tables,
        order,
        list(previous.figures) if previous else [],
        requires,
    )
    _SECTIONS[key] = spec
    return spec


def register_figure(key: str) -> Callable[[FigureFn], FigureFn]:
    """Add the decorated figure function to section ``key`` (declared first with ``register_section``)."""

    def add(fn: FigureFn) -> FigureFn:
        if key not in _SECTIONS:
            raise KeyError(f"no report section {key!r}; call register_section({key!r}, ...) first")
        if fn not in _SECTIONS[key].figures:
            _SECTIONS[key].figures.append(fn)
        return fn

    return add


def registered_sections() -> list[SectionSpec]:
    """Return every section registered so far, in display order.

    Importing the suites' section modules is the caller's job:
    ``uxlocal.report.build.section_specs``.
    """
    return sorted(_SECTIONS.values(), key=lambda s: (s.order, s.key))
