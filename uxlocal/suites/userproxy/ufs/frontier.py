"""The cost-fidelity frontier: which proxies are Pareto-efficient (cheaper or more faithful).

Spec userproxybench.md §A.7.1 and §A.7.3. A proxy is a point (cost per simulation, Mean UFS);
lower cost and higher UFS are better. Proxy *q* dominates *p* when it costs no more, scores no
lower, and is strictly better on at least one of the two; a point nobody dominates is efficient.
Identical points do not dominate each other. The same code serves the second axis (engine
seconds per simulation) by passing those values as ``cost``.

``cheapest_at(points, q)`` is the paper's U*(q) = argmin cost subject to UFS >= q.

``TABLE_1`` holds the paper's published per-proxy numbers (facts, §A.7.1) so the frontier can be
checked against the paper's stated dominated set and frontier order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """One proxy on the plane."""

    name: str
    cost: float
    """Lower is better: USD per simulation (or engine seconds per simulation)."""
    fidelity: float
    """Higher is better: Mean UFS."""


@dataclass(frozen=True)
class FrontierRow:
    """A point with its place on the frontier."""

    point: Point
    dominated_by: tuple[str, ...]
    rank: int | None
    """1-based position along the efficient frontier by increasing cost; None when dominated."""

    @property
    def dominated(self) -> bool:
        """Whether some other proxy is at least as good on both axes and better on one."""
        return bool(self.dominated_by)


def dominates(q: Point, p: Point) -> bool:
    """Whether ``q`` dominates ``p`` (cost <=, fidelity >=, one strictly)."""
    return q.cost <= p.cost and q.fidelity >= p.fidelity and (q.cost < p.cost or q.fidelity > p.fidelity)


def pareto(points: Iterable[Point]) -> list[FrontierRow]:
    """Every point with its dominators, sorted by cost then name; efficient points are ranked."""
    pts = sorted(points, key=lambda p: (p.cost, -p.fidelity, p.name))
    names = [p.name for p in pts]
    if len(set(names)) != len(names):
        raise ValueError("proxy names must be unique on one frontier")
    rows, rank = [], 0
    for p in pts:
        by = tuple(q.name for q in pts if q is not p and dominates(q, p))
        if not by:
            rank += 1
        rows.append(FrontierRow(p, by, None if by else rank))
    return rows


def efficient(points: Iterable[Point]) -> list[Point]:
    """Return the efficient frontier in increasing cost (and increasing fidelity)."""
    return [r.point for r in pareto(points) if not r.dominated]


def cheapest_at(points: Iterable[Point], q: float) -> Point | None:
    """U*(q): the cheapest proxy whose fidelity is at least ``q`` (None if none reaches it)."""
    eligible = [p for p in points if p.fidelity >= q]
    return min(eligible, key=lambda p: (p.cost, -p.fidelity, p.name)) if eligible else None


@dataclass(frozen=True)
class Table1Row:
    """One row of the paper's Table 1 (per proxy, means over its four domains)."""

    proxy: str
    hosting: str
    cost_per_sim: float
    reward: float
    mean_ufs: float
    prompt_tokens_per_sim: int
    completion_tokens_per_sim: int


TABLE_1: tuple[Table1Row, ...] = (
    Table1Row("Sonnet-4-6", "hosted", 0.1841, 0.784, 0.778, 57888, 665),
    Table1Row("Gemini-3.5-Flash", "hosted", 0.0558, 0.796, 0.864, 53111, 2026),
    Table1Row("Qwen3.6-35B", "open", 0.0249, 0.779, 0.612, 47590, 7524),
    Table1Row("Gemma-31B", "open", 0.0175, 0.737, 0.845, 43696, 461),
    Table1Row("Gemma-26B", "open", 0.0147, 0.720, 0.759, 36411, 562),
    Table1Row("GPT-5.4-mini", "hosted", 0.0144, 0.644, 0.599, 26050, 1587),
    Table1Row("GPT-4.1-mini", "hosted", 0.0063, 0.720, 0.752, 29574, 449),
)
"""The paper's Table 1 (spec §A.7.1): cost per simulation (USD), agent reward, Mean UFS, tokens."""


def table1_points() -> list[Point]:
    """Table 1 as frontier points (cost per simulation, Mean UFS)."""
    return [Point(r.proxy, r.cost_per_sim, r.mean_ufs) for r in TABLE_1]


def frontier_table(rows: Sequence[FrontierRow]) -> tuple[list[str], list[tuple[object, ...]]]:
    """Columns and rows for a terminal table of the frontier."""
    columns = ["proxy", "cost", "mean_ufs", "frontier_rank", "dominated_by"]
    return columns, [
        (r.point.name, r.point.cost, r.point.fidelity, r.rank, ", ".join(r.dominated_by)) for r in rows
    ]
