"""The viewer answers only its own host (issue 18: DNS rebinding).

A foreign ``Host`` gets 400 and no store data, a foreign ``Origin`` gets 403, ``127.0.0.1:PORT`` and
``localhost:PORT`` get the pages.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from uxlocal.report.viewer import HOST, create_app
from uxlocal.report.viewer.localonly import allowed_hosts
from uxlocal.store.db import connect

PORT = 8765


@pytest.fixture(scope="module")
def client(demo_store: tuple[Path, dict[str, Any]]) -> Iterator[TestClient]:
    with TestClient(create_app(demo_store[0], port=PORT), base_url=f"http://127.0.0.1:{PORT}") as test_client:
        yield test_client


@pytest.fixture(scope="module")
def episode(demo_store: tuple[Path, dict[str, Any]]) -> dict[str, str]:
    """One uxbench episode's address and the text of its longest turn (what an attacker wants)."""
    run_id = demo_store[1]["uxbench"]
    con = connect(demo_store[0], read_only=True)
    try:
        episode_id, content = con.execute(
            "SELECT episode_id, content FROM turns WHERE run_id = ? AND length(content) > 20 "
            "ORDER BY length(content) DESC, episode_id LIMIT 1", [run_id]).fetchone()
    finally:
        con.close()
    return {"run": run_id, "id": episode_id, "text": content[:20]}


def _urls(episode: dict[str, str]) -> list[str]:
    return ["/", f"/run?run={episode['run']}", f"/episode?run={episode['run']}&id={episode['id']}"]


@pytest.mark.parametrize("host", [
    "evil.example.com",  # the rebinding page's own name, port 80
    f"evil.example.com:{PORT}",  # the same, with the viewer's port
    f"127.0.0.1.evil.example.com:{PORT}",  # a name that starts like ours
    "127.0.0.1:9999",  # our address, another port: another server's origin
    "localhost",  # no port: only port 80 may leave it out
    "",  # empty
])
def test_viewer_refuses_foreign_host_with_400_and_no_store_data(client: TestClient, episode: dict[str, str],
                                                                 host: str) -> None:
    for url in _urls(episode):
        response = client.get(url, headers={"host": host})
        assert response.status_code == 400, url
        assert episode["run"] not in response.text and episode["text"] not in response.text
        assert "default-src 'none'" in response.headers["content-security-policy"]


@pytest.mark.parametrize("host", [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"LOCALHOST:{PORT}"])
def test_viewer_answers_its_own_host(client: TestClient, episode: dict[str, str], host: str) -> None:
    for url in _urls(episode):
        response = client.get(url, headers={"host": host})
        assert response.status_code == 200, url
        assert "default-src 'none'" in response.headers["content-security-policy"]
    page = client.get(_urls(episode)[2], headers={"host": host}).text
    assert episode["text"] in page.replace("&#x27;", "'").replace("&quot;", '"').replace("&amp;", "&")


@pytest.mark.parametrize("origin, status", [
    ("https://evil.example.com", 403),  # a cross-site request
    ("null", 403),  # a sandboxed frame or a file:// page
    (f"http://evil.example.com:{PORT}", 403),  # a rebinding page's own origin
    (f"http://localhost:{PORT}", 200),  # the viewer's own page
    (f"http://127.0.0.1:{PORT}", 200),  # the same, by address
])
def test_viewer_checks_origin_when_a_request_carries_one(client: TestClient, origin: str,
                                                         status: int) -> None:
    response = client.get("/", headers={"origin": origin})
    assert response.status_code == status
    assert ("episode-count" in response.text) is (status == 200)


def test_viewer_accepts_no_state_changing_request(client: TestClient) -> None:
    assert client.post("/", headers={"origin": "https://evil.example.com"}).status_code == 403
    assert client.post("/", headers={"origin": f"http://127.0.0.1:{PORT}"}).status_code == 405


def test_allowed_hosts_leave_the_port_out_only_on_80() -> None:
    assert allowed_hosts(8765) == {"127.0.0.1:8765", "localhost:8765"}
    assert allowed_hosts(80) == {"127.0.0.1:80", "localhost:80", "127.0.0.1", "localhost"}


def test_served_viewer_refuses_a_rebinding_request_over_loopback(
        demo_store: tuple[Path, dict[str, Any]], episode: dict[str, str], network_guard: Any) -> None:
    """The issue's reproduction, on a real server: curl -H 'Host: evil.example.com' 127.0.0.1:PORT/episode."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(demo_store[0], port=port), host=HOST, port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"http://{HOST}:{port}/episode?run={episode['run']}&id={episode['id']}"
        evil = httpx.get(url, headers={"host": "evil.example.com"}, timeout=10)
        own = httpx.get(url.replace(HOST, "localhost"), timeout=10)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert evil.status_code == 400 and episode["text"] not in evil.text
    assert own.status_code == 200
    assert network_guard.attempts == []  # loopback only, both ways


def _free_port() -> int:
    """Return a free loopback port (closed again before the server binds it)."""
    import socket

    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])
