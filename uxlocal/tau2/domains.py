"""Domain registry and loading: a name maps to a ``DomainSpec``; a data dir + name to a ``Domain``.

Built-in domains register through ``register_domain``, the same call an extension (telecom,
banking) would make, and are imported only on first lookup. ``load_domain`` validates the DB files
once per process and caches the result, so creating an environment per episode costs microseconds.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from .db import Database, Snapshot
from .layout import domain_dir, tau2_root
from .toolkit import Toolkit

_BUILTIN_MODULES = {
    "mock": ".tools_mock",
    "retail": ".tools_retail",
    "airline": ".tools_airline",
    "homenet": ".tools_homenet",
}


@dataclass(frozen=True)
class DomainSpec:
    """Everything code-side about a domain: DB types, toolkits and file names."""

    name: str
    agent_db: type[Database]
    agent_tools: Toolkit
    db_file: str = "db.json"
    user_db: type[Database] | None = None
    user_tools: Toolkit | None = None
    user_db_file: str | None = None
    policy_file: str = "policy.md"

    def __post_init__(self) -> None:
        sides = (self.user_db is None, self.user_tools is None, self.user_db_file is None)
        if len(set(sides)) != 1:
            raise ValueError(f"domain {self.name!r}: user_db, user_tools and user_db_file go together")


_REGISTRY: dict[str, DomainSpec] = {}


def register_domain(spec: DomainSpec) -> None:
    """Make a domain available by name; registering a name twice is a bug."""
    if spec.name in _REGISTRY and _REGISTRY[spec.name] is not spec:
        raise ValueError(f"domain {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec


def domain_spec(name: str) -> DomainSpec:
    """Return the registered spec, importing a built-in domain module on first use."""
    if name not in _REGISTRY and name in _BUILTIN_MODULES:
        module = importlib.import_module(_BUILTIN_MODULES[name], __package__)
        register_domain(module.DOMAIN)
    if name not in _REGISTRY:
        known = sorted(set(_REGISTRY) | set(_BUILTIN_MODULES))
        raise KeyError(f"no tau2 environment for domain {name!r}; implemented: {', '.join(known)}")
    return _REGISTRY[name]


@dataclass(eq=False)
class Domain:
    """A domain's data loaded once: shared DB snapshots, the policy text, and a gold-hash cache."""

    spec: DomainSpec
    folder: Path
    agent_snapshot: Snapshot
    user_snapshot: Snapshot | None
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
            self._policy = (self.folder / self.spec.policy_file).read_text(encoding="utf-8")
        return self._policy

    def new_agent_db(self) -> Database:
        """Open a copy-on-write view of the agent DB for one environment."""
        return self.spec.agent_db(self.agent_snapshot)

    def new_user_db(self) -> Database | None:
        """Open a copy-on-write view of the user DB, if the domain has one."""
        if self.spec.user_db is None or self.user_snapshot is None:
            return None
        return self.spec.user_db(self.user_snapshot)


_LOADED: dict[tuple[Path, str], tuple[tuple[int, ...], Domain]] = {}


def load_domain(data_dir: str | Path, name: str) -> Domain:
    """Load domain ``name`` from a tau2 data dir, validated on first call and cached afterwards.

    The cache is keyed by the resolved folder and revalidated when a DB file's mtime or size
    changes, so tests that point at temporary copies still see their own data.
    """
    spec = domain_spec(name)
    folder = domain_dir(tau2_root(data_dir), name).resolve()
    files = [folder / spec.db_file] + ([folder / spec.user_db_file] if spec.user_db_file else [])
    stamp = tuple(v for f in files for v in _stat(f))
    cached = _LOADED.get((folder, name))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    agent = spec.agent_db.load(files[0])
    user = spec.user_db.load(files[1]) if spec.user_db is not None else None
    domain = Domain(spec=spec, folder=folder, agent_snapshot=agent, user_snapshot=user)
    _LOADED[(folder, name)] = (stamp, domain)
    return domain


def _stat(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (info.st_mtime_ns, info.st_size)
