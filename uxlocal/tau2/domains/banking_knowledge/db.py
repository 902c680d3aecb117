"""The banking_knowledge transactional DB (spec tau2-telecom-banking.md §B.1): 23 keyed tables.

``db.json`` stores each table as ``{"data": {record_id: record}, "notes": str}`` with free-form
records, so rows here are plain dicts (not typed models) and numbers keep the type they were
written with: at the pinned grading (8ebb749) ``100000`` and ``100000.0`` are different DB states.
Agent and user tools share one ``BankingDB``; it is copied on write per episode like the other
domains' DBs: ``BankingTable.get``/``values`` return shared rows (read them, never mutate them),
``edit`` hands back the episode's own copy.

Besides the hashed tables a DB carries per-episode state that is *not* hashed: the agent tools
unlocked so far (upstream keeps them in memory; a replay rebuilds them by replaying the unlock
calls) and the grading settings of the run (``BankingGrading``).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from uxlocal.errors import InputError

from ...db import CopyOnWriteRows, canonical_json, deep_merge
from .discoverable import NO_WORDS, DiscoverableWords

TABLES: tuple[str, ...] = (
    "users", "accounts", "debit_cards", "referrals", "credit_card_applications",
    "user_discoverable_tools", "user_discoverable_tool_calls", "verification_history",
    "credit_card_transaction_history", "cash_back_disputes", "bank_account_transaction_history",
    "credit_card_accounts", "agent_discoverable_tools", "task_config", "human_transfer_requests",
    "transaction_disputes", "credit_card_orders", "debit_card_orders", "credit_card_closure_reasons",
    "credit_card_account_flags", "credit_limit_increase_requests", "payment_history",
    "debit_card_disputes",
)
"""Every table of the DB, in upstream's declaration order; tables absent from a file start empty."""

NOW = datetime(2025, 11, 14, 3, 40, 0)  # noqa: DTZ001 - tau2 parity: upstream's clock is naive and outputs print it
"""The domain's frozen clock (2025-11-14 03:40, US Eastern, stored without a zone)."""
TODAY = NOW.date()
TODAY_MDY = TODAY.strftime("%m/%d/%Y")
"""Today as the KB and the DB write it: ``11/14/2025``."""

GRADING_VERSIONS = ("8ebb749", "1.0.1")
"""``8ebb749``: the paper's pin (every discoverable call logged, numbers raw, transactions in
insertion order); ``1.0.1``: the later semantics (read allowlist, numbers as float, newest first)."""


def parse_money(value: object) -> float:
    """Read dollars as upstream does: a number as is, text like ``"$2,850.00"`` parsed, else 0.

    Unreadable text raises ``ValueError`` (the pinned data has none), which a tool call reports as
    its error, as upstream's does.
    """
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return float(value.replace("$", "").replace(",", ""))
    return 0.0


def account_balance(account: Mapping[str, Any]) -> float:
    """Read a bank account's balance (``current_holdings``, or a legacy ``balance`` field)."""
    return parse_money(account.get("current_holdings", account.get("balance", 0)))


def seeded_id(seed: str, length: int = 16) -> str:
    """Make a deterministic hex id: the first ``length`` hex digits of sha256(seed)."""
    return hashlib.sha256(seed.encode()).digest()[: length // 2].hex()


def dispute_id(user_id: object, transaction_id: object) -> str:
    """Id of a card or cash back dispute: one per customer and transaction (credit and debit alike)."""
    return "dsp_" + seeded_id(f"dispute:{user_id}:{transaction_id}", 12)


def card_transaction_id(user_id: Any, card_type: Any, merchant: Any, amount: Any, category: Any) -> str:
    """Id of a credit card transaction row; the amount enters with two decimals, so 25 == 25.0.

    The parts are joined as text, so a non-text part fails as upstream's join does.
    """
    parts = ["transaction", user_id, card_type, merchant, f"{amount:.2f}", category]
    return "txn_" + seeded_id(":".join(parts), 12)


@dataclass
class BankingGrading:
    """How this episode's DB records calls (spec §B.5); set per task by the environment."""

    version: str = "8ebb749"
    read_log_allowlist: frozenset[str] = frozenset()
    """At 1.0.1: discoverable *read* tools whose calls are still logged (the gold's own names)."""

    def __post_init__(self) -> None:
        if self.version not in GRADING_VERSIONS:
            raise ValueError(
                f"unknown tau2 grading version {self.version!r}; use {' or '.join(GRADING_VERSIONS)}"
            )

    @property
    def later(self) -> bool:
        """Whether the 1.0.1 semantics apply."""
        return self.version == "1.0.1"


@dataclass(frozen=True)
class BankingSnapshot:
    """``db.json`` as loaded: shared by every episode and never mutated."""

    tables: dict[str, dict[str, dict[str, Any]]]
    notes: dict[str, str]
    source: Path | None = None
    _bytes: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    def table_bytes(self, name: str) -> bytes:
        """Canonical JSON of an untouched table (``{"data": …, "notes": …}``), computed once."""
        cached = self._bytes.get(name)
        if cached is None:
            cached = canonical_json({"data": self.tables[name], "notes": self.notes[name]}).encode()
            self._bytes[name] = cached
        return cached


class BankingTable(CopyOnWriteRows[dict[str, Any]]):
    """One table with copy-on-write dict rows; keys keep file order, then insertion order."""

    __slots__ = ("name", "notes")

    def __init__(self, name: str, base: dict[str, dict[str, Any]], notes: str) -> None:
        super().__init__(name, base)
        self.name = name
        self.notes = notes

    def _clone(self, row: dict[str, Any]) -> dict[str, Any]:
        return copy.deepcopy(row)

    def find(self, **equal: Any) -> list[tuple[str, dict[str, Any]]]:
        """Rows whose fields equal every given value, in key order."""
        return [(k, r) for k, r in self.items() if all(r.get(f) == v for f, v in equal.items())]

    def dump(self) -> dict[str, Any]:
        """Return the table as stored in ``db.json``."""
        return {"data": {k: r for k, r in self.items()}, "notes": self.notes}


class BankingDB:
    """One episode's view of the banking DB, shared by the agent's and the user's tools."""

    def __init__(self, snapshot: BankingSnapshot) -> None:
        self._snapshot = snapshot
        self._tables = {
            name: BankingTable(name, snapshot.tables[name], snapshot.notes[name]) for name in TABLES
        }
        self.unlocked_agent_tools: list[str] = []
        """Agent tools unlocked in this episode, in order (in memory, not hashed)."""
        self.grading = BankingGrading()
        self.words: DiscoverableWords = NO_WORDS
        """Upstream's tool descriptions when the data folder has a tools file (set per environment)."""

    @property
    def source(self) -> Path | None:
        """The ``db.json`` this DB was loaded from (its folder holds the knowledge base)."""
        return self._snapshot.source

    def table(self, name: str) -> BankingTable:
        """Return a table by name; ``KeyError`` for a name the DB does not have."""
        return self._tables[name]

    def has_table(self, name: str) -> bool:
        """Whether the DB has a table of this name (upstream's writes to other names do nothing)."""
        return name in self._tables

    def has_row(self, table: str, key: object) -> bool:
        """Whether ``key`` is a row of ``table``; an unhashable key raises ``TypeError``, as upstream."""
        hash(key)
        return key in self._tables[table]

    def row(self, table: str, key: object) -> dict[str, Any]:
        """Return a row known to exist (after ``has_row``); read it, never mutate it."""
        found = self._tables[table].get(key)  # type: ignore[arg-type]
        if found is None:
            raise KeyError(f"{table} has no row {key!r}")
        return found

    def __getattr__(self, name: str) -> BankingTable:
        tables: dict[str, BankingTable] | None = self.__dict__.get("_tables")
        if tables is not None and name in tables:
            return tables[name]
        raise AttributeError(name)

    @classmethod
    def load(cls, path: Path) -> BankingSnapshot:
        """Read ``db.json``; errors name the file and the table."""
        try:
            raw = json.loads(path.read_bytes())
        except FileNotFoundError:
            raise InputError("DB file not found", path=path) from None
        except json.JSONDecodeError as err:
            raise InputError(f"not valid JSON: {err.msg}", path=path, line=err.lineno) from None
        if not isinstance(raw, dict):
            raise InputError("expected an object of tables", path=path)
        unknown = sorted(set(raw) - set(TABLES))
        if unknown:
            raise InputError(f"unknown banking tables: {', '.join(unknown)}", path=path)
        tables: dict[str, dict[str, dict[str, Any]]] = {}
        notes: dict[str, str] = {}
        for name in TABLES:
            entry = raw.get(name, {})
            data = entry.get("data", {}) if isinstance(entry, dict) else None
            if not isinstance(data, dict) or not all(isinstance(r, dict) for r in data.values()):
                raise InputError(f"table {name!r}: expected {{'data': {{id: record}}, 'notes': str}}",
                                 path=path)
            tables[name] = data
            notes[name] = str(entry.get("notes", ""))
        return BankingSnapshot(tables=tables, notes=notes, source=path)

    def hash(self) -> str:
        """sha256 of the sorted-key JSON of every table (unlock state and grading excluded)."""
        digest = hashlib.sha256(b"{")
        for index, name in enumerate(sorted(TABLES)):
            table = self._tables[name]
            body = (canonical_json(table.dump()).encode() if table.touched()
                    else self._snapshot.table_bytes(name))
            digest.update((", " if index else "").encode() + json.dumps(name).encode() + b": " + body)
        digest.update(b"}")
        return digest.hexdigest()

    def dump(self) -> dict[str, Any]:
        """Return the whole DB as plain data (slow; for tests and exports)."""
        return {name: copy.deepcopy(self._tables[name].dump()) for name in TABLES}

    def apply_patch(self, patch: Mapping[str, Any]) -> None:
        """Deep-merge a task's ``agent_data`` (``{table: {"data": {id: fields}}}``) into this DB.

        Keys that are not tables are dropped, as upstream's schema drops them (tasks 058 and 059
        put rows at the wrong level; the rows they meant already exist).
        """
        for name, value in patch.items():
            if name not in self._tables:
                continue
            if not isinstance(value, Mapping) or not isinstance(value.get("data", {}), Mapping):
                raise ValueError(f"patch for table {name!r} must be {{'data': {{id: record}}}}")
            table = self._tables[name]
            for key, partial in value.get("data", {}).items():
                current = table.get(key)
                merged = deep_merge(current, partial) if current is not None else dict(partial)
                table.put(key, copy.deepcopy(merged))
