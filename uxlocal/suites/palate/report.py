"""PALATE's result tables, read from ``suites/palate/views.sql`` (intervals and tau from ``agreement.py``).

Layer contract: reads a store connection, returns ``ReportTable``s; writes nothing.
The three axes are separate tables on purpose: the spec forbids merging them into one ranking.
"""

from __future__ import annotations

from typing import Any

from uxlocal.reportkit.model import ReportTable
from uxlocal.store.db import query
from uxlocal.suites.palate.agreement import agreement_table, realism_table

SCORER_ORDER = {"general": 0, "personal": 1, "personal_noreact": 2}


def _rows(con: Any, sql: str, run_id: str) -> list[dict[str, Any]]:
    cols, rows = query(con, sql, [run_id])
    return [dict(zip(cols, r, strict=True)) for r in rows]


def _fmt(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _ci(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:.2f}, {high:.2f}]"


def report_tables(con: Any, run_id: str) -> list[ReportTable]:
    """Every PALATE table that has rows for this run."""
    tables = [
        _axis1(con, run_id),
        _axis2(con, run_id),
        *_axis3(con, run_id),
        _behaviour(con, run_id),
        _agreement(con, run_id),
        _realism(con, run_id),
        _rubrics(con, run_id),
    ]
    return [t for t in tables if t.rows]


def _axis1(con: Any, run_id: str) -> ReportTable:
    rows = _rows(
        con, "SELECT * FROM palate_turn_quality WHERE run_id = ? ORDER BY candidate, simulator", run_id
    )
    return ReportTable(
        "PALATE axis 1: generic turn quality (general rubric per reply, 1-5)",
        ["candidate", "simulator", "replies scored", "invalid", "turn quality"],
        [
            (r["candidate"], r["simulator"], r["turns_scored"], r["turns_invalid"], _fmt(r["turn_quality"]))
            for r in rows
        ],
        "mean of the five general criteria over every candidate reply",
    )


def _axis2(con: Any, run_id: str) -> ReportTable:
    rows = _rows(
        con, "SELECT * FROM palate_session_capability WHERE run_id = ? ORDER BY candidate, simulator", run_id
    )
    return ReportTable(
        "PALATE axis 2: session capability (session rubric, 1-5)",
        [
            "candidate",
            "simulator",
            "sessions",
            "scored",
            "session score",
            "mean replies",
            "quit rate",
            "ended early",
        ],
        [
            (
                r["candidate"],
                r["simulator"],
                r["sessions"],
                r["sessions_scored"],
                _fmt(r["session_capability"]),
                _fmt(r["mean_replies"], 1),
                _fmt(r["quit_rate"]),
                r["ended_early"],
            )
            for r in rows
        ],
        "the judge's overall score of each whole session; reported apart from axes 1 and 3",
    )


def _axis3(con: Any, run_id: str) -> list[ReportTable]:
    rows = _rows(
        con,
        "SELECT * FROM palate_user_experience WHERE run_id = ? ORDER BY simulator, user_id, candidate",
        run_id,
    )
    tables = []
    for simulator in sorted({r["simulator"] for r in rows}):
        cells = [r for r in rows if r["simulator"] == simulator]
        candidates = sorted({r["candidate"] for r in cells})
        matrix = []
        for user in sorted({r["user_id"] for r in cells}):
            by_candidate = {r["candidate"]: r for r in cells if r["user_id"] == user}
            matrix.append((user, *(personal_cell(by_candidate.get(c)) for c in candidates)))
        tables.append(
            ReportTable(
                f"PALATE axis 3: per-user experience, user x candidate ({simulator} simulator)",
                ["user", *candidates],
                matrix,
                "personalized score 1-5 (#rank within the user); each user's own induced rubric, "
                "with the simulator's next turn as evidence; no pooled score",
            )
        )
    return tables


def personal_cell(row: dict[str, Any] | None) -> str:
    """One user x candidate cell: "score (#rank within the user)", empty when not scored.

    The table and the report's heat map both print this (the heat map marks an empty cell "-").
    """
    if row is None or row["personal_score"] is None:
        return ""
    return f"{row['personal_score']:.2f} (#{row['user_rank']})"


def _behaviour(con: Any, run_id: str) -> ReportTable:
    rows = _rows(con, "SELECT * FROM palate_behaviour WHERE run_id = ? ORDER BY candidate, simulator", run_id)
    return ReportTable(
        "PALATE behaviour: how sessions ended and how the simulated users reacted",
        [
            "candidate",
            "sim",
            "sessions",
            "quit",
            "cap",
            "early",
            "user turns",
            "continue",
            "corr/rep",
            "new topic",
        ],
        [
            (
                r["candidate"],
                r["simulator"],
                r["sessions"],
                r["user_quit"],
                r["turn_cap"],
                r["ended_early"],
                _fmt(r["mean_user_turns"], 1),
                _fmt(r["continue_share"]),
                _fmt(r["correct_or_repeat_share"]),
                _fmt(r["change_topic_share"]),
            )
            for r in rows
        ],
    )


def _agreement(con: Any, run_id: str) -> ReportTable:
    turns = _rows(
        con,
        "SELECT scorer, user_id, session_id, human_rating, score FROM palate_agreement_turns "
        "WHERE run_id = ? ORDER BY ALL",
        run_id,
    )
    table = agreement_table(
        [(t["scorer"], t["user_id"], t["session_id"], t["human_rating"], t["score"]) for t in turns]
    )
    table.sort(key=lambda r: (SCORER_ORDER.get(r.scorer, 9), r.user_id == "macro", r.user_id))
    return ReportTable(
        "PALATE rubric agreement with held-out user ratings (within-session pairwise)",
        ["scorer", "user", "sessions", "pairs", "agreement", "95% CI", "tie share", "Kendall tau"],
        [
            (
                r.scorer,
                r.user_id,
                r.sessions,
                r.pairs,
                _fmt(r.agreement, 3),
                _ci(r.ci_low, r.ci_high),
                _fmt(r.tie_share),
                _fmt(r.kendall_tau, 3),
            )
            for r in table
        ],
        "chance = 0.500; scorer ties count half; CIs resample whole sessions; macro weighs users equally",
    )


def _realism(con: Any, run_id: str) -> ReportTable:
    trials = _rows(
        con,
        "SELECT simulator, user_id, valid, value->>'$.picked_simulated' AS picked, score "
        "FROM palate_verdicts WHERE run_id = ? AND kind = 'realism' AND track = 'realism' "
        "ORDER BY ALL",
        run_id,
    )
    rows = realism_table(
        [
            (
                t["simulator"],
                t["user_id"],
                None if not t["valid"] or t["picked"] is None else t["picked"] == "true",
                t["score"],
            )
            for t in trials
        ]
    )
    rows.sort(key=lambda r: (r.simulator, r.user_id == "macro", r.user_id))
    return ReportTable(
        "PALATE simulator realism (2AFC: judge picks which next user turn is real)",
        ["simulator", "user", "trials", "picked simulated", "95% CI", "mean p(simulated)"],
        [
            (
                r.simulator,
                r.user_id,
                r.trials,
                _fmt(r.picked_simulated, 3),
                _ci(r.ci_low, r.ci_high),
                _fmt(r.p_simulated, 3),
            )
            for r in rows
        ],
        "0.5 = the judge cannot tell simulated from real; lower = the simulator is caught",
    )


def _rubrics(con: Any, run_id: str) -> ReportTable:
    rows = _rows(con, "SELECT * FROM palate_rubrics WHERE run_id = ? ORDER BY user_id", run_id)
    return ReportTable(
        "PALATE personalized rubrics",
        ["user", "version", "source", "judge"],
        [(r["user_id"], r["rubric_version"], r["source"], r["judge_model"]) for r in rows],
        f"read a rubric: uxlocal query --db {_db_path(con)} "
        "\"select criteria from palate_rubrics where user_id = 'u1'\"",
    )


def _db_path(con: Any) -> str:
    """Return the file behind ``con`` (for copy-paste hints), or ``DB`` when it has none (in-memory)."""
    row = con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    return row[0] if row and row[0] else "DB"
