"""Domain databases: validated once per process, shared read-only, copied on write per episode.

Why copy-on-write: a run builds three environments per episode (live, predicted replay, gold
replay) and the retail/airline DBs hold 1,550/2,800 records (~1-3 MB of JSON). A full typed deep
copy costs 0.1-0.3 s and a full hash dump 40-100 ms; here a fresh ``Database`` costs microseconds,
a write copies only the records it touches, and the hash reuses the cached JSON of untouched
records. The hash is still exactly ``sha256(json.dumps(dump, sort_keys=True, default=str))`` of
the whole DB, as tau2 defines it (spec §B.4.3); ``hash_of_dump`` is the slow reference and a test
keeps the two equal.

Contract for tool code: ``Table.get``/``values``/``items`` return shared records — read them,
never mutate them; call ``Table.edit`` first, which hands back the episode's own copy. Never put a
shared nested object (a variant's ``options`` dict, say) into an edited record; copy it.
``Snapshot.fingerprint`` recomputes the hash from scratch so tests can prove the shared records
were left alone.

Type canonical: records are pydantic models with ``validate_assignment``, so ``100`` assigned to a
float field is stored and dumped as ``100.0``, and optional fields dump as ``null`` rather than
disappearing; two paths to the same end state therefore hash the same (spec §B.5.2).
"""

from __future__ import annotations

import copy
import hashlib
import json
import tomllib
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from uxlocal.errors import InputError, format_validation_error

R = TypeVar("R", bound=BaseModel)


class Record(BaseModel):
    """Base of every DB row model: no unknown keys, and assignments are validated (type canonical)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def canonical_json(value: Any) -> str:
    """Dump to the JSON tau2 hashes: sorted keys, default separators, ``str`` for anything exotic."""
    return json.dumps(value, sort_keys=True, default=str)


def hash_of_dump(dump: Any) -> str:
    """Hash a plain dump the reference way; slow, used to check the fast path."""
    return hashlib.sha256(canonical_json(dump).encode()).hexdigest()


def deep_merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated by ``patch``: nested mappings merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in patch.items():
        current = merged.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = deep_merge(current, value)
        else:
            merged[key] = value
    return merged


def _record_type(annotation: Any) -> type[BaseModel] | None:
    """Return the row model of a ``dict[str, Row]`` field, else ``None`` (the field is copied whole)."""
    if typing.get_origin(annotation) is not dict:
        return None
    args = typing.get_args(annotation)
    value = args[1] if len(args) == 2 else None
    return value if isinstance(value, type) and issubclass(value, BaseModel) else None


class Snapshot:
    """A domain DB as loaded from disk: shared by every episode and never mutated."""

    def __init__(self, root: BaseModel, source: Path | None = None) -> None:
        self.root_type = type(root)
        self.source = source
        self.tables: dict[str, dict[str, BaseModel]] = {}
        self.record_types: dict[str, type[BaseModel]] = {}
        self.plain: dict[str, Any] = {}
        for name, field in type(root).model_fields.items():
            row = _record_type(field.annotation)
            if row is not None:
                self.tables[name] = getattr(root, name)
                self.record_types[name] = row
            else:
                self.plain[name] = getattr(root, name)
        self._record_bytes: dict[str, dict[str, bytes]] = {name: {} for name in self.tables}
        self._table_bytes: dict[str, bytes] = {}
        self._sorted_keys: dict[str, list[str]] = {}

    def record_bytes(self, table: str, key: str) -> bytes:
        """Canonical JSON of a shared record, computed once."""
        cache = self._record_bytes[table]
        cached = cache.get(key)
        if cached is None:
            cached = canonical_json(self.tables[table][key].model_dump()).encode()
            cache[key] = cached
        return cached

    def sorted_keys(self, table: str) -> list[str]:
        """Keys of a shared table in ``sort_keys`` order, computed once."""
        keys = self._sorted_keys.get(table)
        if keys is None:
            keys = sorted(self.tables[table])
            self._sorted_keys[table] = keys
        return keys

    def table_bytes(self, table: str) -> bytes:
        """Canonical JSON of a whole untouched table, computed once."""
        cached = self._table_bytes.get(table)
        if cached is None:
            cached = _join_entries((k, self.record_bytes(table, k)) for k in self.sorted_keys(table))
            self._table_bytes[table] = cached
        return cached

    def fingerprint(self) -> str:
        """Recompute the hash from the records themselves, bypassing every cache."""
        dump: dict[str, Any] = {
            name: {k: r.model_dump() for k, r in rows.items()} for name, rows in self.tables.items()
        }
        dump.update({name: _dump_value(value) for name, value in self.plain.items()})
        return hash_of_dump(dump)


def _dump_value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    return TypeAdapter(Any).dump_python(value)


def _join_entries(entries: typing.Iterable[tuple[str, bytes]]) -> bytes:
    """``{"k": v, ...}`` exactly as ``json.dumps(sort_keys=True)`` writes it, from sorted entries."""
    body = b", ".join(json.dumps(key).encode() + b": " + value for key, value in entries)
    return b"{" + body + b"}"


Row = TypeVar("Row")


class CopyOnWriteRows(Generic[Row]):
    """Keyed rows shared read-only with other episodes; the first edit of a row copies it.

    Keys keep file order, then the order this episode added them in. Subclasses say how a row is
    copied (``_clone``): a pydantic record here, a plain dict in the banking DB.
    """

    __slots__ = ("_name", "_base", "_own", "_added")

    def __init__(self, name: str, base: dict[str, Row]) -> None:
        self._name = name
        self._base = base
        self._own: dict[str, Row] = {}
        self._added: list[str] = []

    def _clone(self, row: Row) -> Row:
        raise NotImplementedError

    def get(self, key: str) -> Row | None:
        """Return the current row, read-only (it may be shared with other episodes)."""
        own = self._own.get(key)
        return own if own is not None else self._base.get(key)

    def edit(self, key: str) -> Row:
        """Return the episode's own copy of a row, made on first edit; ``KeyError`` if absent."""
        own = self._own.get(key)
        if own is None:
            own = self._clone(self._base[key])
            self._own[key] = own
        return own

    def add(self, key: str, row: Row) -> None:
        """Insert a new row; adding an existing key is a bug in the calling tool."""
        if key in self:
            raise KeyError(f"{self._name}: {key!r} already exists")
        self.put(key, row)

    def put(self, key: str, row: Row) -> None:
        """Insert or replace a row (used by DB patches)."""
        if key not in self._base and key not in self._own:
            self._added.append(key)
        self._own[key] = row

    def __contains__(self, key: object) -> bool:
        return key in self._own or key in self._base

    def __len__(self) -> int:
        return len(self._base) + len(self._added)

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def keys(self) -> Iterator[str]:
        """Keys in file order, then keys added in this episode in insertion order."""
        yield from self._base
        yield from self._added

    def values(self) -> Iterator[Row]:
        """Iterate the current rows, read-only."""
        for key in self.keys():
            row = self.get(key)
            assert row is not None
            yield row

    def items(self) -> Iterator[tuple[str, Row]]:
        """Iterate the current ``(key, row)`` pairs, read-only."""
        for key in self.keys():
            row = self.get(key)
            assert row is not None
            yield key, row

    def touched(self) -> bool:
        """Whether this episode edited or added anything here."""
        return bool(self._own)

    def shared_rows(self) -> Mapping[str, Row]:
        """Return the snapshot's rows, shared by every episode and never changed (read-only)."""
        return self._base

    def own_rows(self) -> Mapping[str, Row]:
        """Return the rows this episode copied, replaced or added, which override the shared ones."""
        return self._own


class Table(CopyOnWriteRows[R]):
    """One keyed collection of a DB (``orders``, ``flights`` …) with copy-on-write records."""

    __slots__ = ("_snapshot",)

    def __init__(self, name: str, snapshot: Snapshot) -> None:
        super().__init__(name, typing.cast(dict[str, R], snapshot.tables[name]))
        self._snapshot = snapshot

    def _clone(self, row: R) -> R:
        return row.model_copy(deep=True)

    def canonical_bytes(self) -> bytes:
        """Canonical JSON of the table as this episode sees it."""
        if not self._own:
            return self._snapshot.table_bytes(self._name)
        keys = self._snapshot.sorted_keys(self._name)
        if self._added:
            keys = sorted([*keys, *self._added])
        entries = (
            (
                k,
                canonical_json(self._own[k].model_dump(warnings=False)).encode()
                if k in self._own
                else self._snapshot.record_bytes(self._name, k),
            )
            for k in keys
        )
        return _join_entries(entries)


class Database:
    """One episode's view of a domain DB; subclasses declare ``ROOT`` and typed ``Table`` fields."""

    ROOT: ClassVar[type[BaseModel]]
    """The pydantic model of the whole file; its ``dict[str, Record]`` fields become tables."""

    def __init__(self, snapshot: Snapshot) -> None:
        if snapshot.root_type is not self.ROOT:
            raise TypeError(f"{type(self).__name__} needs a {self.ROOT.__name__} snapshot")
        self._snapshot = snapshot
        self._tables: dict[str, Table[Any]] = {name: Table(name, snapshot) for name in snapshot.tables}
        for name, table in self._tables.items():
            setattr(self, name, table)
        for name, value in snapshot.plain.items():
            setattr(self, name, copy.deepcopy(value))

    @classmethod
    def load(cls, path: Path) -> Snapshot:
        """Read and validate a DB file (``.json`` or ``.toml``); errors name the file and the field."""
        try:
            if path.suffix == ".toml":
                root = cls.ROOT.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
            else:
                root = cls.ROOT.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            raise InputError("DB file not found", path=path) from None
        except tomllib.TOMLDecodeError as err:
            raise InputError(f"not valid TOML: {err}", path=path) from None
        except ValidationError as err:
            raise InputError(f"does not match the {cls.ROOT.__name__} schema: {_first_errors(err)}",
                             path=path) from None
        return Snapshot(root, path)

    def hash(self) -> str:
        """sha256 of the sorted-key JSON of the whole DB, as this episode sees it."""
        digest = hashlib.sha256(b"{")
        names = sorted([*self._tables, *self._snapshot.plain])
        for index, name in enumerate(names):
            digest.update((", " if index else "").encode() + json.dumps(name).encode() + b": ")
            if name in self._tables:
                digest.update(self._tables[name].canonical_bytes())
            else:
                digest.update(canonical_json(_dump_value(getattr(self, name))).encode())
        digest.update(b"}")
        return digest.hexdigest()

    def field_names(self) -> list[str]:
        """Names of the DB's top-level fields: its tables, then its other fields."""
        return [*self._tables, *self._snapshot.plain]

    def dump(self) -> dict[str, Any]:
        """Return the whole DB as plain data (slow; for tests, debugging and exports)."""
        out: dict[str, Any] = {
            name: {k: r.model_dump(warnings=False) for k, r in table.items()}
            for name, table in self._tables.items()
        }
        out.update({name: _dump_value(getattr(self, name)) for name in self._snapshot.plain})
        return out

    def apply_patch(self, patch: Mapping[str, Any]) -> None:
        """Deep-merge ``initialization_data`` into this DB; ``ValueError`` names a bad field."""
        for field, value in patch.items():
            if field in self._tables:
                self._patch_table(field, value)
            elif field in self._snapshot.plain:
                current = _dump_value(getattr(self, field))
                merged = (
                    deep_merge(current, value)
                    if isinstance(current, Mapping) and isinstance(value, Mapping)
                    else value
                )
                annotation: Any = self.ROOT.model_fields[field].annotation
                setattr(self, field, TypeAdapter(annotation).validate_python(merged))
            else:
                raise ValueError(f"patch names unknown DB field {field!r}")

    def _patch_table(self, field: str, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise ValueError(f"patch for table {field!r} must map keys to records")
        table = self._tables[field]
        row_type = self._snapshot.record_types[field]
        for key, partial in value.items():
            current = table.get(key)
            merged = deep_merge(current.model_dump(), partial) if current is not None else partial
            try:
                table.put(key, row_type.model_validate(merged))
            except ValidationError as err:
                raise ValueError(f"patch for {field}[{key!r}]: {_first_errors(err)}") from None


def _first_errors(err: ValidationError, limit: int = 3) -> str:
    text = format_validation_error(err)
    parts = text.split("; ")
    more = f"; … {len(parts) - limit} more" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more
