"""The openai-http API key comes from the environment and is never stored (issue 18).

After a run against a local server that requires it, neither the store file's bytes nor any table
holds it.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchmarks._openai_fake import FakeOpenAI
from uxlocal.cli import cli
from uxlocal.engine.http import KEY_REDACTED
from uxlocal.store.db import connect

ROLES = ("candidate", "user", "judge")


@pytest.fixture
def key() -> str:
    return f"sk-uxlocal-{secrets.token_hex(12)}"


def _run(server: FakeOpenAI, db: Path, spec: str | None = None) -> Any:
    spec = spec or server.url  # no #NAME: the served name is asked of /models, with the key too
    args = ["run", "selftest", "--limit", "4", "--db", str(db), "--no-progress"]
    for role in ROLES:
        args += ["-m", f"{role}={spec}"]
    return CliRunner().invoke(cli, args)


def _rows_holding(db: Path, text: str) -> dict[str, int]:
    """Rows of every table and view of the store whose text contains ``text``, per relation."""
    con = connect(db, read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        found = {}
        for name in names:
            rows = con.execute(f'SELECT * FROM "{name}"').fetchall()
            hits = sum(text in repr(row) for row in rows)
            if hits:
                found[name] = hits
        return found
    finally:
        con.close()


def test_api_key_is_used_but_never_stored_when_a_server_requires_it(
        key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network_guard: Any) -> None:
    monkeypatch.setenv("UXLOCAL_API_KEY", key)
    monkeypatch.setenv("UXLOCAL_FLUSH_EVERY_S", "0")
    server = FakeOpenAI(api_key=key, leak_key_in_errors=2).start()
    db = tmp_path / "run.duckdb"
    try:
        result = _run(server, db)
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    assert "4 episodes done" in result.output
    assert len(server.authorizations) > 4 and set(server.authorizations) == {f"Bearer {key}"}
    assert key not in result.output

    store_files = sorted(tmp_path.glob("run.duckdb*"))  # the store and any write-ahead log
    assert db in store_files
    for file in store_files:
        assert file.read_bytes().count(key.encode()) == 0, file
    assert _rows_holding(db, key) == {}
    # the server's two echoing errors were stored, with the key taken out
    assert _rows_holding(db, KEY_REDACTED).get("generations") == 2
    assert network_guard.attempts == []  # the local server is loopback


def test_run_without_the_key_stops_with_a_hint_when_the_server_requires_one(
        key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UXLOCAL_API_KEY", raising=False)
    server = FakeOpenAI(api_key=key).start()
    try:
        named = _run(server, tmp_path / "a.duckdb", spec=f"{server.url}#fake-model")
        unnamed = _run(server, tmp_path / "b.duckdb")
    finally:
        server.stop()
    assert named.exit_code == 1 and "401" in named.output and "UXLOCAL_API_KEY" in named.output
    assert unnamed.exit_code == 2 and "401" in unnamed.output and "UXLOCAL_API_KEY" in unnamed.output
    assert set(server.authorizations) == {None}


def test_preset_holding_a_key_is_refused_before_any_request(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "srv.toml").write_text('name = "srv"\nbackend = "openai-http"\n'
                                       'endpoints = ["http://127.0.0.1:9/v1"]\nserved_model = "m"\n'
                                       'engine_args = { api_key = "sk-in-a-file" }\n')
    monkeypatch.setenv("UXLOCAL_PRESETS", str(tmp_path))
    result = CliRunner().invoke(cli, ["run", "selftest", "--db", str(tmp_path / "s.duckdb"), "--no-progress",
                                      *[arg for role in ROLES for arg in ("-m", f"{role}=srv")]])
    assert result.exit_code == 2
    assert "secret" in result.output and "UXLOCAL_API_KEY" in result.output
    assert "sk-in-a-file" not in result.output
    assert not (tmp_path / "s.duckdb").exists()


def test_server_url_with_credentials_is_refused_without_echoing_them(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "selftest", "--db", str(tmp_path / "s.duckdb"), "--no-progress",
                                      *[arg for role in ROLES
                                        for arg in ("-m", f"{role}=http://me:hunter2@127.0.0.1:9/v1#m")]])
    assert result.exit_code == 2 and "credentials" in result.output and "hunter2" not in result.output
    assert not (tmp_path / "s.duckdb").exists()
