"""A demo-shaped store for the report and viewer tests, built with scripted engines (no model).

Each suite runs through ``run_suite`` with its own demo-sized settings, the way ``uxlocal demo``
runs them, but with ``FakeEngine`` scripts in every seat: UXBench (T1/T2/T3 on the bundled
samples), PALATE (two candidates, two users), and tau2 (our bundled sample domain ``homenet``, so
every clone builds the same store, with or without ``../shared``). Two tau2 runs play different
user proxies at different prices, and UFS grading verdicts are written by hand onto their
episodes, so the UserProxyBench section has a frontier and violation families to draw.

Imported by ``tests/unit/report`` and ``tests/browser`` (``tests/`` is on ``sys.path`` because of
``tests/conftest.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from palate_script import respond

from uxlocal.config import RunConfig
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.tau2.layout import SAMPLE_DATA, SAMPLE_DOMAIN

FAMILIES = ("premature_disclosure", "groundedness", "goal_deviation", "missed_information")


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


# --- UXBench -------------------------------------------------------------------------------------


def _uxbench_script(prepared: PreparedRequest) -> Any:
    """Labels and probabilities from the prompt hash; 1 in 9 label calls cut off (invalid)."""
    constraint = prepared.request.constraint
    h = _digest(prepared.prompt)
    if isinstance(constraint, Choice):
        good, bad = constraint.labels
        if h % 9 == 0:
            return {"text": "", "finish_reason": "length"}
        p = (h % 1000) / 1000
        return {"text": good if p >= 0.5 else bad, "label_probs": {good: p, bad: 1 - p}}
    if isinstance(constraint, JsonSchema):
        return json.dumps({"reasoning": "short", "verdict": "good" if h % 2 else "bad"})
    return "" if h % 6 == 0 else f"Sure, here is reply {h % 97}."


def _uxbench(db: Path) -> str:
    engines = {
        "judge": FakeEngine(_uxbench_script, identity="fake-judge-7b"),
        "candidate": FakeEngine(_uxbench_script, identity="fake-candidate-1b"),
    }
    run = RunConfig(
        suite="uxbench",
        suite_config={"bootstrap": 200, "max_tokens": 48},
        limit=16,
        db=str(db),
        progress=False,
    )
    return run_suite(run, pool=ModelPool.from_engines(engines)).run_id


# --- PALATE --------------------------------------------------------------------------------------


def _palate(db: Path) -> str:
    engine = FakeEngine(respond, identity="fake-palate")
    pool = ModelPool.from_engines(
        {"candidate:A": engine, "candidate:B": engine, "user": engine, "judge": engine}
    )
    config = {
        "candidates": "A=fake,B=fake",
        "users": "u1,u3",
        "panel_cards": 3,
        "max_turns": 4,
        "heldout_sessions": 2,
        "realism_turns": 2,
    }
    run = RunConfig(suite="palate", suite_config=config, db=str(db), progress=False)
    return run_suite(run, pool=pool).run_id


# --- tau2 and UFS --------------------------------------------------------------------------------


def _tau2_script(prepared: PreparedRequest) -> str:
    """Agent: one lookup, then a reply; user: one question, then stop; judge: met."""
    request = prepared.request
    chat = request.messages
    if request.role == "judge":
        return json.dumps({"justification": "seen", "met": True})
    if request.role == "user":
        text = "###STOP###" if len(chat) > 3 else "Can you help me with my order?"
        return json.dumps({"message": text}) if request.constraint is not None else text
    if not any(m["content"].startswith("Tool result") for m in chat):
        return json.dumps({"tool": "list_plans", "arguments": {}})
    return json.dumps({"message": "Here you go. Anything else?"})


def _tau2(db: Path, proxy: str, price: float) -> str:
    engines = {role: FakeEngine(_tau2_script, identity=f"fake-{role}-{proxy}") for role in ("agent", "judge")}
    engines["user"] = FakeEngine(_tau2_script, identity=f"fake-user-{proxy}")
    for role, engine in engines.items():
        engine.name = proxy if role == "user" else f"fake-{role}"  # type: ignore[attr-defined]
    pool = ModelPool.from_engines(engines)
    for slot in pool.slots.values():
        slot.model = slot.model.model_copy(
            update={"price_input_per_mtok": price, "price_output_per_mtok": 2 * price}
        )
    run = RunConfig(
        suite="tau2",
        suite_config={"tau2_data": str(SAMPLE_DATA), "domain": SAMPLE_DOMAIN, "max_steps": 8},
        limit=4,
        db=str(db),
        progress=False,
    )
    return run_suite(run, pool=pool).run_id


def _ufs_verdicts(db: Path, run_ids: list[str]) -> None:
    """One UFS verdict per (episode, family), as the grader writes them; some fail, one is invalid."""
    con = connect(db)
    try:
        episodes = con.execute(
            "SELECT run_id, episode_id, n_turns FROM episodes WHERE run_id IN "
            f"({', '.join('?' * len(run_ids))}) ORDER BY ALL",
            run_ids,
        ).fetchall()
        rows = []
        seen: dict[str, int] = {}
        for run_id, episode_id, n_turns in episodes:
            n = seen[run_id] = seen.get(run_id, -1) + 1  # position within its run
            for k, family in enumerate(FAMILIES):
                # the cheap proxy (first run) breaks more rules than the dear one
                failed = (
                    (k == 0 and n % 2 == 0) or (n, k) == (2, 2) if run_id == run_ids[0] else (n, k) == (0, 1)
                )
                valid = not (n == 1 and k == 3)
                evidence = [min(1 + k, max(0, (n_turns or 1) - 1))]
                value = {
                    "criteria_set": "demo",
                    "criterion_id": f"c{k}",
                    "family": family,
                    "mode": f"{family}_m",
                    "applicable": True,
                    "passed": not failed,
                    "evidence_turns": evidence,
                }
                rows.append(
                    [
                        run_id,
                        episode_id,
                        None,
                        f"ufs:c{k}",
                        "judge",
                        "fake-ufs-judge",
                        ("fail" if failed else "pass") if valid else "invalid",
                        None if not valid else float(not failed),
                        valid,
                        json.dumps(value),
                        f"The user {'broke' if failed else 'kept'} the {family} rule.",
                        None,
                    ]
                )
        con.executemany(
            "INSERT INTO verdicts (run_id, episode_id, item_id, name, judge_role, judge_model, label, "
            "score, valid, value, rationale, request_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    finally:
        con.close()


def build_demo_store(db: Path) -> dict[str, Any]:
    """Write every suite the tests can run into ``db``; returns the run ids by suite."""
    runs: dict[str, Any] = {"uxbench": _uxbench(db), "palate": _palate(db)}
    tau2 = [_tau2(db, "proxy-small", 0.1), _tau2(db, "proxy-large", 3.0)]
    _ufs_verdicts(db, tau2)
    runs["tau2"] = tau2
    return runs


_CACHE: dict[str, Any] = {}


def shared_demo_store(tmp_path_factory: Any) -> tuple[Path, dict[str, Any]]:
    """Return the demo-shaped store, built once per pytest session (unit and browser tests share it)."""
    if "store" not in _CACHE:
        folder = tmp_path_factory.mktemp("report-store")
        previous = os.environ.get("UXLOCAL_HOME")
        os.environ["UXLOCAL_HOME"] = str(folder / "home")
        try:
            runs = build_demo_store(folder / "demo.duckdb")
        finally:
            if previous is None:
                os.environ.pop("UXLOCAL_HOME", None)
            else:
                os.environ["UXLOCAL_HOME"] = previous
        _CACHE["store"] = (folder / "demo.duckdb", runs)
    return _CACHE["store"]  # type: ignore[no-any-return]


def shared_demo_report(tmp_path_factory: Any) -> Any:
    """Return the full ``Report`` (figures drawn) of the shared store, built once per session."""
    if "report" not in _CACHE:
        from uxlocal.report import build_report

        db, _ = shared_demo_store(tmp_path_factory)
        con = connect(db, read_only=True)
        try:
            _CACHE["report"] = build_report(con, db=str(db))
        finally:
            con.close()
    return _CACHE["report"]


EXPECTED_FIGURES = {
    "uxbench": {"uxbench-leaderboard", "uxbench-reliability", "uxbench-dimensions"},
    "tau2": {"tau2-reward", "tau2-pass-k"},
    "ufs": {"ufs-frontier", "ufs-families"},
    "palate": {"palate-heatmap", "palate-agreement", "palate-axes"},
}
"""Every plot the demo-shaped store must produce, by section."""


def expected_figures(runs: dict[str, Any]) -> dict[str, set[str]]:
    """``EXPECTED_FIGURES`` for the sections this store holds runs of (all of them)."""
    return {k: v for k, v in EXPECTED_FIGURES.items() if k in runs or (k == "ufs" and "tau2" in runs)}
