"""Learned vs prompted judge: the two held-out runs of ``uxlocal judge train``, side by side.

Layer contract: reads the judge views (read-only) and computes; no writes.

``judge train`` judges the adapter's held-out rows twice, as two ``uxlocal judge`` runs: the base
prompted as it is, then the base with ``--judge-adapter``. Both runs carry the held-out
selection's hash (``prompt_hashes["judge/heldout"]``); the adapter's run also carries its weights
hash (``adapter/judge/...``). Runs with the same selection, input, rubric and base model pair up
here, for ``judge train``'s printout and for ``uxlocal report``'s "learned vs prompted" table:
each statistic for both arms, the difference, and a 95% paired bootstrap interval of it.
"""

from __future__ import annotations

import json
from typing import Any

from uxlocal.reportkit.model import ReportTable

COMPARISON_COLUMNS = ["held-out statistic", "base", "adapter", "adapter - base", "95% interval"]
Intervals = dict[str, tuple[float | None, float | None]]


def paired(base_rows: list[dict[str, Any]],
           adapter_rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the rows of the items both arms judged validly, in the same item order."""
    ids = {r["item_id"] for r in base_rows} & {r["item_id"] for r in adapter_rows}
    return [r for r in base_rows if r["item_id"] in ids], [r for r in adapter_rows if r["item_id"] in ids]


def agreement(kind: str, rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Return the statistics ``uxlocal judge`` reports for this rubric kind, over all ``rows``."""
    import numpy as np

    from uxlocal.suites.judge.report import LABEL_STATS, PAIR_STATS, SCORE_STATS, agreement_statistics

    names = {"label": LABEL_STATS, "likert": SCORE_STATS, "pairwise": PAIR_STATS}[kind]
    functions = agreement_statistics(kind, rows)
    return {name: functions[name](np.arange(len(rows))) for name in names}


def difference_intervals(kind: str, base_rows: list[dict[str, Any]], adapter_rows: list[dict[str, Any]], *,
                         n_resamples: int = 1000, seed: int = 0) -> Intervals:
    """95% paired bootstrap interval of (adapter - base) for every agreement statistic.

    Both arms are resampled with the same item indices. Items, not groups, are drawn: the
    held-out part is a few whole groups by design, too few clusters for a cluster bootstrap.
    """
    from uxlocal import stats
    from uxlocal.suites.judge.report import agreement_statistics

    before, after = agreement_statistics(kind, base_rows), agreement_statistics(kind, adapter_rows)
    out = {}
    for name in agreement(kind, base_rows):
        def diff(idx: Any, name: str = name) -> float | None:
            a, b = after[name](idx), before[name](idx)
            return None if a is None or b is None else a - b
        interval = stats.bootstrap(diff, len(base_rows), n_resamples=n_resamples, seed=seed)
        out[name] = (interval.low, interval.high)
    return out


def comparison_rows(base: dict[str, Any], adapter: dict[str, Any],
                    intervals: Intervals) -> list[tuple[str | None, ...]]:
    """One row per statistic (``COMPARISON_COLUMNS``), values to 3 decimals."""
    def fmt(value: float | None, sign: bool = False) -> str | None:
        return None if value is None else (f"{value:+.3f}" if sign else f"{value:.3f}")
    rows: list[tuple[str | None, ...]] = []
    for name, before in base.items():
        after = adapter.get(name)
        diff = None if before is None or after is None else after - before
        low, high = intervals.get(name, (None, None))
        interval = None if low is None or high is None else f"[{low:+.3f}, {high:+.3f}]"
        rows.append((name, fmt(before), fmt(after), fmt(diff, sign=True), interval))
    return rows


def _arm_key(config: dict[str, Any]) -> tuple[str, ...] | None:
    """Return what both arms share (held-out selection, input, rubric, prompts, base model), or None."""
    hashes = config.get("prompt_hashes", {})
    if "judge/heldout" not in hashes:
        return None
    shared = sorted((k, v) for k, v in hashes.items() if not k.startswith("adapter/"))
    return (json.dumps(shared), str(config.get("models", {}).get("judge")))


def arm_pairs(con: Any, run_ids: list[str]) -> list[tuple[str, str]]:
    """(prompted run, learned run) pairs among ``run_ids``: held-out runs of one adapter's training."""
    arms: dict[tuple[str, ...], dict[str, str]] = {}
    placeholders = ", ".join("?" for _ in run_ids)
    for run_id, raw in con.execute(f"SELECT run_id, config FROM runs WHERE suite = 'judge' AND run_id IN "
                                   f"({placeholders}) ORDER BY started_at", list(run_ids)).fetchall():
        config = json.loads(raw) if isinstance(raw, str) else dict(raw)
        key = _arm_key(config)
        if key is None:
            continue
        learned = any(k.startswith("adapter/judge/") for k in config.get("prompt_hashes", {}))
        arms.setdefault(key, {})["learned" if learned else "prompted"] = run_id
    return [(a["prompted"], a["learned"]) for a in arms.values() if {"prompted", "learned"} <= set(a)]


def learned_vs_prompted(con: Any, run_ids: list[str], *, n_resamples: int = 1000) -> list[ReportTable]:
    """One table per (prompted, learned) pair of held-out runs among ``run_ids``."""
    from uxlocal.suites.judge.report import verdict_rows

    tables = []
    for prompted, learned in arm_pairs(con, run_ids):
        kind, criterion = con.execute("SELECT kind, criterion FROM judge_verdicts WHERE run_id = ? "
                                      "ORDER BY criterion, kind LIMIT 1",
                                      [learned]).fetchone() or (None, None)
        if kind is None:
            continue
        base_rows, adapter_rows = paired(verdict_rows(con, prompted, kind, criterion, "judge"),
                                         verdict_rows(con, learned, kind, criterion, "judge"))
        intervals = difference_intervals(kind, base_rows, adapter_rows, n_resamples=n_resamples)
        rows = comparison_rows(agreement(kind, base_rows), agreement(kind, adapter_rows), intervals)
        tables.append(
            ReportTable(
                "Learned vs prompted judge (held-out rows)",
                COMPARISON_COLUMNS,
                rows,
                f"{len(base_rows)} held-out items judged by both; base = {prompted}, adapter = "
                f"{learned}; 95% paired bootstrap of the difference, {n_resamples} resamples",
            )
        )
    return tables
