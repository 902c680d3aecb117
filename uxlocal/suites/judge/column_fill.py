"""Verdict columns filled batch by batch from an Arrow reader straight into numpy arrays.

The judge report reads a million verdicts per (criterion, judge). Holding them as Arrow columns
first and converting afterwards kept two copies of each column alive (~50 MB of Arrow beside the
numpy arrays at a million rows); here each batch is written into arrays allocated once for the
row count the caller knows, and let go. Text becomes int32 codes as it arrives (a Python dict of
the few distinct values per column, labels and groups), numbered afresh by first appearance once
the rows are in their final order, so the result is the one a whole-column dictionary encoding of
the ordered rows gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class _Text:
    """One text column as provisional codes (the order values arrived in) and their values."""

    def __init__(self, n: int, values: dict[Any, int]) -> None:
        self.codes = np.empty(n, dtype=np.int32)
        self.values = values
        """value -> provisional code; shared by the columns coded together."""

    def put(self, start: int, column: Any) -> None:
        import pyarrow.compute as pc

        encoded = pc.dictionary_encode(column, null_encoding="encode")
        lookup = np.array([self.values.setdefault(value, len(self.values))
                           for value in encoded.dictionary.to_pylist()], dtype=np.int32)
        self.codes[start:start + len(column)] = lookup[encoded.indices.to_numpy(zero_copy_only=False)]


class ColumnFill:
    """Columns of ``n`` rows filled one Arrow batch at a time (``add``), then put in ``order`` (``finish``).

    Numbers without nulls become float/int arrays; text one Python object per distinct value; the
    ``shared`` text columns int32 codes numbered together by first appearance (the first column's
    rows first, null one of the values), as ``VerdictColumns.code`` numbers them; the ``codes``
    columns int64 codes numbered by first appearance; anything else (booleans, numbers with nulls)
    Python values.
    """

    def __init__(self, n: int, *, shared: tuple[str, ...] = (), codes: tuple[str, ...] = ()) -> None:
        self.n = n
        self.shared, self.codes = shared, codes
        self.filled = 0
        self.arrays: dict[str, np.ndarray] = {}
        self.text: dict[str, _Text] = {}
        self._shared_values: dict[Any, int] = {}

    def add(self, batch: Any) -> None:
        """Write one record batch's columns at the next rows."""
        import pyarrow as pa

        start, size = self.filled, batch.num_rows
        if start + size > self.n:
            raise ValueError(f"more rows than the {self.n} counted: the store changed while it was read")
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            if (
                name in self.text
                or name in self.shared
                or name in self.codes
                or pa.types.is_string(column.type)
                or pa.types.is_large_string(column.type)
            ):
                if name not in self.text:
                    self.text[name] = _Text(self.n, self._shared_values if name in self.shared else {})
                self.text[name].put(start, column)
                continue
            array = self.arrays.get(name)
            numeric = pa.types.is_floating(column.type) or pa.types.is_integer(column.type)
            if array is None:
                dtype = column.type.to_pandas_dtype() if numeric and not column.null_count else object
                array = self.arrays[name] = np.empty(self.n, dtype=dtype)
            if array.dtype != object and column.null_count:  # a null after numbers: Python values from here
                array = self.arrays[name] = array.astype(object)
            if array.dtype == object:
                array[start:start + size] = column.to_pylist()
            else:
                array[start:start + size] = column.to_numpy()
        self.filled += size

    def finish(self, order: np.ndarray | None = None
               ) -> tuple[dict[str, np.ndarray], dict[tuple[str, ...], dict[Any, int]]]:
        """Return the columns with their rows in ``order`` (as added without it), and the shared codes."""
        if self.filled != self.n:
            raise ValueError(
                f"{self.filled} rows read, {self.n} counted: the store changed while it was read"
            )
        arrays: dict[str, np.ndarray] = {}
        for name in list(self.arrays):
            array = self.arrays.pop(name)
            arrays[name] = array if order is None else array[order]
        codes = {
            name: (text.codes if order is None else text.codes[order]) for name, text in self.text.items()
        }
        coded: dict[tuple[str, ...], dict[Any, int]] = {}
        present = tuple(name for name in self.shared if name in codes)
        if present:
            renumber, values = _first_appearance([codes[name] for name in present], self._shared_values)
            for name in present:
                arrays[name] = renumber[codes.pop(name)]
            coded[present] = values
        for name, provisional in codes.items():
            renumber, values = _first_appearance([provisional], self.text[name].values)
            if name in self.codes:
                arrays[name] = renumber[provisional].astype(np.int64)
            else:
                objects = np.empty(len(values), dtype=object)
                objects[:] = list(values)
                arrays[name] = objects[renumber[provisional]]
        self.text.clear()
        return arrays, coded


SCAN_ROWS = 65_536
"""Rows scanned at a time for first appearances: a sort of a whole million-row column (and of its
positions) would hold ~24 MB beside the columns; a block at a time holds well under 1 MB."""


def _first_appearance(columns: list[np.ndarray], values: dict[Any, int]) -> tuple[np.ndarray, dict[Any, int]]:
    """Renumber codes by their first position in ``columns`` read one after the other.

    Return an array mapping each provisional code to its new one, and value -> new code for the
    values that occur, in new-code order.
    """
    first = np.full(len(values), -1, dtype=np.int64)
    offset = 0
    for column in columns:
        for start in range(0, len(column), SCAN_ROWS):
            seen, where = np.unique(column[start:start + SCAN_ROWS], return_index=True)
            new = first[seen] < 0
            first[seen[new]] = offset + start + where[new]
        offset += len(column)
    occurring = np.flatnonzero(first >= 0)
    ranked = occurring[np.argsort(first[occurring], kind="stable")]
    renumber = np.full(len(values), -1, dtype=np.int32)
    renumber[ranked] = np.arange(len(ranked), dtype=np.int32)
    value_of = {code: value for value, code in values.items()}
    return renumber, {value_of[int(code)]: new for new, code in enumerate(ranked)}
