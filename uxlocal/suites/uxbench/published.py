"""The published leaderboard tables of a UXBench checkout, with a run's own rows set among them.

Layer contract: reads ``experiments/results/task1_leaderboard.md`` and ``task2_leaderboard.json``
from the checkout a run used (``--upstream``) and returns report tables; the run's numbers come
in as arguments. Nothing is written, nothing of the files is kept beyond the report.

The files' layouts are not pinned by a spec, so the readers are deliberately forgiving: the T1
table is the first Markdown table with Good, Bad and Avg columns; the T2 file is a list of
records (or an object holding one, or an object keyed by model) with a model name and a Good
number (a Recovery number, when present, becomes a T3 column). A file that does not fit yields no
table and a note, never an error: the run's own tables stand without it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uxlocal.reportkit.model import ReportTable

T1_FILE = "experiments/results/task1_leaderboard.md"
T2_FILE = "experiments/results/task2_leaderboard.json"
LOCAL_MARK = "local run"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class LocalRow:
    """One of the run's rows: the model's name, values by column key, intervals by column key."""

    model: str
    values: dict[str, float | None]
    intervals: dict[str, str | None]


def _number(cell: Any) -> float | None:
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return float(cell)
    match = _NUMBER.search(str(cell).replace("*", ""))
    return float(match.group()) if match else None


def _cell(value: float | None, interval: str | None) -> str:
    if value is None:
        return ""
    return f"{value:.1f} {interval}" if interval else f"{value:.1f}"


def _markdown_tables(text: str) -> list[list[list[str]]]:
    """Every pipe table in a Markdown text, rows as cell lists, the separator row dropped."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if not all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def _column(header: list[str], *words: str) -> int | None:
    for index, name in enumerate(header):
        if any(w in name.lower() for w in words):
            return index
    return None


def t1_table(root: Path, local: LocalRow) -> ReportTable | None:
    """Return the published T1 table with the run's row placed by its Avg-Acc; None when unreadable."""
    path = root / T1_FILE
    if not path.is_file():
        return None
    for table in _markdown_tables(path.read_text(encoding="utf-8", errors="replace")):
        header, body = table[0], table[1:]
        cols = {k: _column(header, k) for k in ("good", "bad", "avg")}
        model = _column(header, "model", "judge", "name")
        if None in cols.values() or model is None or not body:
            continue
        mine = [""] * len(header)
        mine[model] = f"**{local.model}** ({LOCAL_MARK}, uxlocal)"
        for key, index in cols.items():
            mine[index] = _cell(local.values.get(key), local.intervals.get(key))  # type: ignore[index]
        rows = _place(body, mine, cols["avg"], local.values.get("avg"))  # type: ignore[arg-type]
        return ReportTable(f"UXBench T1 leaderboard as published, with this run ({T1_FILE})", header, rows,
                           f"published rows from {path}; the {LOCAL_MARK} row is this run's, with its 95% "
                           "bootstrap intervals")
    return None


def _place(body: list[list[str]], mine: list[str], index: int, value: float | None) -> list[tuple[str, ...]]:
    """Insert ``mine`` before the first published row whose value at ``index`` is lower."""
    rows = [tuple(r + [""] * (len(mine) - len(r))) for r in body]
    at = len(rows)
    if value is not None:
        at = next((k for k, r in enumerate(rows) if (_number(r[index]) or -1) < value), len(rows))
    return [*rows[:at], tuple(mine), *rows[at:]]


def _records(data: Any) -> list[dict[str, Any]]:
    """Return the records of a T2 leaderboard file in any of the shapes the module docstring names."""
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    if not isinstance(data, dict):
        return []
    for value in data.values():
        if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            return value
    if data and all(isinstance(v, dict) for v in data.values()):
        return [{"model": k, **v} for k, v in data.items()]
    if data and all(_number(v) is not None for v in data.values()):
        return [{"model": k, "good": v} for k, v in data.items()]
    return []


def _key(record: dict[str, Any], *words: str, avoid: tuple[str, ...] = ()) -> str | None:
    for key, value in record.items():
        name = key.lower()
        if any(w in name for w in words) and not any(a in name for a in avoid) and _number(value) is not None:
            return key
    return None


def t2_table(root: Path, t2: LocalRow | None, t3: LocalRow | None) -> ReportTable | None:
    """Return the published T2 (and T3) numbers with the run's candidate placed by Good %, or None."""
    path = root / T2_FILE
    if not path.is_file() or (t2 is None and t3 is None):
        return None
    try:
        records = _records(json.loads(path.read_text(encoding="utf-8")))
    except ValueError:
        return None
    if not records:
        return None
    first = records[0]
    name = next((k for k in ("model", "name", "model_name", "display_name") if k in first), None)
    good = _key(first, "good", avoid=("n_good", "count", "bad", "score"))
    if name is None or good is None:
        return None
    recovery = _key(first, "recovery", "task3", "t3")
    header = ["model", "T2 Good %"] + (["T3 Recovery %"] if recovery else [])
    body = [[str(r.get(name, "")), _cell(_number(r.get(good)), None)]
            + ([_cell(_number(r.get(recovery)), None)] if recovery else []) for r in records]
    body.sort(key=lambda r: -(_number(r[1]) or -1))
    local = t2 or t3
    assert local is not None
    mine = [f"**{local.model}** ({LOCAL_MARK}, uxlocal)",
            _cell(t2.values.get("rate"), t2.intervals.get("rate")) if t2 else ""]
    if recovery:
        mine.append(_cell(t3.values.get("rate"), t3.intervals.get("rate")) if t3 else "")
    rows = _place(body, mine, 1, t2.values.get("rate") if t2 else None)
    return ReportTable(f"UXBench T2/T3 leaderboard as published, with this run ({T2_FILE})", header, rows,
                       f"published rows from {path}; the {LOCAL_MARK} row is this run's candidate with 95% "
                       "bootstrap intervals (comparable only with UXBench's GRM as the judge)")
