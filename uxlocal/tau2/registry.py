"""Domain registry and loading: a name maps to a ``DomainSpec``; a data dir + name to a ``Domain``.

Domains are plugins: the ``uxlocal.tau2_domains`` entry point group names each domain's
``DomainSpec`` (uxlocal declares its built-ins there, as a third-party package would in its own
``pyproject.toml``), imported only on first lookup; ``register_domain`` adds one at run time. ``load_domain`` validates the DB files
once per process and caches the result, so creating an environment per episode costs microseconds.

A domain's DB is anything that satisfies ``DomainDB`` (hash, dump, patch) and whose type satisfies
``DomainDBType`` (``load(path)`` gives a snapshot, ``Type(snapshot)`` an episode's view): the typed
pydantic ``Database`` of most domains, or banking's table DB of plain dict rows (``BankingDB``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from .layout import domain_dir, tau2_root
from .tool_words import SEAT_FILES, ToolWords, find_tools_dir, load_tool_words
from .toolkit import Toolkit, ToolSpec

Tau2Version = Literal["8ebb749", "1.0.1"]
TAU2_VERSIONS: tuple[Tau2Version, ...] = get_args(Tau2Version)
"""Grading versions a domain may follow (spec tau2-telecom-banking.md §B.5): ``8ebb749`` is the
commit UserProxyBench pinned (the default); ``1.0.1`` the later grading. Only banking differs."""
DEFAULT_TAU2_VERSION: Tau2Version = "8ebb749"

BENCHMARK_DOMAINS: tuple[str, ...] = ("telecom", "airline", "retail", "banking_knowledge")
"""UserProxyBench's four domains (375 base tasks: 114 + 50 + 114 + 97), what ``all`` stands for."""


def expand_domains(names: Iterable[str]) -> list[str]:
    """Domain names in order, ``all`` standing for ``BENCHMARK_DOMAINS``; duplicates dropped."""
    return list(dict.fromkeys(d for name in names for d in (BENCHMARK_DOMAINS if name == "all" else (name,))))


class DomainDB(Protocol):
    """What the runtime needs of one episode's DB: a hash for the DB check, a dump, task patches."""

    def hash(self) -> str:
        """Return the sha256 the DB check compares."""
        ...

    def dump(self) -> dict[str, Any]:
        """Return the whole DB as plain data."""
        ...

    def apply_patch(self, patch: Mapping[str, Any]) -> None:
        """Deep-merge a task's ``initialization_data`` patch."""
        ...


class DomainDBType(Protocol):
    """A DB class: ``load`` reads the file once into a shared snapshot, a call opens a view of it."""

    def __call__(self, snapshot: Any, /) -> DomainDB:
        """Open one episode's copy-on-write view of a snapshot."""
        ...

    def load(self, path: Path, /) -> Any:
        """Read and validate the DB file into a shared snapshot."""
        ...


PrepareDB = Callable[[DomainDB, "Domain", Any], None]
"""Per-environment setup of the agent DB before the task's patches: grading settings, data paths.
Its third argument is the episode's ``tasks.Task`` or None (typed ``Any`` so that the registry, which
``tasks`` consults for a domain's task files, does not import ``tasks`` back)."""


@dataclass(frozen=True)
class DomainSpec:
    """Everything code-side about a domain: DB types, toolkits and file names."""

    name: str
    agent_db: DomainDBType
    agent_tools: Toolkit
    db_file: str = "db.json"
    user_db: DomainDBType | None = None
    user_tools: Toolkit | None = None
    user_db_file: str | None = None
    policy_file: str = "policy.md"
    policy_sections: tuple[tuple[str, str], ...] = ()
    """``(tag, file)`` pairs; when given, the policy is each file wrapped in ``<tag>…</tag>``, in order
    (telecom: the main policy plus the tech-support manual), and ``policy_file`` is unused."""
    policy_components: str | None = None
    """A folder (relative to the domain's) whose ``NAME.md`` replaces each ``{{component:NAME}}`` of
    the policy file (banking's prompts); ``None`` leaves the policy text as it is."""
    sync: Callable[[Any, Any], None] | None = None
    """Coupling of the two DBs, run after every tool call, setup action and assertion (telecom)."""
    shared_db: bool = False
    """The user's tools act on the agent's DB (banking): no user DB file, one hash for the DB check."""
    task_glob: str | None = None
    """Tasks come one per file matching this glob (banking: ``tasks/task_*.json``, sorted by name)
    instead of ``tasks.json``; such a domain has no split file, so ``base`` means every task."""
    prepare_db: PrepareDB | None = None
    """Called on every new environment's agent DB, before the task's patches (banking: grading)."""
    unknown_user_tools_mean_none: bool = False
    """A task naming a user tool the domain lacks leaves the user with no tools (upstream banking
    swallows the error); otherwise such a task is an error."""
    tool_errors_count: bool = True
    """Whether a tool's error result counts toward ``max_errors``. Banking's tools answer refusals
    as text upstream, so its errors never end an episode; our own bugs (internal errors) still count."""
    action_match_as_upstream: bool = True
    """ACTION as upstream scores it (every domain): a call from either seat matches, and a gold
    action without ``compare_args`` is compared on the predicted call's own keys. Off: same seat,
    gold's keys (stricter than tau2; for a domain of our own that wants it)."""
    unlisted_tools: Mapping[str, Toolkit] = field(default_factory=dict)
    """Per seat, tools never offered in a prompt that still run when called by name, as upstream's
    do (banking's discoverable tools)."""
    episode_info: Mapping[str, Any] = field(default_factory=dict)
    """Facts every episode of the domain records in its info (banking: the retrieval variant)."""

    def __post_init__(self) -> None:
        sides = (self.user_db is None, self.user_tools is None, self.user_db_file is None)
        if self.shared_db:
            if self.user_tools is None or self.user_db is not None or self.user_db_file is not None:
                raise ValueError(f"domain {self.name!r}: a shared DB needs user_tools and no user DB "
                                 "of its own")
        elif len(set(sides)) != 1:
            raise ValueError(f"domain {self.name!r}: user_db, user_tools and user_db_file go together")


_REGISTRY: dict[str, DomainSpec] = {}


def register_domain(spec: DomainSpec) -> None:
    """Make a domain available by name; registering a name twice is a bug."""
    if spec.name in _REGISTRY and _REGISTRY[spec.name] is not spec:
        raise ValueError(f"domain {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec


def domain_spec(name: str) -> DomainSpec:
    """Return the registered spec, loading the domain's entry point on first use."""
    from uxlocal.plugins import TAU2_DOMAINS_GROUP, group_entry_points, load_named

    if name not in _REGISTRY:
        spec = load_named(TAU2_DOMAINS_GROUP, name)
        if isinstance(spec, DomainSpec):
            register_domain(spec)
        elif spec is not None:
            raise TypeError(f"entry point {name!r} of {TAU2_DOMAINS_GROUP} names {spec!r}, not a DomainSpec")
    if name not in _REGISTRY:
        known = sorted(set(_REGISTRY) | {ep.name for ep in group_entry_points(TAU2_DOMAINS_GROUP)})
        raise KeyError(f"no tau2 environment for domain {name!r}; implemented: {', '.join(known)}")
    return _REGISTRY[name]


@dataclass(eq=False)
class Domain:
    """A domain's data loaded once: shared DB snapshots, the policy text, and a gold-hash cache."""

    spec: DomainSpec
    folder: Path
    agent_snapshot: Any
    user_snapshot: Any | None
    tau2_version: str = DEFAULT_TAU2_VERSION
    """The grading version every environment of this domain follows (``TAU2_VERSIONS``)."""
    tool_words: ToolWords | None = None
    """Upstream's words for the tools (``tool_words.py``); ``None``: the tools' own descriptions."""
    gold_cache: dict[str, tuple[str, str | None, tuple[str, ...]]] = field(default_factory=dict)
    """Per task fingerprint: gold agent/user DB hashes and the gold calls that failed. A task's gold
    replay is the same for every trial, so it runs once per process."""
    _policy: str | None = None

    @property
    def name(self) -> str:
        """The domain name (``retail`` …)."""
        return self.spec.name

    @property
    def has_user_tools(self) -> bool:
        """Whether the user simulator gets tools (and so the tools variant of its guidelines)."""
        return self.spec.user_tools is not None

    def policy_text(self) -> str:
        """Return the domain's policy document, read from the data dir (never bundled with the code)."""
        if self._policy is None:
            sections = self.spec.policy_sections
            if sections:
                self._policy = "\n".join(
                    f"<{tag}>\n{(self.folder / name).read_text(encoding='utf-8')}\n</{tag}>"
                    for tag, name in sections
                )
            else:
                self._policy = (self.folder / self.spec.policy_file).read_text(encoding="utf-8")
            if self.spec.policy_components is not None:
                self._policy = resolve_components(self._policy, self.folder / self.spec.policy_components)
        return self._policy

    def tool_schema(self, seat: str, spec: ToolSpec) -> dict[str, Any]:
        """The OpenAI schema a seat's model is shown for one tool: upstream's words when loaded."""
        if self.tool_words is None:
            return spec.openai_schema()
        return self.tool_words.schema(seat, spec)

    def new_agent_db(self) -> DomainDB:
        """Open a copy-on-write view of the agent DB for one environment."""
        return self.spec.agent_db(self.agent_snapshot)

    def new_user_db(self) -> DomainDB | None:
        """Open a copy-on-write view of the user DB, if the domain has one."""
        if self.spec.user_db is None or self.user_snapshot is None:
            return None
        return self.spec.user_db(self.user_snapshot)


_COMPONENT = re.compile(r"\{\{component:(\w+)\}\}")


def resolve_components(text: str, folder: Path) -> str:
    """Replace every ``{{component:NAME}}`` with ``folder/NAME.md``; a missing file is an error."""

    def include(match: re.Match[str]) -> str:
        path = folder / f"{match.group(1)}.md"
        if not path.is_file():
            raise FileNotFoundError(f"policy component {match.group(0)} not found: {path}")
        return path.read_text(encoding="utf-8")

    return _COMPONENT.sub(include, text)


_LOADED: dict[tuple[Path, str, str, Path | None], tuple[tuple[int, ...], Domain]] = {}


def load_domain(data_dir: str | Path, name: str, *, tau2_version: str = DEFAULT_TAU2_VERSION,
                tools_dir: str | Path | None = None) -> Domain:
    """Load domain ``name`` from a tau2 data dir, validated on first call and cached afterwards.

    ``tools_dir`` holds ``<domain>/tools_agent.json`` and ``tools_user.json`` with upstream's words
    for the tools (default: ``UXLOCAL_TAU2_TOOLS``, then the domain's data folder, then our words;
    see ``tool_words.py``); a file whose tools are shaped unlike ours raises ``ToolWordsError``.
    The cache is keyed by the resolved folder, the grading version (each version has its own
    gold-hash cache) and the tools folder, and revalidated when a DB or tools file's mtime or size
    changes, so tests that point at temporary copies still see their own data.
    """
    if tau2_version not in TAU2_VERSIONS:
        raise ValueError(f"unknown tau2 version {tau2_version!r}; use {' or '.join(TAU2_VERSIONS)}")
    spec = domain_spec(name)
    folder = domain_dir(tau2_root(data_dir), name).resolve()
    words_dir = find_tools_dir(folder, name, tools_dir)
    files = [folder / spec.db_file] + ([folder / spec.user_db_file] if spec.user_db_file else [])
    word_files = [words_dir / f for f in SEAT_FILES.values()] if words_dir else []
    stamp = tuple(v for f in files + word_files for v in _stat(f))
    key = (folder, name, tau2_version, words_dir.resolve() if words_dir else None)
    cached = _LOADED.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    words = load_tool_words(words_dir)
    if words is not None:
        words.check("assistant", spec.agent_tools.tools())
        words.check("user", spec.user_tools.tools() if spec.user_tools is not None else [])
    agent = spec.agent_db.load(files[0])
    user = spec.user_db.load(files[1]) if spec.user_db is not None else None
    domain = Domain(spec=spec, folder=folder, agent_snapshot=agent, user_snapshot=user,
                    tau2_version=tau2_version, tool_words=words)
    _LOADED[key] = (stamp, domain)
    return domain


def _stat(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (info.st_mtime_ns, info.st_size)
