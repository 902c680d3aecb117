"""UXBench unit tests run with uxlocal's own words unless a test names a checkout."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_checkout_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UXLOCAL_UXBENCH_SRC", raising=False)
