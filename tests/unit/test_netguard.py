"""The network guard itself (tests/netguard.py).

It must stop and record what leaves the machine, and let loopback through, or the "no network" tests
built on it prove nothing.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import httpx
import pytest
from netguard import NetworkBlocked, is_loopback_host


@pytest.fixture
def loopback_server() -> Any:
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            accepted.append(conn.recv(16))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    thread.join(timeout=5)
    server.close()


@pytest.mark.parametrize("host, local", [
    ("127.0.0.1", True),  # IPv4 loopback
    ("127.8.9.10", True),  # all of 127/8 is loopback
    ("::1", True),  # IPv6 loopback
    ("[::1]", True),  # as written in URLs
    ("localhost", True),  # resolved from /etc/hosts, never DNS
    (None, True),  # getaddrinfo(None, port) for bind()
    ("10.0.0.1", False),  # a private network is still a network
    ("8.8.8.8", False),  # vLLM's IP probe target
    ("example.com", False),  # a name: its lookup leaves the machine
])
def test_is_loopback_host_separates_loopback_from_everything_else(host: Any, local: bool) -> None:
    assert is_loopback_host(host) is local


def test_guard_stops_and_records_udp_and_tcp_connects_when_not_loopback(network_guard: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, pytest.raises(NetworkBlocked):
        udp.connect(("8.8.8.8", 80))  # what vLLM's get_ip() does without VLLM_HOST_IP
    with socket.socket() as tcp, pytest.raises(NetworkBlocked):
        tcp.connect_ex(("10.1.2.3", 443))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, pytest.raises(NetworkBlocked):
        udp.sendto(b"x", ("10.1.2.3", 53))
    assert network_guard.attempts == ["connect ('8.8.8.8', 80)", "connect_ex ('10.1.2.3', 443)",
                                      "sendto ('10.1.2.3', 53)"]


def test_guard_stops_lookups_and_http_clients_when_not_loopback(network_guard: Any) -> None:
    with pytest.raises(NetworkBlocked):
        socket.getaddrinfo("example.com", 443)
    with pytest.raises(httpx.ConnectError):  # httpx wraps the OSError; the attempt is still recorded
        httpx.get("https://example.com/", timeout=2.0)

    async def fetch() -> None:
        async with httpx.AsyncClient() as client:
            await client.get("http://10.9.9.9:8000/v1/models", timeout=2.0)

    # a fresh thread: an earlier test in the session (Playwright's sync API) may leave this thread
    # marked as running an event loop, and asyncio.run refuses to start inside one
    raised: list[BaseException] = []
    worker = threading.Thread(target=lambda: _run_catching(fetch, raised))
    worker.start()
    worker.join(timeout=30)
    assert len(raised) == 1 and isinstance(raised[0], httpx.ConnectError), raised
    # sync httpx goes through create_connection, async httpx through asyncio's sock.connect
    assert network_guard.attempts == ["getaddrinfo 'example.com'", "create_connection ('example.com', 443)",
                                      "connect ('10.9.9.9', 8000)"]


def test_guard_lets_loopback_through(network_guard: Any, loopback_server: Any) -> None:
    port, accepted = loopback_server
    with socket.create_connection(("localhost", port), timeout=5) as conn:
        conn.sendall(b"hello")
    for _ in range(100):
        if accepted:
            break
        threading.Event().wait(0.02)
    assert accepted == [b"hello"] and network_guard.attempts == []


def _run_catching(coroutine_fn: Any, raised: list[BaseException]) -> None:
    try:
        asyncio.run(coroutine_fn())
    except BaseException as exc:  # noqa: BLE001 - handed back to the test thread
        raised.append(exc)
