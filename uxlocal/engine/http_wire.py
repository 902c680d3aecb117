"""A lean HTTP/1.1 client for JSON POSTs to OpenAI-compatible servers, on asyncio streams.

Why not httpx on this path: against an instant server httpx cost the client ~2.9 ms of CPU per
request (its connection pool scans every connection, asking each socket for its peer, on every
request), so a judge run of one chat request per verdict stalled near 300 verdicts/s on the
client's event loop. This client keeps one idle-connection list per host, writes a request in one
``write`` and reads ``content-length`` or chunked bodies: ~60 us a request on the same machine
(the harness ceiling, docs/performance.md). It speaks exactly what the transport needs (POST and
GET with a JSON body, keep-alive, TLS for ``https``); ``OpenAITransport`` keeps httpx when the
environment names a proxy, which httpx honours and this client does not.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


class WireError(Exception):
    """The exchange failed below HTTP: refused, reset, timed out, or a reply cut off or malformed."""


@dataclass
class Response:
    """What the transport reads of an answer (the names httpx uses)."""

    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        """The body as text (invalid UTF-8 replaced)."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """Return the body parsed as JSON (``ValueError`` when it is not)."""
        return json.loads(self.content)


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class WireClient:
    """Keep-alive connections per ``(scheme, host, port)``; used from one event loop."""

    def __init__(self, *, timeout_s: float, connect_timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._tls: ssl.SSLContext | None = None

    async def post(self, url: str, *, content: bytes, headers: dict[str, str]) -> Response:
        """POST ``content``; the reply, whatever its status."""
        return await self._exchange("POST", url, content, headers, self.timeout_s)

    async def get(self, url: str, *, headers: dict[str, str], timeout: float | None = None) -> Response:
        """GET ``url``; the reply, whatever its status."""
        return await self._exchange("GET", url, b"", headers, timeout or self.timeout_s)

    async def aclose(self) -> None:
        """Close every idle connection."""
        for connections in self._idle.values():
            for _, writer in connections:
                writer.close()
        self._idle.clear()

    async def _exchange(self, method: str, url: str, content: bytes, headers: dict[str, str],
                        timeout_s: float) -> Response:
        parts = urlsplit(url)
        secure = parts.scheme == "https"
        where = (parts.scheme, parts.hostname or "", parts.port or (443 if secure else 80))
        connection = await self._connection(where)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = [f"{method} {target} HTTP/1.1", f"host: {parts.netloc}", f"content-length: {len(content)}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        try:
            connection[1].write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + content)
            async with asyncio.timeout(timeout_s):  # no extra task per request, as wait_for makes
                status, body, keep = await _read_reply(connection[0])
        except (OSError, EOFError, asyncio.IncompleteReadError, ValueError, TimeoutError) as exc:
            connection[1].close()
            kind = "ReadTimeout" if isinstance(exc, TimeoutError) else type(exc).__name__
            raise WireError(f"{kind}: {exc or 'no detail'}") from exc
        if keep:
            self._idle.setdefault(where, []).append(connection)
        else:
            connection[1].close()
        return Response(status, body)

    async def _connection(self, where: tuple[str, str, int]) -> Connection:
        """Return an idle connection that is still open, or a new one."""
        idle = self._idle.get(where, [])
        while idle:
            reader, writer = idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        scheme, host, port = where
        if scheme == "https" and self._tls is None:
            self._tls = ssl.create_default_context()
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=self._tls if scheme == "https" else None),
                self.connect_timeout_s)
        except (OSError, TimeoutError) as exc:
            kind = "ConnectTimeout" if isinstance(exc, TimeoutError) else "ConnectError"
            raise WireError(f"{kind}: {exc or 'no detail'}") from exc


async def _read_reply(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """Status, body and whether the connection stays open, of one HTTP/1.1 reply."""
    status_line = await reader.readline()
    if not status_line:
        raise EOFError("the server closed the connection before answering")
    version, status = status_line.split(b" ", 2)[:2]
    length, chunked, keep = None, False, version == b"HTTP/1.1"
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise EOFError("the reply's headers were cut off")
        name, _, value = line.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value
        elif name == b"connection":
            keep = value == b"keep-alive" or (keep and value != b"close")
    if int(status) in (204, 304):  # no body, whatever the headers say
        return int(status), b"", keep
    if chunked:
        return int(status), await _read_chunks(reader), keep
    if length is None:  # no framing: the body runs to the end of the connection
        return int(status), await reader.read(), False
    return int(status), await reader.readexactly(length), keep


async def _read_chunks(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readline()).split(b";", 1)[0].strip() or b"x", 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
