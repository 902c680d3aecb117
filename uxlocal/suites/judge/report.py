"""Result tables of a judge run: verdict counts, throughput, agreement with humans, position bias.

Layer contract: reads the judge views, computes intervals with ``uxlocal.stats``; no writes.
Point values come from the SQL views (what ``uxlocal query`` shows); ``agreement_statistics``
is the Python reference for the same numbers and supplies the bootstrap intervals, resampling
whole groups when the run has ``--group-col`` (else items, or conversations for per-turn units).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from uxlocal import stats
from uxlocal.reportkit.model import ReportTable
from uxlocal.store.db import query
from uxlocal.suites.judge.column_fill import ColumnFill
from uxlocal.suites.judge.label_tallies import LabelTallies

Statistic = Callable[[np.ndarray], float | None]

LABEL_STATS = ("accuracy", "kappa", "macro_f1", "auroc", "ece")
SCORE_STATS = ("spearman", "kendall_tau_b", "pearson", "qwk", "acc_eq")
PAIR_STATS = ("agreement", "agreement_with_ties", "flip_rate")


def _rows(con: Any, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cols, rows = query(con, sql, params)
    return [dict(zip(cols, r, strict=True)) for r in rows]


class VerdictColumns:
    """Verdict rows as columns (name -> array), each row's values the same as in a row dict.

    A million verdicts as dicts took ~1.8 KB each; as columns the report holds a few arrays.
    A bootstrap draw is one numpy take per column, not a Python loop over rows.
    """

    def __init__(self, arrays: dict[str, np.ndarray], n: int) -> None:
        self.arrays = arrays
        self.n = n
        self.coded: dict[tuple[str, ...], dict[Any, int]] = {}
        """The codes of the columns already coded together (``code``)."""
        self.singletons = False
        """Every row is its own cluster: ``cluster`` is 0..n-1, built only when asked (``clusters``)."""

    @classmethod
    def of_rows(cls, rows: list[dict[str, Any]]) -> "VerdictColumns":
        """Columns of row dicts (every key of the first row)."""
        arrays = {}
        for key in rows[0] if rows else ():
            column = np.empty(len(rows), dtype=object)
            column[:] = [row[key] for row in rows]
            arrays[key] = column
        return cls(arrays, len(rows))

    def _code_arrow(self, keys: tuple[str, ...], values: Any) -> dict[Any, int]:
        """Code ``keys`` from ``values``, an Arrow array of their values one column after the other.

        Arrow numbers the distinct values (null one of them) by first appearance, as ``code`` does.
        """
        import pyarrow.compute as pc

        encoded = pc.dictionary_encode(values, null_encoding="encode")
        indices = encoded.indices.to_numpy()  # int32, no nulls: a view of Arrow's buffer
        for key, part in zip(keys, np.split(indices, len(keys)), strict=True):
            self.arrays[key] = part
        self.coded[keys] = {value: code for code, value in enumerate(encoded.dictionary.to_pylist())}
        return self.coded[keys]

    def __len__(self) -> int:
        return self.n

    def first(self, key: str) -> Any:
        """Return the first row's value of ``key`` (None without rows)."""
        head = self.column(key)[:1].tolist()
        return head[0] if head else None

    def column(self, key: str) -> np.ndarray:
        """Return the array of ``key``; an empty one when there are no rows (row dicts then name no keys)."""
        if key == "cluster" and self.singletons:
            return np.arange(self.n)
        return self.arrays[key] if self.n or key in self.arrays else np.empty(0, dtype=object)

    def clusters(self) -> np.ndarray | None:
        """Return what the bootstrap resamples: the cluster codes, or None.

        None when every row is its own cluster (the same draws as codes 0..n-1, without their 8 MB a
        million rows).
        """
        return None if self.singletons else self.column("cluster")

    def values(self, key: str) -> list[Any]:
        """Every row's value of ``key`` as Python values, in row order."""
        return list(self.column(key).tolist())

    def take(self, key: str, idx: np.ndarray) -> list[Any]:
        """``[rows[i][key] for i in idx]``, the same values in the same order."""
        return list(self.column(key)[idx].tolist())

    def code(self, *keys: str) -> dict[Any, int]:
        """Replace the values of ``keys`` by int32 codes and return the codes.

        One shared code per distinct value, numbered by first appearance (``keys[0]``'s rows first).
        Coded once: a second call (or ``of_arrow(shared=keys)``) returns the same codes.

        Label statistics depend only on which values are equal, so they come out the same on the
        codes, and sklearn checks integer arrays far faster than arrays of strings (per resample).
        """
        import pyarrow as pa

        if keys in self.coded:
            return self.coded[keys]
        return self._code_arrow(keys, pa.array(np.concatenate([self.arrays[key] for key in keys])))


Verdicts = VerdictColumns | list[dict[str, Any]]
"""What the statistics read: columns, or row dicts (``verdict_rows``, ``compare.paired``)."""


def _columns(rows: Verdicts) -> VerdictColumns:
    return rows if isinstance(rows, VerdictColumns) else VerdictColumns.of_rows(rows)


def _label_stats(cols: VerdictColumns) -> dict[str, Statistic]:
    positive_label = cols.first("positive")  # None without rows
    binary = positive_label is not None
    positive = cols.code("human_label", "label").get(positive_label, -1) if cols.n else -1
    human, label = cols.column("human_label"), cols.column("label")  # int32 codes: one numpy take each
    tallies = LabelTallies(human, label, cols.column("score") if binary else None, positive,
                           cols.column("confidence") if binary else None)
    return {"accuracy": tallies.accuracy, "kappa": tallies.kappa, "macro_f1": tallies.macro_f1,
            "auroc": tallies.auroc, "ece": tallies.ece}


def _score_stats(cols: VerdictColumns) -> dict[str, Statistic]:
    scale = int(cols.first("scale")) if cols.n else 2
    def human_points(idx: np.ndarray) -> list[int]:
        return [max(1, min(int(np.floor(h + 0.5)), scale)) for h in cols.take("human_score", idx)]
    return {
        "spearman": lambda idx: stats.spearman(cols.take("score", idx), cols.take("human_score", idx)),
        "kendall_tau_b": lambda idx: stats.kendall_tau_b(
            cols.take("score", idx), cols.take("human_score", idx)
        ),
        "pearson": lambda idx: stats.pearson(cols.take("score", idx), cols.take("human_score", idx)),
        "qwk": lambda idx: stats.quadratic_weighted_kappa(
            human_points(idx), cols.take("points", idx), list(range(1, scale + 1))
        ),
        "acc_eq": lambda idx: stats.acc_eq(
            cols.take("human_score", idx), cols.take("points", idx), [g or "" for g in cols.take("grp", idx)]
        ),
    }


def _pair_stats(cols: VerdictColumns) -> dict[str, Statistic]:
    label, human, flip = cols.values("label"), cols.values("human_label"), cols.values("flip")
    def mean(values: list[bool]) -> float | None:
        return sum(values) / len(values) if values else None
    return {
        "agreement": lambda idx: mean([label[i] == human[i] for i in idx if human[i] in ("A", "B")]),
        "agreement_with_ties": lambda idx: mean([label[i] == human[i] for i in idx if human[i] is not None]),
        "flip_rate": lambda idx: mean([bool(flip[i]) for i in idx if flip[i] is not None])}


def _verdicts_sql(kind: str, columns: str, *, ordered: bool = True) -> str:
    order = " ORDER BY item_id" if ordered else ""
    if kind == "pairwise":
        return (f"SELECT {columns} FROM judge_verdicts WHERE run_id = ? AND criterion = ? AND judge_role = ? "
                f"AND valid AND status = 'ok'{order}")
    return f"SELECT {columns} FROM judge_scored WHERE run_id = ? AND criterion = ? AND judge_role = ?{order}"


def verdict_rows(con: Any, run_id: str, kind: str, criterion: str, role: str) -> list[dict[str, Any]]:
    """Return the rows the agreement statistics of one (criterion, judge) read, by item id."""
    return _rows(con, _verdicts_sql(kind, "*"), [run_id, criterion, role])


STAT_COLUMNS = {"label": ("label", "human_label", "score", "confidence", "positive"),
                "likert": ("score", "human_score", "points", "scale"),
                "pairwise": ("label", "human_label", "flip")}
"""What the statistics of each rubric kind read of a verdict row (``agreement_statistics``)."""

RUBRIC_COLUMNS = ("positive", "scale")
"""Columns that come from the rubric, the same in every row of a (criterion, judge): ``verdict_columns``
reads their first value once (the statistics read only that) instead of a value per verdict."""

GROUP_COLUMNS = ("grp", "coalesce(grp, source_id) AS cluster")
"""What the table note and the bootstrap's clusters read of a verdict row, of every kind."""


ARROW_BATCH = 100_000
"""Rows per Arrow batch read from DuckDB: the result streams out instead of being materialised
inside DuckDB's capped memory."""


def verdict_columns(con: Any, run_id: str, kind: str, criterion: str, role: str) -> VerdictColumns:
    """Return ``verdict_rows`` as columns, for a report of any size.

    The columns are the kind's ``STAT_COLUMNS`` and ``GROUP_COLUMNS``; ``cluster`` as integer codes;
    for label rubrics ``human_label`` and ``label`` as shared int32 codes, see
    ``VerdictColumns.code``. The rows stream from DuckDB in Arrow batches into numpy arrays
    (``ColumnFill``).

    The rows are put in item-id order here, not by DuckDB: its sort of a million verdict rows
    did not fit a 128 MB cap, while the ids alone sort in Arrow in a fraction of a second (both
    compare bytes; an item id is unique per criterion and judge, so the order is the same).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    params = [run_id, criterion, role]
    constant = [name for name in STAT_COLUMNS[kind] if name in RUBRIC_COLUMNS]
    # distinct hashes are distinct clusters; a hash collision only means the cluster column is read
    # (a GROUP BY of a million cluster strings did not fit a 64 MB cap, their hashes do)
    n, grouped, distinct, *firsts = con.execute(
        "SELECT count(*), coalesce(bool_or(grp IS NOT NULL), false), count(DISTINCT hash(cluster)) = count(*)"
        + "".join(f", first({name})" for name in constant)
        + " FROM ("
        f"{_verdicts_sql(kind, ', '.join(GROUP_COLUMNS + tuple(constant)), ordered=False)})",
        params,
    ).fetchall()[0]
    # only what varies is read: no groups -> no grp column; one verdict per cluster -> no cluster
    # column (the codes by first appearance are then 0..n-1 in item order, what arange gives)
    names = (tuple(name for name in STAT_COLUMNS[kind] if name not in constant) + GROUP_COLUMNS[:1] * grouped
             + GROUP_COLUMNS[1:] * (not distinct) + ("item_id",))
    fill = ColumnFill(n, shared=("human_label", "label") if kind == "label" else (), codes=("cluster",))
    ids = []
    for batch in con.sql(_verdicts_sql(kind, ", ".join(names), ordered=False), params=params).to_arrow_reader(
            ARROW_BATCH):
        ids.append(pa.concat_arrays([batch.column("item_id")]))  # a copy: the batch goes now
        fill.add(batch.drop_columns(["item_id"]))
        del batch
    order = np.asarray(pc.sort_indices(pa.chunked_array(ids, pa.string()))).astype(
        np.int32 if n < 2**31 else np.int64
    )
    del ids
    arrays, coded = fill.finish(order)
    verdicts = VerdictColumns(arrays, n)
    verdicts.coded.update(coded)
    for name, value in zip(constant, firsts, strict=True):
        verdicts.arrays[name] = _repeated(value, n)
    if not grouped:
        verdicts.arrays["grp"] = _repeated(None, n)
    verdicts.singletons = bool(distinct)
    pa.default_memory_pool().release_unused()  # the Arrow batches are gone; give their pages back
    return verdicts


def _repeated(value: Any, n: int) -> np.ndarray:
    """``n`` times ``value`` as a read-only object array of one element (no memory per row)."""
    one = np.empty(1, dtype=object)
    one[0] = value
    return np.broadcast_to(one, (n,))


def agreement_statistics(kind: str, rows: Verdicts) -> dict[str, Statistic]:
    """Return the Python reference of the agreement views: statistic name -> function of row indices."""
    builders = {"label": _label_stats, "likert": _score_stats, "pairwise": _pair_stats}
    return builders[kind](_columns(rows))


def _fmt(value: float | None, digits: int = 3) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _counts_table(con: Any, run_id: str) -> ReportTable | None:
    rows = _rows(
        con, "SELECT * FROM judge_counts WHERE run_id = ? ORDER BY criterion, judge_role, outcome", [run_id]
    )
    if not rows:
        return None
    grouped: dict[tuple[str, str, str], list[str]] = {}
    totals: dict[tuple[str, str, str], int] = {}
    for r in rows:
        key = (r["criterion"], r["judge_role"], r["judge_model"])
        grouped.setdefault(key, []).append(f"{r['outcome']} {r['n']}")
        totals[key] = totals.get(key, 0) + r["n"]
    return ReportTable("Judge verdicts", ["criterion", "judge", "model", "verdicts", "counts"],
                       [(*k, totals[k], ", ".join(v)) for k, v in grouped.items()],
                       "invalid verdicts keep their reason and are never guessed")


def _throughput_table(con: Any, run_id: str) -> ReportTable | None:
    rows = _rows(con, "SELECT t.*, s.prompt_tokens, s.cache_hits, s.generations FROM judge_throughput t "
                      "JOIN run_summary s USING (run_id) WHERE run_id = ?", [run_id])
    if not rows:
        return None
    r = rows[0]
    return ReportTable("Judge throughput (last attempt)",
                       ["verdicts", "wall s", "verdicts/s", "engine calls", "generations", "from cache"],
                       [(r["verdicts"], _fmt(r["wall_s"], 1), _fmt(r["verdicts_per_s"], 2), r["engine_calls"],
                         r["generations"], r["cache_hits"])])


_VIEWS = {"label": ("judge_label_agreement", LABEL_STATS), "likert": ("judge_score_agreement", SCORE_STATS),
          "pairwise": ("judge_pairwise_agreement", PAIR_STATS)}


def _on_index(statistic: Statistic) -> Callable[[Any], float | None]:
    """Return a statistic of row indices as a statistic of a bootstrap draw."""
    return lambda draw: statistic(draw.index)


def _agreement_table(con: Any, run_id: str, kind: str, n_boot: int, seed: int) -> ReportTable | None:
    view, names = _VIEWS[kind]
    points = _rows(con, f"SELECT * FROM {view} WHERE run_id = ? ORDER BY criterion, judge_role", [run_id])
    out = []
    grouped = False
    for p in points:
        rows = verdict_columns(con, run_id, kind, p["criterion"], p["judge_role"])
        grouped = grouped or any(g is not None for g in rows.column("grp"))
        functions = agreement_statistics(kind, rows)
        # one plan and one set of resamples for every statistic (the same draws as one call each)
        intervals = stats.bootstrap_many({name: _on_index(functions[name]) for name in names}, len(rows),
                                         clusters=rows.clusters(), n_resamples=n_boot, seed=seed)
        for name in names:
            iv = intervals[name]
            ci = f"[{iv.low:.3f}, {iv.high:.3f}]" if iv.low is not None and iv.high is not None else None
            out.append((p["criterion"], p["judge_role"], name, _fmt(p.get(name)), ci, p["n"]))
    if not out:
        return None
    note = f"95% percentile bootstrap, {n_boot} resamples of " + ("groups" if grouped else "items")
    return ReportTable(f"Judge agreement with humans ({kind})", ["criterion", "judge", "statistic", "value",
                                                                 "95% CI", "n"], out, note)


def _position_table(con: Any, run_id: str) -> ReportTable | None:
    rows = _rows(
        con,
        "SELECT criterion, judge_role, n, flip_rate, first_position_rate FROM judge_pairwise_agreement "
        "WHERE run_id = ? ORDER BY criterion, judge_role",
        [run_id],
    )
    if not rows:
        return None
    return ReportTable(
        "Judge position bias (pairwise, both orders)",
        ["criterion", "judge", "pairs", "flip rate", "P(first shown wins)"],
        [
            (r["criterion"], r["judge_role"], r["n"], _fmt(r["flip_rate"]), _fmt(r["first_position_rate"]))
            for r in rows
        ],
        "flip = the two orders chose different replies; 0.5 = no position bias",
    )


def _confusion_table(con: Any, run_id: str) -> ReportTable | None:
    rows = _rows(
        con,
        "SELECT * FROM judge_confusion WHERE run_id = ? ORDER BY criterion, judge_role, human, judge",
        [run_id],
    )
    if not rows:
        return None
    cells: dict[tuple[str, str, str], list[str]] = {}
    for r in rows:
        cells.setdefault((r["criterion"], r["judge_role"], r["human"]), []).append(f"{r['judge']} {r['n']}")
    return ReportTable(
        "Judge confusion (human -> judge counts)",
        ["criterion", "judge", "human", "judge said"],
        [(*k, ", ".join(v)) for k, v in cells.items()],
        "likert: human scores mapped to the nearest point; the scatter as counts",
    )


def _reliability_table(con: Any, run_id: str) -> ReportTable | None:
    rows = _rows(
        con, "SELECT * FROM judge_reliability WHERE run_id = ? ORDER BY criterion, judge_role, bin", [run_id]
    )
    if not rows:
        return None
    return ReportTable(
        "Judge reliability diagram (binary labels)",
        ["criterion", "judge", "confidence bin", "n", "mean confidence", "accuracy"],
        [
            (
                r["criterion"],
                r["judge_role"],
                f"{r['bin'] / 10:.1f}-{(r['bin'] + 1) / 10:.1f}",
                r["n"],
                _fmt(r["mean_confidence"]),
                _fmt(r["accuracy"]),
            )
            for r in rows
        ],
        "a calibrated judge has accuracy close to its mean confidence in every bin",
    )


def _interjudge_table(con: Any, run_id: str) -> ReportTable | None:
    rows = _rows(
        con, "SELECT * FROM judge_interjudge WHERE run_id = ? ORDER BY criterion, judge_a, judge_b", [run_id]
    )
    if not rows:
        return None
    return ReportTable(
        "Judge inter-judge agreement",
        ["criterion", "judge A", "judge B", "n", "label agreement", "score r"],
        [
            (
                r["criterion"],
                r["judge_a"],
                r["judge_b"],
                r["n"],
                _fmt(r["label_agreement"]),
                _fmt(r["score_pearson"]),
            )
            for r in rows
        ],
        "panel scores: select * from judge_panel",
    )


def judge_tables(con: Any, run_id: str, *, n_boot: int = 1000, seed: int = 0) -> list[ReportTable]:
    """Every judge table for one run."""
    kinds = [r[0] for r in con.execute("SELECT DISTINCT kind FROM judge_items WHERE run_id = ? ORDER BY kind",
                                       [run_id]).fetchall()]
    tables = [_counts_table(con, run_id), _throughput_table(con, run_id)]
    # the tables that are SQL alone are read before the agreement tables, whose bootstrap loads
    # scikit-learn and the verdict columns: DuckDB's memory for a view over a million verdicts
    # then comes on top of less (a million verdicts, 64 MB cap: these views peaked at 435 MB
    # after it, 327 before)
    sql_only = [_confusion_table(con, run_id), _reliability_table(con, run_id), _position_table(con, run_id),
                _interjudge_table(con, run_id)]
    tables += [_agreement_table(con, run_id, kind, n_boot, seed) for kind in kinds] + sql_only
    quarantined = con.execute("SELECT count(*) FROM quarantine WHERE run_id = ?", [run_id]).fetchone()[0]
    if quarantined:
        tables.append(ReportTable("Judge quarantined rows", ["rows"], [(quarantined,)],
                                  "see: uxlocal query --db DB \"select * from quarantine\""))
    return [t for t in tables if t is not None]
