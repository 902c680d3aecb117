"""Build criteria sets: blueprints for a domain's tasks, and hand-written criteria files into the store.

The *contract* a blueprint carries is the guidelines text the proxy saw, so it depends on who ran
the proxy:

- ``ours``: the guidelines uxlocal's own user seat is given (``uxlocal run tau2``);
- ``tau2``: tau2's simulator guidelines from the data dir (for trajectories tau2 itself produced);
- a file path: any other simulator's guidelines.

With user tools the tools version of the guidelines is used, as the simulators do. The contract is
part of the blueprint hash, so criteria written against one contract are never silently used to
grade proxies that saw another.

Layer contract: reads the tau2 data and criteria files; writes only through ``store.save_criteria``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uxlocal.tau2 import load_domain, load_tasks
from uxlocal.tau2.episode import user_tool_schemas as task_user_tools

from .criteria import Blueprint, read_criteria_jsonl, screen_file_rows, tau2_guidelines
from .store import Provenance, TaskCriteria, save_criteria


def contract_text(source: str, *, data_dir: str | Path, user_tool_schemas: Sequence[dict[str, Any]]) -> str:
    """Return the guidelines text named by ``source`` (``ours``, ``tau2`` or a file path)."""
    if source == "ours":
        from uxlocal.tau2.episode.user_proxy import guidelines

        return guidelines(user_tool_schemas)
    if source == "tau2":
        return tau2_guidelines(data_dir, user_tools=bool(user_tool_schemas))
    from uxlocal.errors import InputError

    path = Path(source)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("contract file not found", "use ours, tau2 or a file path", path=path) from None


def domain_blueprints(
    data_dir: str | Path,
    domain_name: str,
    *,
    contract: str = "ours",
    split: str | None = None,
    task_ids: list[str] | None = None,
) -> dict[tuple[str, str], Blueprint]:
    """Blueprints of a domain's tasks (every task in the file unless ``split``/``task_ids`` narrow it)."""
    domain = load_domain(data_dir, domain_name)
    out = {}
    for task in load_tasks(data_dir, domain_name, split=split, task_ids=task_ids):
        tools = task_user_tools(domain, task)
        text = contract_text(contract, data_dir=data_dir, user_tool_schemas=tools)
        out[(domain_name, task.id)] = Blueprint.from_task(
            task, domain=domain_name, contract=text, user_tools=tools
        )
    return out


def import_criteria_file(
    con: Any,
    path: str | Path,
    *,
    criteria_set: str,
    data_dir: str | Path,
    contract: str = "ours",
    strict: bool = True,
) -> tuple[int, int, int]:
    """Screen a hand-written criteria file against its tasks and freeze it into a set.

    Returns (tasks written, tasks already identical, criteria dropped). ``strict`` stops at the
    first criterion that fails a code check (``file:line: field: problem``); otherwise it is
    stored as dropped, with its reasons.
    """
    rows = read_criteria_jsonl(path)
    blueprints: dict[tuple[str, str], Blueprint] = {}
    for domain_name in sorted({r.criterion.domain for r in rows}):
        ids = sorted({r.criterion.task_id for r in rows if r.criterion.domain == domain_name})
        known = {t.id for t in load_tasks(data_dir, domain_name, split=None)}
        blueprints.update(
            domain_blueprints(
                data_dir, domain_name, contract=contract, split=None, task_ids=[i for i in ids if i in known]
            )
        )
    grouped = screen_file_rows(rows, blueprints, strict=strict)
    provenance = Provenance("file", source_file=str(Path(path).resolve()), note=f"contract: {contract}")
    tasks = [
        TaskCriteria(domain, task_id, blueprints[(domain, task_id)].sha256(), tuple(items), provenance)
        for (domain, task_id), items in sorted(grouped.items())
    ]
    written, unchanged = save_criteria(con, criteria_set, tasks)
    dropped = sum(1 for items in grouped.values() for i in items if i.status == "dropped")
    return written, unchanged, dropped
