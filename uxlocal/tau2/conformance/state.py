"""The recording's canonical state of our DBs, its 16-hex hash, and what one call changed.

The recording (``../shared/conformance/tau2/README.md``) hashes ``{"db": agent DB, "user_db": user
DB or null}`` as plain JSON with: a top-level list of records keyed by a unique first ``*_id``
field turned into an object keyed by it, null-valued keys dropped, integral floats written as
integers and other floats rounded to 6 decimals; serialised with sorted keys, ``(",", ":")``
separators, UTF-8, no ASCII escaping; the first 16 hex digits of its SHA-256.

Speed: a replay asks for the state after every call. Rows our copy-on-write tables share with
the loaded snapshot never change, so their canonical form is computed once per process (keyed by
the row object); only the rows an episode owns, and small non-table fields, are redone per call.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from ..db import CopyOnWriteRows, Database

Canon = tuple[Any, str]
"""A canonical value and its serialisation."""


def canonical(value: Any) -> Any:
    """Plain JSON in the recording's canonical form (see the module docstring)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", warnings=False)
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        return int(value) if value.is_integer() and abs(value) < 2**53 else round(value, 6)
    if value is None or isinstance(value, bool | str | int):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def serialise(value: Any) -> str:
    """Sorted keys, compact separators, no ASCII escaping: the text the hash is taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha16(text: str) -> str:
    """First 16 hex digits of the SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def key_records(value: Any) -> Any:
    """Return a list of dict records with a unique string first ``*_id`` field, as an object keyed by it."""
    if not (isinstance(value, list) and value and all(isinstance(r, Mapping) for r in value)):
        return value
    key = next((k for k in value[0] if str(k).endswith("_id")), None)
    ids = [r.get(key) for r in value] if key is not None else []
    if key is None or not all(isinstance(i, str) for i in ids) or len(set(ids)) != len(ids):
        return value
    return dict(zip(ids, value, strict=True))


def _joined(parts: list[tuple[str, str]]) -> str:
    ordered = sorted(parts, key=lambda part: part[0])
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + s for k, s in ordered) + "}"


class StateCanon:
    """Canonical states of a domain's DBs; one per domain, reused across its cases."""

    def __init__(self) -> None:
        self._shared: dict[int, tuple[object, Any, str]] = {}
        self._tables: dict[tuple[int, str], tuple[object, dict[str, Any], list[tuple[str, str]], str]] = {}
        self._last_table: dict[tuple[int, str], tuple[tuple[tuple[str, str], ...], Canon]] = {}
        self._last_db: dict[str, tuple[tuple[tuple[str, str], ...], Canon]] = {}
        self._last_state: tuple[str, str, str] | None = None

    def state(self, db: object, user_db: object | None) -> tuple[dict[str, Any], str]:
        """``({"db": …, "user_db": …}, hash)`` for two live DBs (``user_db`` may be ``None``).

        Most calls change nothing: an unchanged table or DB gives back the very text it gave last
        time, and an unchanged state its hash, without joining or hashing megabytes again.
        """
        agent_obj, agent_text = self.db(db, "db")
        user_obj, user_text = self.db(user_db, "user_db") if user_db is not None else (None, "null")
        last = self._last_state
        if last is not None and last[0] is agent_text and last[1] is user_text:
            return {"db": agent_obj, "user_db": user_obj}, last[2]
        digest = sha16('{"db":' + agent_text + ',"user_db":' + user_text + "}")
        self._last_state = (agent_text, user_text, digest)
        return {"db": agent_obj, "user_db": user_obj}, digest

    def db(self, db: object, slot: str = "db") -> Canon:
        """One DB's canonical form: tables row by row, anything else from its dump."""
        parts: list[tuple[str, str]] = []
        obj: dict[str, Any] = {}
        for name, value in _fields(db):
            if isinstance(value, CopyOnWriteRows):
                canon = self._table(name, value)
            elif isinstance(value, _Wrapped):
                inner, text = self._table(name, value.rows)
                canon = ({**value.extra_obj, value.rows_key: inner},
                         _joined([*value.extra_parts, (value.rows_key, text)]))
            else:
                plain = canonical(key_records(_plain(value)))
                if plain is None:
                    continue
                canon = (plain, serialise(plain))
            obj[name] = canon[0]
            parts.append((name, canon[1]))
        signature = tuple(parts)
        last = self._last_db.get(slot)
        if last is not None and last[0] == signature:
            return obj, last[1][1]
        result = (obj, _joined(parts))
        self._last_db[slot] = (signature, result)
        return result

    def _table(self, name: str, rows: CopyOnWriteRows[Any]) -> Canon:
        base = rows.shared_rows()
        cached = self._tables.get((id(base), name))
        if cached is None or cached[0] is not base:
            entries = {k: self._row(row) for k, row in base.items()}
            parts = [(k, c[1]) for k, c in entries.items()]
            cached = (base, {k: c[0] for k, c in entries.items()}, parts, _joined(parts))
            self._tables[(id(base), name)] = cached
        own = rows.own_rows()
        if not own:
            return cached[1], cached[3]
        mine = {k: self._fresh(row) for k, row in own.items()}
        signature = tuple((k, c[1]) for k, c in mine.items())
        last = self._last_table.get((id(base), name))
        if last is not None and last[0] == signature:
            return last[1]
        obj = {**cached[1], **{k: c[0] for k, c in mine.items()}}
        parts = [(k, s) for k, s in cached[2] if k not in mine] + [(k, c[1]) for k, c in mine.items()]
        result = (obj, _joined(parts))
        self._last_table[(id(base), name)] = (signature, result)
        return result

    def _row(self, row: object) -> Canon:
        hit = self._shared.get(id(row))
        if hit is None or hit[0] is not row:
            obj, text = self._fresh(row)
            hit = (row, obj, text)
            self._shared[id(row)] = hit
        return hit[1], hit[2]

    @staticmethod
    def _fresh(row: object) -> Canon:
        obj = canonical(row)
        return obj, serialise(obj)


class _Wrapped:
    """A table stored inside an object with other fields (banking: ``{"data": rows, "notes": …}``)."""

    def __init__(self, rows: CopyOnWriteRows[Any], rows_key: str, extra: Mapping[str, Any]) -> None:
        self.rows = rows
        self.rows_key = rows_key
        self.extra_obj = {k: canonical(v) for k, v in extra.items() if v is not None}
        self.extra_parts = [(k, serialise(v)) for k, v in self.extra_obj.items()]


def _fields(db: object) -> Iterator[tuple[str, Any]]:
    """``(name, value)`` of each top-level field of a DB, tables as their row containers."""
    if isinstance(db, Database):
        for name in db.field_names():
            yield name, getattr(db, name)
        return
    tables = getattr(db, "_tables", None)
    if isinstance(tables, Mapping) and all(isinstance(t, CopyOnWriteRows) for t in tables.values()):
        for name, table in tables.items():  # banking: {"data": rows, "notes": text} per table
            yield name, _Wrapped(table, "data", {"notes": getattr(table, "notes", None)})
        return
    dump = db.dump() if hasattr(db, "dump") else db
    yield from dict(dump).items()


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", warnings=False)
    return value


def state_delta(before: Any, after: Any, path: str = "", out: list[list[Any]] | None = None,
                cap: int = 2000) -> list[list[Any]]:
    """Return what changed between two states.

    ``[pointer, new value]`` per changed leaf (a list that changed length is one leaf),
    ``[pointer]`` per removed key; a value over ``cap`` JSON characters as its hash.
    """
    out = [] if out is None else out
    if before is after or (type(before) is type(after) and before == after):
        return out
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            here = path + "/" + str(key).replace("~", "~0").replace("/", "~1")
            if key not in after:
                out.append([here])
            elif key not in before:
                out.append([here, _capped(after[key], cap)])
            else:
                state_delta(before[key], after[key], here, out, cap)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (x, y) in enumerate(zip(before, after, strict=True)):
            state_delta(x, y, f"{path}/{index}", out, cap)
        return out
    out.append([path, _capped(after, cap)])
    return out


def _capped(value: Any, cap: int) -> Any:
    text = serialise(value)
    return value if len(text) <= cap else {"$sha16": sha16(text), "$chars": len(text)}


class RandomIds:
    """The recording's rule for randomly drawn record ids, for one case.

    A record id in a listed table that the case's initial state lacks is renamed ``<prefix><k>``
    (k counted in order of first appearance), in states (keys and values) and in output texts.
    """

    TABLES: dict[str, dict[str, str]] = {"telecom": {"bills": "NEW_BILL_"}}

    def __init__(self, domain: str, initial: Mapping[str, Any]) -> None:
        self.tables = self.TABLES.get(domain, {})
        db = initial.get("db") or {}
        self.known = {t: set(db.get(t) or {}) for t in self.tables}
        self.names: dict[str, str] = {}

    def observe(self, state: Mapping[str, Any]) -> None:
        """Name the new ids ``state`` holds."""
        db = state.get("db") or {}
        for table, prefix in self.tables.items():
            for rid in sorted(set(db.get(table) or {}) - self.known[table] - set(self.names)):
                count = sum(1 for v in self.names.values() if v.startswith(prefix))
                self.names[rid] = f"{prefix}{count + 1}"

    def text(self, text: str) -> str:
        """``text`` with every new id, as a whole token, renamed."""
        for rid, name in self.names.items():
            text = re.sub(r"(?<![A-Za-z0-9_])" + re.escape(rid) + r"(?![A-Za-z0-9_])", name, text)
        return text

    def rename(self, value: Any) -> Any:
        """Return a state with every new id renamed, in keys and values."""
        if not self.names:
            return value
        if isinstance(value, dict):
            return {self.names.get(k, k): self.rename(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.rename(v) for v in value]
        return self.names.get(value, value) if isinstance(value, str) else value


TIMING = re.compile(r"\[Timing: [^\]\n]*\]")
"""A wall-clock bracket at the end of banking's search output; compared as ``[Timing: N]``."""


def normalise_text(text: str, ids: RandomIds) -> str:
    """Return an output text after the recording's random-value rules."""
    text = ids.text(text)
    return TIMING.sub("[Timing: N]", text) if "[Timing:" in text else text
