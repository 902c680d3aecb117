"""Fixtures for the report tests: the demo-shaped store and its report, built once per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from report_store import expected_figures, shared_demo_report, shared_demo_store

from uxlocal.reportkit.model import Report


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return shared_demo_store(tmp_path_factory)


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return shared_demo_report(tmp_path_factory)


@pytest.fixture(scope="session")
def figures_expected(demo_store: tuple[Path, dict[str, Any]]) -> dict[str, set[str]]:
    return expected_figures(demo_store[1])
