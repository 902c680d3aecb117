"""Answer only requests addressed to the viewer's own loopback origin (a defence against DNS rebinding).

Binding 127.0.0.1 keeps other machines out, not other web pages: a page the user visits can make
its own domain name resolve to 127.0.0.1, and the browser then treats the viewer as that page's
origin and lets its script read every trajectory. The one thing such a request cannot fake is its
``Host`` header, which names the attacker's domain. So every request must carry ``Host:
127.0.0.1:PORT`` or ``localhost:PORT`` (the bare name on port 80, as browsers send it), or it gets
400 and no store data. A request carrying an ``Origin`` (browsers add one to cross-origin and
state-changing requests) must come from one of those origins too, or it gets 403; every route is
a read-only GET today, and this keeps any later one safe from cross-site requests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import PlainTextResponse

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost")
"""The names the viewer answers to; it binds 127.0.0.1 only, so ``[::1]`` never reaches it."""


def allowed_hosts(port: int) -> frozenset[str]:
    """``Host`` values a browser sends for the viewer on ``port`` (lower case)."""
    hosts = {f"{name}:{port}" for name in LOOPBACK_NAMES}
    if port == 80:
        hosts |= set(LOOPBACK_NAMES)  # browsers leave out the default port
    return frozenset(hosts)


class LocalOnly:
    """ASGI middleware: requests with a foreign ``Host`` (400) or ``Origin`` (403) never reach the app."""

    def __init__(self, app: App, *, port: int, headers: dict[str, str] | None = None) -> None:
        self.app = app
        self.port = port
        self.hosts = allowed_hosts(port)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        self.headers = dict(headers or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a refused HTTP request here; pass everything else to the app."""
        if scope["type"] == "http":
            refusal = self.refusal(_header(scope, b"host"), _header(scope, b"origin"))
            if refusal is not None:
                status, text = refusal
                await PlainTextResponse(text, status_code=status, headers=self.headers)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """Return the status and text to answer instead of the app, or None to let the request through."""
        if host is None or host.lower() not in self.hosts:
            return 400, (f"uxlocal view answers only http://127.0.0.1:{self.port}/ and "
                         f"http://localhost:{self.port}/ (this request named another host)\n")
        if origin is not None and origin.lower().rstrip("/") not in self.origins:
            return 403, "uxlocal view does not answer requests sent by other sites\n"
        return None


def _header(scope: Scope, name: bytes) -> str | None:
    """Return the first value of a header (names arrive lower-cased from ASGI servers), or None."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1").strip()
    return None
