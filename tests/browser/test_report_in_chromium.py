"""The HTML report rendered by Chromium: no errors, no fetches, every section and plot visible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser


def test_report_renders_every_section_and_plot_offline(
    watched: Any, report_file: Path, figures_expected: dict[str, set[str]]
) -> None:
    page = watched.page
    page.goto(report_file.as_uri())
    page.wait_for_load_state("load")
    assert watched.errors == [] and watched.outside == []
    for section in figures_expected:
        assert page.locator(f"section#sec-{section} h2").is_visible()
    rendered = page.eval_on_selector_all(
        "figure.plot",
        "els => els.map(f => [f.dataset.plot, f.querySelector('svg').getBoundingClientRect().width,"
        " f.querySelector('svg').getBoundingClientRect().height])",
    )
    drawn = {key for key, width, height in rendered if width > 200 and height > 100}
    assert drawn == set().union(*figures_expected.values())
    assert page.locator("#provenance .run").count() >= len(figures_expected) - 1
    assert page.locator("table.results").count() > 10


def test_report_plot_text_is_real_text(watched: Any, report_file: Path) -> None:
    page = watched.page
    page.goto(report_file.as_uri())
    text = page.inner_text("figure[data-plot='uxbench-reliability']")
    assert "predicted P(good) (fraction 0-1)" in text
