"""Build criteria sets: blueprints for a domain's tasks, and hand-written criteria files into the store.

The *contract* a blueprint carries is what the proxy read beside its scenario: the simulator
guidelines, and the words of the user's tools. It depends on who ran the proxy (``--contract``):

- ``ours``: uxlocal's own user seat (``--protocol ours``): our guidelines, our user tool schemas;
- ``tau2``: tau2-bench's words. On a tau2-bench checkout, exactly what upstream's simulator reads
  in ``uxlocal run userproxy``'s upstream protocol: the guidelines file ``user_simulator.py`` names
  (the ``_tools`` variant when the task gives the user tools) and the user tool schemas built from
  upstream's docstrings, both through ``Tau2Words``. On a bare data folder (no ``src/``): the
  guidelines file from the data dir with our tool schemas (for trajectories tau2 itself produced);
- ``auto`` (the default): ``tau2`` on a checkout that has the domain, ``ours`` elsewhere, as
  ``uxlocal run userproxy --protocol auto`` decides for the same ``--tau2-data``;
- a file path: any other simulator's guidelines, with our tool schemas.

The contract is part of the blueprint hash, so criteria written against one contract are never
silently used to grade proxies that saw another. ``Contract.blueprint`` is the one place a
blueprint is built, for ``uxlocal ufs criteria``, ``criteria-import`` and ``run userproxy`` alike.

Layer contract: reads the tau2 data and criteria files; writes only through ``store.save_criteria``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uxlocal.errors import InputError
from uxlocal.tau2 import Domain, Task, load_domain, load_tasks
from uxlocal.tau2.episode import user_tool_schemas as task_user_tools
from uxlocal.tau2.upstream_words import Tau2Words

from .criteria import Blueprint, read_criteria_jsonl, screen_file_rows, tau2_guidelines
from .store import Provenance, TaskCriteria, save_criteria

CONTRACT_CHOICES = "auto, ours, tau2 or a guidelines file"
OURS, TAU2, AUTO = "ours", "tau2", "auto"


@dataclass(frozen=True)
class Contract:
    """What a user proxy reads beside its scenario in one domain: simulator guidelines, user tool words.

    ``source`` is ``ours``, ``tau2`` or a file path (``auto`` is resolved by ``resolve_contract``);
    ``words`` are a tau2-bench checkout's when ``tau2`` reads them from one (the upstream protocol).
    """

    source: str
    words: Tau2Words | None = None
    data_dir: Path | None = None

    def blueprint(self, domain: Domain, task: Task) -> Blueprint:
        """Build a task's blueprint: its scenario fields verbatim, these guidelines and user tools."""
        if self.words is not None:
            tools = self.words.user_tools(task) or []
            text = self.words.user_guidelines(has_tools=bool(tools))
        else:
            tools = task_user_tools(domain, task)
            text = self._guidelines(tools)
        return Blueprint.from_task(task, domain=domain.name, contract=text, user_tools=tools)

    def _guidelines(self, tools: Sequence[dict[str, Any]]) -> str:
        if self.source == OURS:
            from uxlocal.tau2.episode.user_proxy import guidelines

            return guidelines(tools)
        if self.source == TAU2:
            assert self.data_dir is not None
            return tau2_guidelines(self.data_dir, user_tools=bool(tools))
        path = Path(self.source)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError("contract file not found", f"use {CONTRACT_CHOICES}", path=path) from None

    def label(self) -> str:
        """Name the contract briefly: ``ours``, ``tau2-bench checkout``, ``tau2 data folder`` or a file."""
        if self.words is not None:
            return "tau2-bench checkout"
        return {OURS: OURS, TAU2: "tau2 data folder"}.get(self.source, f"file {self.source}")

    def describe(self) -> str:
        """Say in words what the proxy read under this contract (for notes and error messages)."""
        if self.words is not None and self.words.source is not None:
            return (f"tau2-bench's guidelines and tool words from the checkout {self.words.source.checkout} "
                    "(upstream protocol)")
        if self.source == OURS:
            return "ours: uxlocal's user guidelines and tool words (--protocol ours)"
        if self.source == TAU2:
            return f"tau2's guidelines file from the data folder {self.data_dir}, our tool words"
        return f"the guidelines file {self.source}"

    def identity(self) -> str:
        """Return a short fingerprint for a run's identity: the source, with a digest of what it reads."""
        if self.words is not None and self.words.source is not None:
            return f"tau2-bench:{self.words.source.sha256}"
        if self.source in (OURS, TAU2):
            return self.source
        return "file:" + hashlib.sha256(self._guidelines(()).encode()).hexdigest()


def resolve_contract(source: str, *, data_dir: str | Path, domain_name: str) -> Contract:
    """Return the contract ``--contract SOURCE`` names for one domain (``auto`` decided on ``data_dir``)."""
    if source not in (AUTO, TAU2):
        return Contract(source)
    words = Tau2Words.load(data_dir, domain_name)
    if words.comparable:
        return Contract(TAU2, words=words)
    return Contract(OURS) if source == AUTO else Contract(TAU2, data_dir=Path(data_dir))


def domain_blueprints(
    data_dir: str | Path,
    domain_name: str,
    *,
    contract: str | Contract = AUTO,
    split: str | None = None,
    task_ids: list[str] | None = None,
) -> dict[tuple[str, str], Blueprint]:
    """Blueprints of a domain's tasks (every task in the file unless ``split``/``task_ids`` narrow it).

    ``contract`` is a ``--contract`` value, resolved here for the domain, or a resolved ``Contract``.
    """
    domain = load_domain(data_dir, domain_name)
    terms = contract if isinstance(contract, Contract) else resolve_contract(
        contract, data_dir=data_dir, domain_name=domain_name)
    return {(domain_name, task.id): terms.blueprint(domain, task)
            for task in load_tasks(data_dir, domain_name, split=split, task_ids=task_ids)}


def import_criteria_file(
    con: Any,
    path: str | Path,
    *,
    criteria_set: str,
    data_dir: str | Path,
    contract: str = AUTO,
    strict: bool = True,
) -> tuple[int, int, int]:
    """Screen a hand-written criteria file against its tasks and freeze it into a set.

    Returns (tasks written, tasks already identical, criteria dropped). ``strict`` stops at the
    first criterion that fails a code check (``file:line: field: problem``); otherwise it is
    stored as dropped, with its reasons.
    """
    rows = read_criteria_jsonl(path)
    blueprints: dict[tuple[str, str], Blueprint] = {}
    notes: dict[str, str] = {}
    for domain_name in sorted({r.criterion.domain for r in rows}):
        ids = sorted({r.criterion.task_id for r in rows if r.criterion.domain == domain_name})
        known = {t.id for t in load_tasks(data_dir, domain_name, split=None)}
        terms = resolve_contract(contract, data_dir=data_dir, domain_name=domain_name)
        notes[domain_name] = f"contract: {terms.label()}"
        blueprints.update(
            domain_blueprints(
                data_dir, domain_name, contract=terms, split=None, task_ids=[i for i in ids if i in known]
            )
        )
    grouped = screen_file_rows(rows, blueprints, strict=strict)
    source = str(Path(path).resolve())
    tasks = [
        TaskCriteria(domain, task_id, blueprints[(domain, task_id)].sha256(), tuple(items),
                     Provenance("file", source_file=source, note=notes[domain]))
        for (domain, task_id), items in sorted(grouped.items())
    ]
    written, unchanged = save_criteria(con, criteria_set, tasks)
    dropped = sum(1 for items in grouped.values() for i in items if i.status == "dropped")
    return written, unchanged, dropped
