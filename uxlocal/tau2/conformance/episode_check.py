"""Replay the episode recording through our upstream-protocol program and compare, call by call.

Each recorded episode (``../shared/conformance/tau2-episodes/<domain>.json.gz``) is run by
``upstream_episode`` under the real scheduler (handed in: ``EpisodeRunner``), with one
``FakeEngine`` that answers each seat (``GenRequest.role``: agent, user, judge) from the episode's
``script`` and records every request.
Compared per call, in order: the seat, ``messages``, ``tools`` (JSON-equal and in upstream's key
order, from the recording's ``tools_as_sent``), ``tool_choice``, ``temperature`` and ``seed``; per
episode: termination reason, reward and the reward info's parts (``compare.COMPONENTS``: reward,
basis, breakdown, DB match, and the met flags of every env, action, communicate and NL check; the
notes and justifications are free text in each side's own words; an empty list equals null, as
in the call-level comparison); an episode upstream raised in
must end as ``infrastructure_error``. Needs a tau2-bench checkout for the words (``assemble_checkout``
links one together from upstream's ``src/`` and a data folder).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uxlocal.engine.base import Engine, GenRequest, PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.tau2 import INFRASTRUCTURE_ERROR, load_domain, load_tasks
from uxlocal.tau2.episode.state import Limits
from uxlocal.tau2.episode.upstream import UpstreamSeats, UpstreamSetup, upstream_episode
from uxlocal.tau2.layout import tau2_root
from uxlocal.tau2.reward_info import RewardInfo
from uxlocal.tau2.upstream_source import checkout_root
from uxlocal.tau2.upstream_words import Tau2Words

from .compare import COMPONENTS, component, reward_record
from .episodes import read_episodes
from .report import CONFORMANCE_DOMAINS

SEATS = ("agent", "user", "judge")
"""The recording's seats; our model roles carry the same names."""
EpisodeRunner = Callable[[Mapping[str, Engine], list[EpisodeSpec]], object]
"""Runs episode programs under the scheduler with each role bound to an engine. The scheduler sits
above the tau2 runtime, so the caller hands it in (the CLI through ``clikit``, tests directly)."""


@dataclass
class EpisodeReport:
    """One domain's agreement with the recording: requests and episodes equal, and what differed."""

    domain: str
    calls: int = 0
    calls_equal: int = 0
    episodes: int = 0
    episodes_equal: int = 0
    infrastructure: int = 0
    """Episodes upstream raised in (malformed arguments), all expected to end as infrastructure_error."""
    infrastructure_equal: int = 0
    seconds: float = 0.0
    mismatches: list[str] = field(default_factory=list)

    def note(self, text: str, keep: int) -> None:
        """Keep the first ``keep`` mismatch descriptions."""
        if len(self.mismatches) < keep:
            self.mismatches.append(text)


def assemble_checkout(src_checkout: Path, data_dir: Path, into: Path) -> Path:
    """Link a tau2-bench checkout together in ``into``: ``src`` from upstream, ``data/tau2`` from data.

    For a source tree and a data folder kept apart (as ``../shared`` keeps them); nothing is copied.
    """
    root = into / "tau2-bench"
    (root / "data").mkdir(parents=True, exist_ok=True)
    for link, target in ((root / "src", src_checkout / "src"), (root / "data" / "tau2", data_dir)):
        if not link.exists():
            link.symlink_to(target.resolve())
    return root


def check_domain(recording: Path, checkout: Path, run: EpisodeRunner, *, keep: int = 20) -> EpisodeReport:
    """Replay every episode of one domain's recording file and count what equals upstream's."""
    started = time.perf_counter()
    data = read_episodes(recording)
    name = data["domain"]
    report = EpisodeReport(name)
    domain = load_domain(checkout, name)
    words = Tau2Words.load(checkout, name)
    if not words.comparable:
        raise ValueError(f"{checkout} is not a tau2-bench checkout (data/tau2 and src/tau2) for {name}")
    config = data["run_config"]
    seats = UpstreamSeats.build(words, domain, Limits(config["max_steps"], config["max_errors"]))
    tasks = {task.id: task for task in load_tasks(checkout, name, split=None)}
    for episode in data["episodes"]:
        setup = UpstreamSetup(domain, tasks[episode["task_id"]], 0, seats, seed=config["trial_seed"])
        _check_episode(report, episode, setup, data["tools_as_sent"], run, keep)
    report.seconds = time.perf_counter() - started
    return report


def _check_episode(report: EpisodeReport, episode: dict[str, Any], setup: UpstreamSetup,
                   tools_as_sent: list[str], run: EpisodeRunner, keep: int) -> None:
    queues = {seat: deque(episode["script"][seat]) for seat in SEATS}

    def answer(prepared: PreparedRequest) -> dict[str, Any]:
        reply = queues[prepared.request.role].popleft()
        return {"text": reply.get("content") or "", "tool_calls": reply.get("tool_calls")}

    engine = FakeEngine(answer, identity="episode-script")
    outcomes: list[Outcome] = []

    def program(ctx: EpisodeContext) -> Any:
        outcome = yield from upstream_episode(ctx, setup)
        outcomes.append(outcome)
        return outcome

    case = episode["case_id"]
    run(dict.fromkeys(SEATS, engine), [EpisodeSpec(case, program)])
    sent = [p.request for p in engine.requests]
    recorded = episode["calls"]
    report.calls += len(recorded)
    for k, call in enumerate(recorded):
        why = _call_difference(call, sent[k] if k < len(sent) else None, tools_as_sent)
        report.calls_equal += why is None
        if why:
            report.note(f"{case} call {k} ({call['seat']}): {why}", keep)
    if len(sent) > len(recorded):
        report.note(f"{case}: {len(sent) - len(recorded)} requests more than upstream's", keep)
    report.episodes += 1
    why = _episode_difference(episode, outcomes[0] if outcomes else None)
    report.episodes_equal += why is None
    if episode["result"] is None:
        report.infrastructure += 1
        report.infrastructure_equal += why is None
    if why:
        report.note(f"{case}: {why}", keep)


def _call_difference(call: dict[str, Any], ours: GenRequest | None, tools_as_sent: list[str]) -> str | None:
    """Say how our request differs from upstream's recorded one, or None when they are equal."""
    if ours is None:
        return "we sent no such request"
    theirs = call["request"]
    if ours.role != call["seat"]:
        return f"seat {ours.role} instead of {call['seat']}"
    if json.loads(json.dumps(list(ours.messages))) != theirs["messages"]:
        return _first_message_difference(list(ours.messages), theirs["messages"])
    tools = list(ours.tools) if ours.tools else None
    if tools != theirs.get("tools"):
        return "tools differ"
    if tools is not None and json.dumps(tools) != tools_as_sent[call["tools_as_sent"]]:
        return "tools in another key order"
    mine = {"tool_choice": ours.tool_choice, "temperature": ours.sampling.temperature,
            "seed": ours.sampling.seed}
    for key, value in mine.items():
        if theirs.get(key) != value:
            return f"{key} {value!r} instead of {theirs.get(key)!r}"
    return None


def _first_message_difference(ours: Sequence[Any], theirs: list[dict[str, Any]]) -> str:
    for k, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if json.loads(json.dumps(a)) != b:
            return f"message {k} differs: ours {json.dumps(a)[:200]} / upstream {json.dumps(b)[:200]}"
    return f"{len(ours)} messages instead of {len(theirs)}"


def _episode_difference(episode: dict[str, Any], outcome: Outcome | None) -> str | None:
    """Say how our episode's ending differs from upstream's, or None when termination and reward agree."""
    if outcome is None:
        return "our episode failed (see the scheduler's log)"
    result = episode["result"]
    if result is None:  # upstream raised: its batch runner stores an infrastructure error
        ok = outcome.termination == INFRASTRUCTURE_ERROR and outcome.reward is None
        return None if ok else f"ended {outcome.termination} (reward {outcome.reward}), not upstream's error"
    if outcome.termination != result["termination_reason"]:
        return f"termination {outcome.termination} instead of {result['termination_reason']}"
    if outcome.reward != result["reward"]:
        return f"reward {outcome.reward} instead of {result['reward']}"
    ours = reward_record(RewardInfo.model_validate(outcome.info.get("reward_info") or {}))
    theirs = reward_record(RewardInfo.model_validate(result["reward_info"]))
    keys = [k for k in COMPONENTS if component(ours.get(k)) != component(theirs.get(k))]
    if keys:
        detail = "; ".join(f"{k}: ours {ours.get(k)} / upstream {theirs.get(k)}" for k in keys)
        return f"reward info differs in {detail}"
    return None


def episodes_table(reports: Sequence[EpisodeReport]) -> str:
    """Return the per-domain agreement as a Markdown table, a total row last."""
    head = ("domain", "requests equal", "episodes equal", "infrastructure errors as upstream", "time")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = [*reports]
    if len(reports) > 1:
        total = EpisodeReport("total", seconds=sum(r.seconds for r in reports))
        for name in ("calls", "calls_equal", "episodes", "episodes_equal", "infrastructure",
                     "infrastructure_equal"):
            setattr(total, name, sum(getattr(r, name) for r in reports))
        rows.append(total)
    for r in rows:
        cells = (r.domain, f"{r.calls_equal}/{r.calls}", f"{r.episodes_equal}/{r.episodes}",
                 f"{r.infrastructure_equal}/{r.infrastructure}", f"{r.seconds:.1f} s")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def recorded_domains(folder: Path) -> list[str]:
    """List the domains a recording folder holds (``<domain>.json.gz``), the suite's order first."""
    found = {path.name.removesuffix(".json.gz") for path in folder.glob("*.json.gz")}
    return [d for d in CONFORMANCE_DOMAINS if d in found] + sorted(found - set(CONFORMANCE_DOMAINS))


def find_checkout(data_dir: Path, upstream: Path | None, scratch: Path) -> Path:
    """Return a tau2-bench checkout for the words: ``data_dir``'s own, else one linked in ``scratch``.

    ``ValueError`` names both paths when neither gives upstream's ``src/tau2``.
    """
    own = checkout_root(tau2_root(data_dir))
    if own is not None:
        return own
    if upstream is not None and (upstream / "src" / "tau2").is_dir():
        return assemble_checkout(upstream, tau2_root(data_dir), scratch)
    given = f" and {upstream} has no src/tau2" if upstream is not None else ""
    raise ValueError(f"{data_dir} is not inside a tau2-bench checkout{given}: point --tau2-data at a "
                     "checkout, or --upstream at tau2-bench's source "
                     "(e.g. ../shared/upstream/tau2-bench-8ebb749)")


def check_folder(folder: Path, checkout: Path, run: EpisodeRunner, domains: Sequence[str] | None = None,
                 *, keep: int = 20) -> list[EpisodeReport]:
    """Replay each domain's recording in ``folder`` (or ``domains``); ``ValueError`` if one is missing."""
    names = list(domains) if domains else recorded_domains(folder)
    missing = [n for n in names if not (folder / f"{n}.json.gz").is_file()]
    if missing or not names:
        raise ValueError(f"{folder}: no episode recording for {', '.join(missing) or 'any domain'}")
    return [check_domain(folder / f"{n}.json.gz", checkout, run, keep=keep) for n in names]
