"""The trajectory viewer's routes through Starlette's test client: lists, filters, one episode."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from uxlocal.report.viewer import create_app
from uxlocal.store.db import connect

PORT = 8765
BASE_URL = f"http://127.0.0.1:{PORT}"
"""The viewer answers only its own host (see test_viewer_host.py); the test client must name it."""


@pytest.fixture(scope="module")
def client(demo_store: tuple[Path, dict[str, Any]]) -> Iterator[TestClient]:
    with TestClient(create_app(demo_store[0], port=PORT), base_url=BASE_URL) as test_client:
        yield test_client


def _total(html: str) -> int:
    match = re.search(r'id="episode-count" data-total="(\d+)"', html)
    assert match, "no episode count on the page"
    return int(match.group(1))


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="episode" data-suite="([^"]+)"', html)


def _episodes_in_store(db: Path) -> int:
    con = connect(db, read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM episodes").fetchone()[0])
    finally:
        con.close()


def test_index_lists_every_run_and_episode(
    client: TestClient, demo_store: tuple[Path, dict[str, Any]]
) -> None:
    response = client.get("/")
    assert response.status_code == 200
    html = response.text
    for run_id in (demo_store[1]["uxbench"], demo_store[1]["palate"]):
        assert f">{run_id}</a>" in html
    assert _total(html) == _episodes_in_store(demo_store[0])
    assert len(_rows(html)) == min(100, _total(html))


def test_responses_forbid_outside_resources(client: TestClient) -> None:
    csp = client.get("/").headers["content-security-policy"]
    assert "default-src 'none'" in csp and "form-action 'self'" in csp


@pytest.mark.parametrize(
    "query, check",
    [
        # suite: only that suite's episodes remain
        ("suite=palate", lambda rows, html: set(rows) == {"palate"}),
        # verdict label: every listed episode carries a verdict with that label (only UFS verdicts
        # fail; the store always has them since tau2 plays the bundled sample domain, issue 14)
        ("verdict=fail", lambda rows, html: rows and all(r == "tau2" for r in rows)),
        # reward range: every listed reward lies inside it
        (
            "reward_min=0.5&reward_max=1",
            lambda rows, html: all(0.5 <= float(r) <= 1 for r in re.findall(r'data-reward="([^"]*)"', html)),
        ),
        # user: palate's user id (or tau2's proxy)
        ("user=u1", lambda rows, html: rows and set(rows) == {"palate"}),
        # model: a seat's model name
        ("model=fake-judge-7", lambda rows, html: set(rows) == {"uxbench"}),
    ],
)
def test_filters_narrow_the_episode_list(client: TestClient, query: str, check: Any) -> None:
    everything = _total(client.get("/").text)
    html = client.get(f"/?{query}").text
    assert 0 < _total(html) < everything
    assert check(_rows(html), html)


def test_family_filter_lists_only_episodes_with_that_violation(
    client: TestClient, demo_store: tuple[Path, dict[str, Any]]
) -> None:
    html = client.get("/?family=premature_disclosure").text
    assert 0 < _total(html) and set(_rows(html)) == {"tau2"}
    assert html.count('<span class="badge ">premature_disclosure</span>') == _total(html)


def test_bad_filter_values_are_ignored_not_errors(client: TestClient) -> None:
    response = client.get("/?reward_min=abc&page=-3&nonsense=1")
    assert response.status_code == 200 and _total(response.text) > 0


def test_episode_page_shows_turns_tool_calls_verdicts_and_evidence(
    client: TestClient, demo_store: tuple[Path, dict[str, Any]]
) -> None:
    run_id = demo_store[1]["tau2"][0]
    con = connect(demo_store[0], read_only=True)
    try:
        episode_id, n_turns = con.execute(
            "SELECT episode_id, n_turns FROM episodes WHERE run_id = ? ORDER BY 1", [run_id]
        ).fetchone()
    finally:
        con.close()
    html = client.get("/episode", params={"run": run_id, "id": episode_id}).text
    assert len(re.findall(r'<article class="turn role-', html)) == n_turns
    assert '<div class="tool-call ok seat-assistant">' in html and "agent seat calls list_plans" in html
    assert html.count('<div class="verdict') == 4 and "ufs:c0" in html
    # turn 1 is the evidence of ufs:c0, which this episode fails: highlighted as a failure
    assert re.search(r'<article class="turn role-\w+ evidence evidence-fail" id="turn-1"', html)
    assert re.search(r'<article class="turn role-\w+ evidence" id="turn-2"', html)  # a passing verdict's
    assert 'data-evidence="1"' in html and 'href="#turn-1"' in html


def test_run_page_shows_the_suite_tables(client: TestClient, demo_store: tuple[Path, dict[str, Any]]) -> None:
    html = client.get("/run", params={"run": demo_store[1]["uxbench"]}).text
    assert "UXBench T1 UX Judge" in html and "config_sha256" in html


@pytest.mark.parametrize("url", ["/episode?run=nope&id=x", "/run?run=nope"])
def test_unknown_run_or_episode_is_404(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 404 and "Not found" in response.text


def test_viewer_escapes_stored_text(tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    con = connect(db)
    now = dt.datetime.now(dt.timezone.utc)
    con.execute(
        "INSERT INTO runs (run_id, suite, config, config_sha256, status, started_at) VALUES "
        "('r<1>', 'selftest', '{}', 'h', 'done', ?)",
        [now],
    )
    con.execute(
        "INSERT INTO episodes (run_id, episode_id, task, status, n_turns, info) VALUES "
        "('r<1>', 'e\"&<b>', 't', 'done', 1, ?)",
        [json.dumps({"user_id": "<img src=x>"})],
    )
    con.execute(
        "INSERT INTO turns (run_id, episode_id, idx, role, content) VALUES "
        "('r<1>', 'e\"&<b>', 0, 'user', '<script>alert(1)</script>')"
    )
    con.close()
    with TestClient(create_app(db, port=PORT), base_url=BASE_URL) as test_client:
        index = test_client.get("/").text
        page = test_client.get("/episode", params={"run": "r<1>", "id": 'e"&<b>'}).text
    for html in (index, page):
        assert "<script>alert" not in html and "<img src=x>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_tool_call_marks_the_seat_that_ran_it() -> None:
    """Issue 15: in telecom the user runs tools on its own phone; the page tells the seats apart."""
    from uxlocal.report.viewer.pages import _tool_call

    row = {
        "ok": True,
        "result": "Airplane mode is now OFF.",
        "error": None,
        "arguments": {},
        "name": "toggle_airplane_mode",
    }
    user = _tool_call({**row, "requestor": "user"})
    agent = _tool_call({**row, "requestor": "assistant", "name": "refuel_data"})
    assert (
        'class="tool-call ok seat-user"' in user
        and "user seat (own device) calls toggle_airplane_mode" in user
    )
    assert 'class="tool-call ok seat-assistant"' in agent and "agent seat calls refuel_data" in agent
