"""The trajectory viewer as a Starlette app over one read-only store connection.

Routes: ``/`` (runs, filterable episodes), ``/run?run=ID`` (provenance and result tables),
``/episode?run=ID&id=EPISODE`` (turns, tool calls and verdicts side by side). Ids travel in the
query string, not the path, because episode ids contain slashes (``mock/task_1/trial-0``). Only
requests addressed to ``127.0.0.1:PORT`` or ``localhost:PORT`` get through (``localonly.py``:
DNS rebinding would otherwise let any web page read the store).

DuckDB connections are not safe to share across threads and Starlette runs plain endpoints in a
thread pool, so every request takes one lock; the viewer is one person's local tool, and its
queries take milliseconds. A read-only connection holds DuckDB's shared lock on the file for as
long as the viewer runs, so a ``uxlocal run`` writing the same store must wait until it stops.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from uxlocal.report.viewer import pages
from uxlocal.report.viewer.localonly import LocalOnly
from uxlocal.report.viewer.queries import Filters, StoreReader

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Cache-Control": "no-store"}
"""On every answer, refusals included."""


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)


def create_app(db: str | Path, *, port: int = 8765) -> Starlette:
    """Build the app serving ``db`` to ``127.0.0.1:port`` and ``localhost:port`` only.

    The store opens read-only now, so a bad path fails before serving. ``port`` must be the port
    the server listens on: requests whose ``Host`` names anything else get 400.
    """
    from uxlocal.report.readonly import open_store

    con, _ = open_store(db)  # views an older store cannot bind are left out; so are their filters
    reader = StoreReader(con)
    lock = threading.Lock()
    label = str(db)

    def locked(fn: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            with lock:
                return fn(request)

        return endpoint

    def index(request: Request) -> Response:
        filters = Filters.from_query(request.query_params)
        total, episodes = reader.episodes(filters)
        return _html(
            pages.index_page(
                reader.runs(),
                reader.options(),
                filters,
                total,
                episodes,
                db=label,
                families=reader.has_families,
            )
        )

    def run(request: Request) -> Response:
        found = reader.run(request.query_params.get("run", ""))
        if found is None:
            return _html(
                pages.not_found(f"no run {request.query_params.get('run', '')!r} in this store", db=label),
                404,
            )
        tables, problem = _run_tables(con, found)
        return _html(pages.run_page(found, tables, problem, db=label))

    def episode(request: Request) -> Response:
        run_id, episode_id = request.query_params.get("run", ""), request.query_params.get("id", "")
        found = reader.episode(run_id, episode_id)
        if found is None:
            return _html(pages.not_found(f"no episode {episode_id!r} in run {run_id!r}", db=label), 404)
        return _html(pages.episode_page(found, db=label))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        with lock:
            con.close()

    routes = [Route("/", locked(index)), Route("/run", locked(run)), Route("/episode", locked(episode))]
    middleware = [Middleware(LocalOnly, port=port, headers=SECURITY_HEADERS)]
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)


def _run_tables(con: Any, run: dict[str, Any]) -> tuple[list[Any], str | None]:
    """Return the suite's own result tables for the run, or the reason there are none."""
    from uxlocal.report.build import reason
    from uxlocal.suites.base import get_suite

    try:
        return get_suite(run["suite"]).report(con, run["run_id"]), None
    except Exception as exc:  # a plugin suite that is not installed, a view an old store lacks
        return [], reason(exc)


HOST = "127.0.0.1"
"""The viewer never listens beyond this machine: the store can hold private conversations."""


def serve(db: str | Path, *, port: int = 8765, echo: Callable[[str], None] = print) -> None:
    """Serve ``db`` on http://127.0.0.1:PORT until interrupted."""
    import uvicorn

    _check_port(port)
    app = create_app(db, port=port)
    echo(f"uxlocal viewer: http://{HOST}:{port}/ serving {db} read-only (Ctrl-C to stop)")
    uvicorn.run(app, host=HOST, port=port, log_level="warning")


def _check_port(port: int) -> None:
    """Fail with a clear message, before opening the store, when the port is taken."""
    import socket

    from uxlocal.errors import InputError

    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            raise InputError(f"port {port} on {HOST} is in use", "pick another with --port") from None
