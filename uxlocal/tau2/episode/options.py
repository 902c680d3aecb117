"""Options every suite that plays tau2 episodes shares, and the seats they imply for one domain.

``uxlocal run tau2`` and ``uxlocal run userproxy`` both build their configs on ``Tau2Options``, so a
tau2 option is declared once (help text, default, bounds) and means the same in both commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from uxlocal.config import SuiteConfig
from uxlocal.engine.base import Sampling
from uxlocal.errors import InputError
from uxlocal.tau2 import (
    DEFAULT_MAX_ERRORS,
    DEFAULT_MAX_STEPS,
    DEFAULT_SPLIT,
    DEFAULT_TAU2_VERSION,
    Domain,
    Environment,
    Task,
    domain_spec,
    load_domain,
    load_tasks,
)

from ..data import data_hashes, resolve_data_dir
from ..registry import Tau2Version, expand_domains
from ..upstream_words import Tau2Words
from .agent import AGENT_ROLE, AgentSeat
from .judge import JUDGE_ROLE, JudgeSeat
from .prompts import prompt_hashes
from .state import Limits
from .upstream import UpstreamSeats
from .user_proxy import USER_ROLE

NOT_COMPARABLE = "not comparable with tau2-bench"
"""What a run's notes, info and report say of episodes run in our protocol and words."""


class Tau2Options(SuiteConfig):
    """tau2 data, task selection, limits and seat budgets shared by the tau2-playing suites."""

    not_in_identity: ClassVar[dict[str, str]] = {
        "tau2_data": "where the data sits; the sha256 of every file read is in the identity instead",
    }

    tau2_data: Path | None = None
    """Folder with domains/<domain>/tasks.json, or a tau2-bench checkout (default: $UXLOCAL_TAU2_DATA)."""
    split: str = DEFAULT_SPLIT
    """Task split from split_tasks.json (base = tau2's evaluation set)."""
    tasks: str | None = None
    """Comma-separated task ids (e.g. 0,5,12; retail/5 names one domain's task); default: the whole split."""
    trials: int = Field(default=1, ge=1)
    """Episodes per task (and proxy); pass^k is reported for k = 1..trials."""
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1)
    """Routed messages (agent, user, tool call, tool result) before an episode ends as max_steps."""
    max_errors: int = Field(default=DEFAULT_MAX_ERRORS, ge=1)
    """Tool errors plus unusable seat outputs before an episode ends as too_many_errors."""
    agent_max_tokens: int = Field(default=1024, ge=8)
    """Completion budget of one agent turn (tokens); a JSON turn cut off here is an error."""
    user_max_tokens: int = Field(default=512, ge=8)
    """Completion budget of one user-proxy turn (tokens)."""
    judge_max_tokens: int = Field(default=512, ge=24)
    """Completion budget of one NL-assertion verdict (tokens); caps the justification's length."""
    agent_temperature: float = Field(default=0.0, ge=0.0)
    """Agent sampling temperature (tau2 default 0); above 0 each episode derives its own seed."""
    user_temperature: float = Field(default=0.0, ge=0.0)
    """User-proxy sampling temperature (tau2 default 0)."""
    tool_grammar: Literal["strict", "loose"] = "strict"
    """strict: each tool's argument schema is in the turn grammar; loose: only the tool name is."""
    agent_first_tool: str | None = None
    """A tool the agent must call as its first move after each user message, in domains whose agent
    has it (e.g. KB_search: retrieve before answering, for models that never search on their own).
    A change to the benchmark's protocol, so it is part of the run identity; default: the agent is free."""
    tau2_version: Tau2Version = DEFAULT_TAU2_VERSION
    """Grading version: 8ebb749 (UserProxyBench's pin) or 1.0.1 (banking: read-log allowlist, numbers
    as floats, newest-first transactions); other domains grade the same under both."""
    protocol: Literal["auto", "upstream", "ours"] = "auto"
    """How episodes talk to the models. upstream: every model gets what tau2-bench 8ebb749 sends it
    (its words read from the checkout, native tool calls, trial seeds, no length cap; the budgets,
    --tool-grammar and --judge-nl do not apply), comparable with tau2-bench; needs --tau2-data to be a
    tau2-bench checkout. ours: one JSON turn per call under a grammar, our prompts; not comparable.
    auto: upstream on a checkout, ours elsewhere (a bare data folder, homenet)."""

    def load_domain(self, root: Path, name: str) -> Domain:
        """Load a domain graded as ``tau2_version`` says (live, predicted and gold environments alike)."""
        return load_domain(root, name, tau2_version=self.tau2_version)

    def upstream_words(self, root: Path, name: str) -> Tau2Words | None:
        """Return upstream's words when ``name``'s episodes run the upstream protocol, else None (ours).

        ``--protocol upstream`` without a checkout, or with ``--agent-first-tool`` (a change to
        upstream's protocol), is an input error.
        """
        if self.protocol == "ours":
            return None
        words = Tau2Words.load(root, name)
        if not words.comparable:
            if self.protocol == "upstream":
                raise InputError(f"--protocol upstream needs a tau2-bench checkout for {name!r}",
                                 "point --tau2-data at one (data/tau2 and src/tau2); homenet is ours",
                                 path=root)
            return None
        if self.agent_first_tool is not None:
            if self.protocol == "upstream":
                raise InputError("--agent-first-tool changes tau2-bench's protocol", "use --protocol ours")
            return None
        return words

    def protocol_note(self, name: str, words: Tau2Words | None) -> str:
        """Say which protocol a domain's episodes run and whether the numbers compare with tau2-bench."""
        if words is not None and words.source is not None:
            return (f"{name}: upstream protocol, comparable with tau2-bench 8ebb749 (words from "
                    f"{words.source.checkout}, sha256 {words.source.sha256[:12]})")
        why = ("--protocol ours" if self.protocol == "ours" else "--agent-first-tool" if self.agent_first_tool
               else "homenet is ours" if name == "homenet" else "no tau2-bench checkout in --tau2-data")
        return f"{name}: our protocol and words, {NOT_COMPARABLE} ({why})"

    def tau2_hashes(self, names: list[str]) -> dict[str, str]:
        """Return the tau2 part of a run's identity: our prompt files, every data file read, each protocol."""
        root = resolve_data_dir(self.tau2_data)
        return {**prompt_hashes(), **data_hashes(root, names), **protocol_hashes(self, root, names)}

    def selected_tasks(self, root: Path, name: str, limit: int | None) -> list[Task]:
        """Return one domain's tasks as ``--split`` and ``--tasks`` select them, at most ``limit``."""
        return load_tasks(root, name, split=self.split, task_ids=self.task_ids(name), limit=limit)

    def task_ids(self, domain: str) -> list[str] | None:
        """Return the ``--tasks`` ids for one domain (bare ids apply to every domain), or None."""
        if self.tasks is None:
            return None
        ids = []
        for raw in (part.strip() for part in self.tasks.split(",")):
            scope, sep, task_id = raw.partition("/")
            if raw and (not sep or scope == domain):
                ids.append(task_id if sep else raw)
        return ids

    def sampling(self, role: str) -> Sampling:
        """Return the decoding settings of one seat."""
        if role == AGENT_ROLE:
            return Sampling(temperature=self.agent_temperature, max_tokens=self.agent_max_tokens)
        if role == USER_ROLE:
            return Sampling(temperature=self.user_temperature, max_tokens=self.user_max_tokens)
        return Sampling(temperature=0.0, max_tokens=self.judge_max_tokens)


def upstream_seats(domain: Domain, words: Tau2Words, options: Tau2Options) -> UpstreamSeats:
    """Build the shared upstream-protocol seats of one domain (limits and agent temperature from options)."""
    limits = Limits(max_steps=options.max_steps, max_errors=options.max_errors)
    return UpstreamSeats.build(words, domain, limits, agent_temperature=options.agent_temperature)


def protocol_hashes(options: Tau2Options, root: Path, names: list[str]) -> dict[str, str]:
    """Return per domain the protocol its episodes run (run identity): ``ours`` or the words' sha256."""
    out = {}
    for name in names:
        words = options.upstream_words(root, name)
        out[f"tau2-protocol/{name}"] = f"upstream:{words.source.sha256}" if words and words.source else "ours"
    return out


def parse_domains(text: str, flag: str) -> list[str]:
    """Return the domain names of a comma-separated option, in order; unknown ones are an input error.

    ``all`` stands for ``domains.BENCHMARK_DOMAINS`` (it may be combined with others, e.g. ``all,mock``).
    """
    pieces = [name.strip() for name in text.split(",") if name.strip()]
    names = expand_domains(pieces)
    if not names:
        raise InputError(f"{flag} names no domain", f"e.g. {flag} retail")
    for name in names:
        try:
            domain_spec(name)
        except KeyError as err:
            raise InputError(str(err.args[0]), f"e.g. {flag} retail") from None
    return names


@dataclass(frozen=True)
class DomainSeats:
    """The seats every episode of one domain shares: agent, NL judge, and the episode limits."""

    agent: AgentSeat
    judge: JudgeSeat
    limits: Limits


def domain_seats(domain: Domain, options: Tau2Options) -> DomainSeats:
    """Build the shared seats of one domain from the options (the policy and tools are the domain's)."""
    probe = Environment(domain)
    agent = AgentSeat.build(policy=domain.policy_text(), tool_schemas=probe.tool_schemas("assistant"),
                            sampling=options.sampling(AGENT_ROLE), grammar=options.tool_grammar,
                            first_tool=options.agent_first_tool)
    return DomainSeats(agent, JudgeSeat(options.sampling(JUDGE_ROLE)),
                       Limits(max_steps=options.max_steps, max_errors=options.max_errors))


def user_tool_schemas(domain: Domain, task: Task) -> list[dict[str, Any]]:
    """Return the user tool schemas this task allows (empty for domains without user tools)."""
    env = Environment(domain)
    env.restrict_user_tools(task.user_tools)
    return env.tool_schemas("user")
