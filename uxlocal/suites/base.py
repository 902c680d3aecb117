"""What a suite provides to the runner, and the registry suites join by name.

A suite turns data into episodes (``plan``), and turns the store into result tables (``report``)
by reading its SQL views. The CLI builds ``uxlocal run <suite>`` from this registry and never
branches on a suite's name. Suites join through the ``uxlocal.suites`` entry point group
(``uxlocal.plugins``): the built-ins exactly as a third-party package does. A suite's package may
also hold its commands (``cli.py`` with ``register_commands(cli)``), its ``views.sql`` and its
report section (``Suite.report_section``); ``uxlocal.plugins`` finds the first two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any, ClassVar

from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.episode import EpisodeSpec
from uxlocal.plugins import suite_entry_points

if TYPE_CHECKING:
    from uxlocal.models import ResolvedModel
    from uxlocal.reportkit.model import ReportTable


def __getattr__(name: str) -> Any:
    """``ReportTable`` moved to ``uxlocal.reportkit.model``; the old import works for one release."""
    if name == "ReportTable":
        import warnings

        from uxlocal.reportkit.model import ReportTable

        warnings.warn("import ReportTable from uxlocal.reportkit.model "
                      "(uxlocal.suites.base's alias goes in 0.2)",
                      DeprecationWarning, stacklevel=2)
        return ReportTable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class PlanChunk:
    """A slice of a plan: its items' rows, their episodes and the rows set aside."""

    items: list[dict[str, Any]]
    episodes: list[EpisodeSpec]
    quarantine: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SuitePlan:
    """Everything a run needs from the suite's data."""

    episodes: list[EpisodeSpec]
    items: list[dict[str, Any]] = field(default_factory=list)
    """Rows for the ``items`` table: item_id, task, data, source_file, source_line."""
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    """Rows for the ``quarantine`` table: task, source_file, source_line, reason, raw."""
    notes: list[str] = field(default_factory=list)
    stream: Callable[[], Iterator[PlanChunk]] | None = None
    """For inputs too big to hold (a million conversations): reads the plan anew, chunk by chunk,
    each time it is called; then ``episodes``, ``items`` and ``quarantine`` stay empty. The runner
    reads it twice (items into the store, then the episodes to run), never holding all of it."""

    def chunks(self) -> Iterator[PlanChunk]:
        """The plan chunk by chunk (one chunk when it is held whole)."""
        if self.stream is None:
            yield PlanChunk(self.items, self.episodes, self.quarantine)
            return
        yield from self.stream()

    def all_episodes(self) -> list[EpisodeSpec]:
        """Every episode in order (reads a streamed plan whole: for small runs and benchmarks)."""
        return [e for chunk in self.chunks() for e in chunk.episodes]


@dataclass
class DemoSpec:
    """How ``uxlocal demo`` runs a suite: its options and which role gets which model."""

    config: dict[str, Any]
    roles: dict[str, str]
    limit: int | None = None
    unavailable: str | None = None
    """Why the demo cannot run this suite here (e.g. its data is missing); the demo prints it and
    moves on instead of failing."""
    data: str | None = None
    """Which data the demo plays, in words; printed before the suite runs (e.g. sample vs real data)."""


class Suite:
    """Base class for suites; subclasses set the class attributes and implement ``plan``/``report``."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    config_cls: ClassVar[type[SuiteConfig]] = SuiteConfig
    roles: ClassVar[tuple[str, ...]] = ("candidate", "judge")
    """Roles the suite asks models for (each needs ``--model ROLE=...``)."""
    optional_roles: ClassVar[tuple[str, ...]] = ()
    example: ClassVar[str] = ""
    """Options for the ``--help`` example after ``uxlocal run <name>`` (default: one ``--model`` per role)."""
    report_section: ClassVar[str] = ""
    """Module that registers the suite's report section and figures (``register_section``,
    ``register_figure`` from ``uxlocal.reportkit.registry``) on import; the report imports it, a
    run never does.
    Empty: the report shows the suite's ``report`` tables under a default section."""

    def role_specs(self, config: SuiteConfig, specs: dict[str, str]) -> dict[str, str]:
        """Role -> model spec bindings the suite's options imply, merged with ``--model``'s.

        A suite whose options name models (palate's ``--candidates A,B``) turns them into roles
        here, before resolution; explicit ``--model`` bindings win.
        """
        return specs

    def adapt_models(self, config: SuiteConfig,
                     models: dict[str, "ResolvedModel"]) -> dict[str, "ResolvedModel"]:
        """Adjust resolved models before engines are built (palate attaches per-user LoRA adapters)."""
        return models

    def prompt_hashes(self, config: SuiteConfig) -> dict[str, str]:
        """sha256 per prompt file used (part of the run identity)."""
        return {}

    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """Load data and build the episodes."""
        raise NotImplementedError

    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """Result tables for one run, read from the suite's SQL views."""
        return []

    def after_run(self, config: SuiteConfig, con: Any, run_id: str) -> list[str]:
        """Work after the episodes finish (e.g. an export file); returns notes to print."""
        return []

    def demo(self) -> DemoSpec | None:
        """Settings for ``uxlocal demo`` (None = not part of the demo)."""
        return None


_SUITES: dict[str, type[Suite]] = {}


def register_suite(cls: type[Suite]) -> type[Suite]:
    """Make a suite available as ``uxlocal run <name>`` (the entry point loader calls this; tests too)."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    _SUITES[cls.name] = cls
    return cls


def suites() -> dict[str, type[Suite]]:
    """All registered suites: every ``uxlocal.suites`` entry point is loaded on first call."""
    for ep in suite_entry_points():
        if ep.name not in _SUITES:
            _load_entry_point(ep)
    return dict(_SUITES)


def suite_class(name: str) -> type[Suite] | None:
    """The named suite's class, loading only its own entry point (importing every suite costs
    ~0.3 s, one about half of that); or None."""
    if name not in _SUITES:
        for ep in suite_entry_points():
            if ep.name == name:
                _load_entry_point(ep)
    return _SUITES.get(name)


def get_suite(name: str) -> Suite:
    """An instance of the named suite."""
    from uxlocal.errors import InputError

    cls = suite_class(name)
    if cls is None:
        raise InputError(None, None, f"unknown suite {name!r}", f"known: {', '.join(sorted(suites()))}")
    return cls()


def _load_entry_point(ep: EntryPoint) -> None:
    """Load one entry point and register its class; the same path for built-ins and plugins.

    An entry point whose own module is absent (a package removed without its metadata, a wheel
    built without an optional suite) is skipped; any other failure names the entry point.
    """
    from uxlocal.errors import UxlocalError

    where = f"entry point {ep.name} = {ep.value} (group {ep.group})"
    try:
        loaded = ep.load()
    except ModuleNotFoundError as exc:
        if exc.name is not None and ep.module.startswith(exc.name):
            return
        raise UxlocalError(f"{where}: cannot import: {exc}") from exc
    if not (isinstance(loaded, type) and issubclass(loaded, Suite)):
        raise UxlocalError(f"{where}: names {loaded!r}, not a subclass of uxlocal.suites.base.Suite")
    if loaded.name != ep.name:
        raise UxlocalError(f"{where}: the class is named {loaded.name!r}; the entry point's name must match")
    register_suite(loaded)
