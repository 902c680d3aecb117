"""Criteria of a ``uxlocal run userproxy`` run: grounded in what its proxies read, or refused.

Per domain the proxies read one *contract* (``ufs/sets.py``): tau2-bench's guidelines file and user
tool words when the domain's episodes run the upstream protocol, our user seat's guidelines and
tool words in ours. The blueprints criteria are checked against carry it, so a set written for the
other contract (or for another version of a task) is refused before any episode runs, saying which
contract it was written for and how to write one for this run. ``--criteria-file`` and
``--criteria-template`` freeze criteria against the same contract (``--contract`` of ``uxlocal ufs
criteria`` as ``UserProxyConfig.contract_source`` names it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from uxlocal.config import RunConfig
from uxlocal.errors import InputError
from uxlocal.store.db import connect
from uxlocal.suites.userproxy.ufs.criteria import Blueprint
from uxlocal.suites.userproxy.ufs.sets import OURS, TAU2, Contract, import_criteria_file, resolve_contract
from uxlocal.suites.userproxy.ufs.store import TaskCriteria, load_criteria, save_criteria
from uxlocal.suites.userproxy.ufs.template_writer import template_task_criteria
from uxlocal.tau2 import Domain, Task
from uxlocal.tau2.upstream_words import Tau2Words


class CriteriaOptions(Protocol):
    """What this module reads of the run's options (``UserProxyConfig`` has it; no import back up)."""

    criteria_file: Path | None
    criteria_template: bool
    tau2_data: Path | None

    def contract_source(self) -> str:
        """Name the contract ``--criteria-file`` and ``--criteria-template`` freeze criteria against."""
        ...


def played_contract(words: Tau2Words | None) -> Contract:
    """Return the contract a domain's proxies read: tau2-bench's words (upstream protocol), else ours."""
    return Contract(TAU2, words=words) if words is not None else Contract(OURS)


def run_criteria(run: RunConfig, config: CriteriaOptions, set_name: str, root: Path,
                 blueprints: dict[tuple[str, str], Blueprint],
                 contracts: dict[str, Contract]) -> dict[tuple[str, str], TaskCriteria]:
    """Return the set's criteria once ``--criteria-file`` (or templates for tasks it lacks) is frozen in.

    Both are grounded in the contract this run's proxies read (``contracts``, per domain).
    """
    con = connect(run.db_path)
    try:
        if config.criteria_file is not None:
            import_criteria_file(con, config.criteria_file, criteria_set=set_name, data_dir=root,
                                 contract=config.contract_source())
        stored = load_criteria(con, set_name)
        if config.criteria_template:
            missing = [bp for key, bp in blueprints.items() if key not in stored]
            if missing:
                filled = [template_task_criteria(bp, contract=contracts[bp.domain].label()) for bp in missing]
                save_criteria(con, set_name, filled)
                stored = load_criteria(con, set_name)
        return stored
    finally:
        con.close()


def check_run_criteria(set_name: str, blueprints: dict[tuple[str, str], Blueprint],
                       stored: dict[tuple[str, str], TaskCriteria], config: CriteriaOptions, root: Path,
                       selected: list[tuple[Domain, list[Task]]], contracts: dict[str, Contract]) -> None:
    """Every selected task has criteria in the set, written against its current blueprint.

    A set written for the other contract (ours vs a tau2-bench checkout's words) is refused saying
    which it was written for and how to write one for this run.
    """
    missing = [key for key in blueprints if key not in stored]
    if missing:
        source = config.contract_source()
        raise InputError(
            f"criteria set {set_name!r} has no criteria for {len(missing)} selected task(s): "
            + _keys(missing),
            f"run {_command(missing, config, source, set_name)} first, or pass --criteria-file F.jsonl or "
            "--criteria-template",
        )
    stale = [key for key, bp in blueprints.items() if bp.sha256() != stored[key].blueprint_sha256]
    if not stale:
        return
    tasks = {(d.name, t.id): (d, t) for d, ts in selected for t in ts}
    other = {key: _written_for(stored[key].blueprint_sha256, *tasks[key], contracts[key[0]], root)
             for key in stale}
    crossed = [key for key in stale if other[key] is not None]
    if not crossed:
        raise InputError(f"criteria set {set_name!r} was written for another version of {len(stale)} "
                         f"task(s): {_keys(stale)}",
                         "the task data or the guidelines changed since: write criteria for this data into a "
                         "new set (sets are frozen)")
    was, now = other[crossed[0]], contracts[crossed[0][0]]
    assert was is not None
    hint = (f"write criteria for this run into a new set (sets are frozen): "
            f"{_command(crossed, config, now.source)} (or --template instead of the models), or run with "
            "--criteria-template --criteria-set NEW")
    if was.words is not None:
        hint += "; or grade this set with --protocol upstream on that checkout"
    elif was.source == OURS:
        hint += "; or grade this set with --protocol ours"
    raise InputError(
        f"criteria set {set_name!r} was written for the {was.label()} user contract, but this run's proxies "
        f"read {now.describe()}: {len(crossed)} task(s): {_keys(crossed)}",
        hint,
    )


def _written_for(sha: str, domain: Domain, task: Task, played: Contract, root: Path) -> Contract | None:
    """Return the other contract (ours, or tau2-bench's words) a stored blueprint hash was written for."""
    other = resolve_contract(TAU2, data_dir=root, domain_name=domain.name) if played.words is None \
        else Contract(OURS)
    return other if other.blueprint(domain, task).sha256() == sha else None


def _keys(keys: list[tuple[str, str]]) -> str:
    return ", ".join(f"{d}/{t}" for d, t in keys[:5]) + (" ..." if len(keys) > 5 else "")


def _command(keys: list[tuple[str, str]], config: CriteriaOptions, contract: str,
             set_name: str = "NEW") -> str:
    """Return the ``uxlocal ufs criteria`` command line that writes these tasks' criteria for this run."""
    names = list(dict.fromkeys(d for d, _ in keys))
    data = f" --tau2-data {config.tau2_data}" if config.tau2_data else ""
    line = (f"`uxlocal ufs criteria --domain {names[0]}{data} --contract {contract} --model writer=... "
            f"--model verifier=... --set {set_name} --db ...`")
    return line + (f" once per domain ({', '.join(names)})" if len(names) > 1 else "")
