"""A network guard for tests: any attempt to reach beyond this machine raises and is recorded.

``guard_network(monkeypatch)`` patches every Python-level way out: ``socket.socket.connect``,
``connect_ex`` and ``sendto`` (so UDP too), ``socket.create_connection``, and name resolution
(``getaddrinfo``, ``gethostbyname(_ex)``, ``gethostbyaddr``) for any name that is not loopback.
Loopback stays open (the viewer, the openai-http backend's local test servers, vLLM's own
127.0.0.1 rendezvous), and so do Unix sockets. asyncio, httpx, urllib and huggingface_hub all
connect through these functions, so they are covered; code that opens sockets from C (a C++
TCPStore, libcurl) is not, which is why uxlocal also pins ``VLLM_HOST_IP`` to loopback.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Any

import pytest

LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""}


class NetworkBlocked(OSError):
    """Raised instead of connecting anywhere but loopback (an OSError, as a real refusal would be)."""


@dataclass
class NetworkGuard:
    """What the guard stopped: one ``"<call> <address>"`` line per attempt, in order."""

    attempts: list[str] = field(default_factory=list)

    def refuse(self, call: str, address: Any) -> None:
        line = f"{call} {address!r}"
        self.attempts.append(line)
        raise NetworkBlocked(f"network guard: {line} is not loopback")


def is_loopback_host(host: Any) -> bool:
    """Whether ``host`` (an IP literal or a name, str or bytes) stays on this machine without a lookup."""
    if host is None:
        return True  # getaddrinfo(None, port): the local wildcard, used for bind()
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    name = str(host).strip("[]").split("%")[0].lower()
    if name in LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # a name to resolve: that lookup would leave the machine
    return address.is_loopback or address.is_unspecified


def _address_is_local(family: int, address: Any) -> bool:
    if family == getattr(socket, "AF_UNIX", None) or isinstance(address, (str, bytes)):
        return True  # a Unix socket path
    return isinstance(address, tuple) and is_loopback_host(address[0])


def guard_network(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """Patch the socket module for the rest of the test; return the record of blocked attempts."""
    guard = NetworkGuard()
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_sendto, real_create = socket.socket.sendto, socket.create_connection
    real_getaddrinfo, real_byname = socket.getaddrinfo, socket.gethostbyname
    real_byname_ex, real_byaddr = socket.gethostbyname_ex, socket.gethostbyaddr

    def connect(sock: socket.socket, address: Any) -> None:
        if not _address_is_local(sock.family, address):
            guard.refuse("connect", address)
        return real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        if not _address_is_local(sock.family, address):
            guard.refuse("connect_ex", address)
        return real_connect_ex(sock, address)

    def sendto(sock: socket.socket, data: Any, *args: Any) -> int:
        address = args[-1]
        if not _address_is_local(sock.family, address):
            guard.refuse("sendto", address)
        return real_sendto(sock, data, *args)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        if not is_loopback_host(address[0]):
            guard.refuse("create_connection", address)
        return real_create(address, *args, **kwargs)

    def lookup(call: str, real: Any) -> Any:
        def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
            if not is_loopback_host(host):
                guard.refuse(call, host)
            return real(host, *args, **kwargs)

        return resolve

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket.socket, "sendto", sendto)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", lookup("getaddrinfo", real_getaddrinfo))
    monkeypatch.setattr(socket, "gethostbyname", lookup("gethostbyname", real_byname))
    monkeypatch.setattr(socket, "gethostbyname_ex", lookup("gethostbyname_ex", real_byname_ex))
    monkeypatch.setattr(socket, "gethostbyaddr", lookup("gethostbyaddr", real_byaddr))
    return guard
