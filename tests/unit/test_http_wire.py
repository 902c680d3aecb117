"""The lean HTTP/1.1 client reads every framing a server may use, and fails as a transport error."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import pytest

from uxlocal.engine.http_wire import WireClient, WireError

REPLIES = {
    "/length": b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"a\": true}",
    "/chunked": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"4\r\n{\"a\"\r\n7;x=1\r\n: true}\r\n0\r\n\r\n"),
    "/close": b"HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\nserver error",
    "/empty": b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
}


async def _serve(seen: list[bytes]) -> asyncio.Server:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
            if not head:
                break
            length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length")), b"0"))
            body = await reader.readexactly(length)
            seen.append(head + body)
            path = head.split(b" ")[1].decode()
            if path == "/slow":
                await asyncio.sleep(1.0)
            writer.write(REPLIES.get(path, REPLIES["/length"]))
            await writer.drain()
            if path == "/close":
                writer.close()
                break

    return await asyncio.start_server(answer, "127.0.0.1", 0)



def _run_alone(coro: Any) -> None:
    """Run ``coro`` on a new thread's own event loop.

    Earlier tests in the same process (Playwright's sync API in tests/browser) leave a loop marked
    running on the main thread, where ``asyncio.run`` refuses to start another.
    """
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coro).result()

def test_wire_client_reads_length_chunked_close_and_no_content_replies() -> None:
    async def scenario() -> None:
        seen: list[bytes] = []
        server = await _serve(seen)
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        client = WireClient(timeout_s=5.0, connect_timeout_s=1.0)
        first = await client.post(base + "/length", content=b'{"q": 1}',
                                  headers={"authorization": "Bearer k"})
        chunked = await client.post(base + "/chunked", content=b"{}", headers={})
        closed = await client.get(base + "/close", headers={})
        empty = await client.post(base + "/empty", content=b"", headers={})
        await client.aclose()
        server.close()
        assert first.status_code == 200 and first.json() == {"a": True}
        assert chunked.json() == {"a": True}
        assert closed.status_code == 500 and closed.text == "server error"
        assert empty.status_code == 204 and empty.content == b""
        assert seen[0].startswith(b"POST /length HTTP/1.1\r\n") and b"authorization: Bearer k" in seen[0]
        assert seen[0].endswith(b'\r\n\r\n{"q": 1}') and b"content-length: 8" in seen[0]

    _run_alone(scenario())


def test_wire_client_times_out_and_refused_connections_raise_wire_errors() -> None:
    async def scenario() -> None:
        server = await _serve([])
        port = server.sockets[0].getsockname()[1]
        client = WireClient(timeout_s=0.2, connect_timeout_s=1.0)
        with pytest.raises(WireError, match="ReadTimeout"):
            await client.post(f"http://127.0.0.1:{port}/slow", content=b"{}", headers={})
        server.close()
        await server.wait_closed()
        with pytest.raises(WireError, match="Connect"):
            await client.post(f"http://127.0.0.1:{port}/length", content=b"{}", headers={})

    _run_alone(scenario())
