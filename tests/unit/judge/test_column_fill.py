"""ColumnFill: batches written into numpy arrays give what one dictionary encoding of the rows gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from uxlocal.suites.judge.column_fill import ColumnFill


def _batches(table: pa.Table, size: int) -> list[pa.RecordBatch]:
    return table.to_batches(max_chunksize=size)


@pytest.mark.parametrize("size", [1, 3, 7, 100])
def test_filled_columns_equal_the_whole_column_encodings(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from uxlocal.suites.judge import column_fill

    monkeypatch.setattr(column_fill, "SCAN_ROWS", size)  # first appearances found a block at a time
    rng = np.random.default_rng(size)
    n = 40
    human = [["good", "bad", None, "meh"][k] for k in rng.integers(0, 4, n)]
    label = [["bad", "good", "odd"][k] for k in rng.integers(0, 3, n)]
    score = rng.random(n).tolist()
    points = [None if i == 25 else int(i % 5) for i in range(n)]  # a null after many numbers
    grp = [f"g{k}" for k in rng.integers(0, 6, n)]
    flip = [bool(k) for k in rng.integers(0, 2, n)]
    table = pa.table({"human_label": human, "label": label, "score": score, "points": points, "grp": grp,
                      "cluster": grp, "flip": flip})
    order = rng.permutation(n)
    fill = ColumnFill(n, shared=("human_label", "label"), codes=("cluster",))
    for batch in _batches(table, size):
        fill.add(batch)
    arrays, coded = fill.finish(order)
    ordered = table.take(pa.array(order))
    both = pc.dictionary_encode(pa.concat_arrays([ordered["human_label"].combine_chunks(),
                                                  ordered["label"].combine_chunks()]), null_encoding="encode")
    expected_codes = both.indices.to_numpy()
    assert arrays["human_label"].dtype == np.int32
    assert arrays["human_label"].tolist() + arrays["label"].tolist() == expected_codes.tolist()
    assert coded == {("human_label", "label"): {v: k for k, v in enumerate(both.dictionary.to_pylist())}}
    assert arrays["score"].dtype == np.float64 and arrays["score"].tolist() == ordered["score"].to_pylist()
    assert arrays["points"].dtype == object and arrays["points"].tolist() == ordered["points"].to_pylist()
    assert arrays["grp"].tolist() == ordered["grp"].to_pylist()
    first_seen: dict[str, int] = {}
    assert arrays["cluster"].tolist() == [
        first_seen.setdefault(g, len(first_seen)) for g in ordered["grp"].to_pylist()
    ]
    assert arrays["cluster"].dtype == np.int64
    assert arrays["flip"].tolist() == ordered["flip"].to_pylist()


def test_a_count_that_does_not_match_the_rows_read_is_an_error() -> None:
    table = pa.table({"score": [0.1, 0.2, 0.3]})
    fill = ColumnFill(2)
    with pytest.raises(ValueError, match="more rows than the 2 counted"):
        fill.add(table.to_batches()[0])
    short = ColumnFill(4)
    short.add(table.to_batches()[0])
    with pytest.raises(ValueError, match="3 rows read, 4 counted"):
        short.finish()
