"""``uxlocal report`` and ``uxlocal view`` on the command line: outputs, usage errors, exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_report_html_writes_a_file_with_every_plot(
    tmp_path: Path, demo_store: tuple[Path, dict[str, Any]], figures_expected: dict[str, set[str]]
) -> None:
    out = tmp_path / "r.html"
    code, text = invoke("report", "--db", str(demo_store[0]), "--html", str(out))
    assert code == 0, text
    n_plots = sum(len(v) for v in figures_expected.values())
    assert f"{len(figures_expected)} section(s), {n_plots} plot(s)" in text
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and html.count('<figure class="plot"') == n_plots


def test_report_markdown_for_one_run_goes_to_stdout(demo_store: tuple[Path, dict[str, Any]]) -> None:
    db, runs = demo_store
    code, text = invoke("report", "--db", str(db), "--run", runs["palate"], "--format", "md")
    assert code == 0, text
    assert text.startswith("# uxlocal report") and "## PALATE" in text and "## UXBench" not in text


def test_report_defaults_to_terminal_tables(demo_store: tuple[Path, dict[str, Any]]) -> None:
    db, runs = demo_store
    code, text = invoke("report", "--db", str(db), "--run", runs["uxbench"])
    assert code == 0, text
    assert "UXBench T1 UX Judge" in text and "Avg-Acc %" in text


@pytest.mark.parametrize(
    "args, message",
    [
        # --html already says the format; a second, different one is a contradiction
        (("--html", "x.html", "--format", "md"), "--html writes HTML"),
        # two destinations for one HTML file
        (("--html", "x.html", "--out", "y.html"), "give the HTML file once"),
        # terminal output has no file
        (("--out", "y.txt"), "--out needs --format html or md"),
    ],
)
def test_report_contradictory_flags_are_usage_errors(
    args: tuple[str, ...], message: str, demo_store: tuple[Path, dict[str, Any]]
) -> None:
    code, text = invoke("report", "--db", str(demo_store[0]), *args)
    assert code == 2 and message in text


def test_report_unknown_run_exits_2_naming_it(demo_store: tuple[Path, dict[str, Any]]) -> None:
    code, text = invoke("report", "--db", str(demo_store[0]), "--run", "nope-123")
    assert code == 2 and "no such run(s) in the store: nope-123" in text


def test_report_and_view_on_a_missing_store_name_the_file(tmp_path: Path) -> None:
    for command in ("report", "view"):
        code, text = invoke(command, "--db", str(tmp_path / "nope.duckdb"))
        assert code == 2 and "nope.duckdb: no such store" in text


def test_view_has_no_host_option_and_serves_on_loopback(
    monkeypatch: pytest.MonkeyPatch, demo_store: tuple[Path, dict[str, Any]]
) -> None:
    import uvicorn

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: seen.update(kwargs))
    code, text = invoke("view", "--db", str(demo_store[0]), "--port", "8799")
    assert code == 0, text
    assert seen["host"] == "127.0.0.1" and seen["port"] == 8799 and "http://127.0.0.1:8799/" in text
    code, text = invoke("view", "--db", str(demo_store[0]), "--host", "0.0.0.0")
    assert code == 2 and "No such option '--host'" in text


def test_view_on_a_busy_port_says_so(demo_store: tuple[Path, dict[str, Any]]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, text = invoke("view", "--db", str(demo_store[0]), "--port", str(port))
    assert code == 2 and f"port {port} on 127.0.0.1 is in use" in text
