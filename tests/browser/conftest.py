"""Browser tests: the HTML report and the viewer in Debian's headless Chromium, driven by Playwright.

Playwright's own browser download cannot work on these offline machines, so the tests launch the
system Chromium (``/usr/bin/chromium``, Debian packages ``chromium`` and ``chromium-driver``,
installed by ``.ci/setup``) with the flags this workplace's machines need. Locally they skip, with
the reason, when Chromium or Playwright is missing; in CI (``CI=true``) they fail instead, so a
broken install can never pass as a green run.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from report_store import expected_figures, shared_demo_report, shared_demo_store

CHROMIUM = Path(os.environ.get("UXLOCAL_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""What Chromium needs here: without the networking flags it keeps calling out to a closed network.
Playwright adds --headless and a fresh --user-data-dir itself."""


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests must run in CI: {reason} (see .ci/setup)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        _unavailable(f"{CHROMIUM} not found: apt-get install -y chromium chromium-driver")
    try:
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:
        _unavailable("playwright not installed: pip install -e '.[browser]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield launched
        launched.close()


@dataclass
class Watched:
    """A page plus everything that went wrong on it: console errors, script errors, outside requests."""

    page: Any
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    seen = Watched(page)
    page.on(
        "console", lambda m: seen.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda exc: seen.errors.append(f"page error: {exc}"))

    def request(req: Any) -> None:
        if not req.url.startswith(("file://", "http://127.0.0.1", "data:", "about:")):
            seen.outside.append(req.url)

    page.on("request", request)
    yield seen
    context.close()


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return shared_demo_store(tmp_path_factory)


@pytest.fixture(scope="session")
def figures_expected(demo: tuple[Path, dict[str, Any]]) -> dict[str, set[str]]:
    return expected_figures(demo[1])


@pytest.fixture(scope="session")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from uxlocal.report import render_html

    path = tmp_path_factory.mktemp("report-html") / "report.html"
    path.write_text(render_html(shared_demo_report(tmp_path_factory)), encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def viewer_url(demo: tuple[Path, dict[str, Any]]) -> Iterator[str]:
    """Yield the viewer on a free loopback port, in a thread, for the whole session."""
    import uvicorn

    from uxlocal.report.viewer import HOST, create_app

    port = _free_port()
    app = create_app(demo[0], port=port)  # the viewer answers only Host 127.0.0.1:PORT / localhost:PORT
    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the viewer did not start")
        time.sleep(0.05)
    yield f"http://{HOST}:{port}"
    server.should_exit = True
    thread.join(timeout=10)
