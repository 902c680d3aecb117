"""The trajectory viewer in Chromium: loads cleanly, a filter changes the list, an episode shows its turns."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser


def _suites(page: Any) -> list[str]:
    return page.eval_on_selector_all("tr.episode", "rows => rows.map(r => r.dataset.suite)")


def test_viewer_filter_changes_the_visible_episodes(watched: Any, viewer_url: str) -> None:
    page = watched.page
    page.goto(viewer_url + "/")
    before = _suites(page)
    assert len(set(before)) > 1
    with page.expect_navigation():
        page.select_option("select[name=suite]", "palate")
    after = _suites(page)
    assert after and set(after) == {"palate"} and len(after) < len(before)
    assert page.input_value("select[name=suite]") == "palate"
    assert watched.errors == [] and watched.outside == []


def test_viewer_episode_page_shows_turns_and_verdicts(watched: Any, viewer_url: str) -> None:
    # the demo store always holds tau2 episodes (played on the bundled sample domain), issue 14
    page = watched.page
    page.goto(f"{viewer_url}/?suite=tau2")
    with page.expect_navigation():
        page.click("a.episode-link >> nth=0")
    turns = page.locator("#turns article.turn")
    assert turns.count() > 1 and turns.first.is_visible()
    assert page.locator("#verdicts .verdict").count() > 0
    card = page.locator(".verdict[data-evidence]").first  # UFS verdicts cite turns: a click highlights them
    target = card.get_attribute("data-evidence").split()[0]
    card.click()
    assert "focus" in (page.get_attribute(f"#turn-{target}", "class") or "")
    assert watched.errors == [] and watched.outside == []
