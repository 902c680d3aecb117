"""``uxlocal run palate``: role-play agents through per-user simulators over a frozen panel.

The suite plans four kinds of episodes (``episodes.py``): ``induce/<user>`` (the user's rubric),
``traj/<candidate>/<simulator>/<user>/<card>/<trial>`` (a session, then judged),
``agree/<user>/<session>`` (held-out ratings vs rubric scores) and
``realism/<simulator>/<user>/<session>/<turn>`` (2AFC). Its report prints the three axes
separately, the user x candidate matrix with per-user ranks, the agreement table and the
realism rates, all read from ``suites/palate/views.sql``.

Roles: ``candidate:<name>`` per ``--candidates`` entry, ``user`` (the simulator seat; when no
``--model user=...`` is given it runs on the judge's model) and ``judge``.
"""

from __future__ import annotations

import random
from typing import Any

from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.episode import EpisodeSpec
from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel
from uxlocal.reportkit.model import ReportTable
from uxlocal.suites.base import DemoSpec, Suite, SuitePlan
from uxlocal.suites.palate.adapters import adapters_fingerprint, attach_adapters, find_adapter
from uxlocal.suites.palate.cardfiles import load_cards
from uxlocal.suites.palate.episodes import (
    agreement_program,
    induce_program,
    realism_program,
    simulated_first,
    trajectory_program,
)
from uxlocal.suites.palate.options import Candidate, PalateConfig, parse_candidates
from uxlocal.suites.palate.panel import load_panel, panel_cards
from uxlocal.suites.palate.render import template_hashes
from uxlocal.suites.palate.report import report_tables
from uxlocal.suites.palate.users import QUIT, Session, UserData, load_users

DEMO_CONFIG: dict[str, Any] = {
    "candidates": "embedded",
    "users": "u1,u2",
    "panel_cards": 2,
    "max_turns": 2,
    "candidate_max_tokens": 40,
    "user_max_tokens": 32,
    "induction_examples": 4,
    "heldout_sessions": 1,
    "realism_turns": 2,
    "judge_context_turns": 4,
    "judge_turn_chars": 300,
    "example_turns": 3,
    "agreement_without_reaction": False,
    "rubric_max_tokens": 200,
}
"""The demo: 1 candidate x 2 users x 2 cards, short turns, one held-out session per user; 79 s on
2 quiet CPU cores. The users are English ones: SmolLM2's tokenizer spends
about twice the tokens on Chinese (u3, u4), which doubles the time; the integration test covers a
Chinese user."""


def _bind(fn: Any, *args: Any) -> Any:
    return lambda ctx: fn(ctx, *args)


class Palate(Suite):
    """PALATE (palate.md): per-user simulators, personalized rubrics, three separate axes."""

    name = "palate"
    report_section = "uxlocal.suites.palate.section"
    help = (
        "Role-play agents through per-user simulators over a frozen card panel: three separate axes, "
        "rubric agreement with held-out ratings, simulator realism."
    )
    config_cls = PalateConfig
    roles = ("user", "judge")
    example = "--candidates embedded --users u1,u3 --panel-cards 2 --model judge=embedded"

    # ---- models ---------------------------------------------------------------------------
    def role_specs(self, config: SuiteConfig, specs: dict[str, str]) -> dict[str, str]:
        """Add ``candidate:<name>`` per ``--candidates`` entry; the user seat defaults to the judge model."""
        assert isinstance(config, PalateConfig)
        out = dict(specs)
        for candidate in parse_candidates(config.candidates):
            out.setdefault(candidate.role, candidate.spec)
        if "user" not in out and "judge" in out:
            out["user"] = out["judge"]
        return out

    def adapt_models(self, config: SuiteConfig, models: dict[str, ResolvedModel]) -> dict[str, ResolvedModel]:
        """Attach each user's LoRA simulator to the user seat's model when ``--simulator`` has lora."""
        assert isinstance(config, PalateConfig)
        if "lora" not in config.simulator_kinds or not config.needs_user_seat or "user" not in models:
            return models
        users = load_users(config.users, config.users_dir)
        adapters = {u.user_id: find_adapter(u, models["user"], config.adapters_dir) for u in users}
        return attach_adapters(models, adapters)

    def prompt_hashes(self, config: SuiteConfig) -> dict[str, str]:
        """Templates, the panel manifest, every user's data and (for lora) the adapters present."""
        assert isinstance(config, PalateConfig)
        hashes = template_hashes()
        panel, _ = load_panel(config.panel)
        hashes[f"palate/panel/{panel.name}"] = panel.sha256()
        users = load_users(config.users, config.users_dir)
        hashes.update({f"palate/users/{u.user_id}": u.sha256() for u in users})
        if "lora" in config.simulator_kinds:
            hashes["palate/adapters"] = adapters_fingerprint([u.user_id for u in users], config.adapters_dir)
        return hashes

    # ---- plan -----------------------------------------------------------------------------
    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """Induction, trajectory, agreement and realism episodes for the chosen users and panel."""
        assert isinstance(config, PalateConfig)
        users = load_users(config.users, config.users_dir)
        plan = SuitePlan([])
        if config.part_set & {"trajectories", "agreement"}:  # the parts that score with the user's rubric
            plan.episodes += [
                EpisodeSpec(
                    f"induce/{u.user_id}", _bind(induce_program, u, config), item_id=u.user_id, task="induce"
                )
                for u in users
            ]
            plan.items += [
                {
                    "item_id": u.user_id,
                    "task": "induce",
                    "data": {"user_id": u.user_id, "lang": u.lang, "sha256": u.sha256()},
                }
                for u in users
            ]
        if "trajectories" in config.part_set:
            self._plan_trajectories(plan, config, run, users)
        if "agreement" in config.part_set:
            self._plan_agreement(plan, config, run, users)
        if "realism" in config.part_set:
            self._plan_realism(plan, config, run, users)
        return plan

    def _plan_trajectories(
        self, plan: SuitePlan, config: PalateConfig, run: RunConfig, users: list[UserData]
    ) -> None:
        candidates = parse_candidates(config.candidates)
        if not candidates:
            raise InputError(
                None,
                None,
                "the trajectories part needs --candidates",
                "e.g. --candidates embedded, or --parts agreement,realism",
            )
        _check_bound(candidates, run)
        panel, where = load_panel(config.panel)
        cards = panel_cards(panel, load_cards(config.cards), where)[: config.panel_cards]
        pairs = [(u, c) for u in users for c in cards][: run.limit]
        plan.notes.append(
            f"panel {panel.name} v{panel.version}: {len(cards)} of {len(panel.cards)} cards; "
            f"{len(pairs)} user x card pairs x {len(candidates)} candidates x "
            f"{len(config.simulator_kinds)} simulator(s) x {config.trials} trial(s)"
        )
        for user, card in pairs:
            plan.items.append(
                {
                    "item_id": f"{user.user_id}/{card.id}",
                    "task": "trajectory",
                    "data": {"user_id": user.user_id, "card_id": card.id, "card_sha256": card.sha256()},
                }
            )
            for candidate, kind, trial in _product(candidates, config.simulator_kinds, range(config.trials)):
                plan.episodes.append(
                    EpisodeSpec(
                        f"traj/{candidate.name}/{kind}/{user.user_id}/{card.id}/{trial}",
                        _bind(trajectory_program, candidate, user, card, kind, config),
                        item_id=f"{user.user_id}/{card.id}",
                        task="trajectory",
                        trial=trial,
                    )
                )

    def _plan_agreement(
        self, plan: SuitePlan, config: PalateConfig, run: RunConfig, users: list[UserData]
    ) -> None:
        for user in users:
            for session in _heldout(user, config)[: run.limit]:
                item_id = f"{user.user_id}/{session.session_id}"
                plan.items.append(
                    {
                        "item_id": item_id,
                        "task": "agreement",
                        "data": {"user_id": user.user_id},
                        "source_file": str(user.folder / "sessions.jsonl"),
                        "source_line": user.lines.get(session.session_id),
                    }
                )
                plan.episodes.append(
                    EpisodeSpec(
                        f"agree/{item_id}",
                        _bind(agreement_program, user, session, config),
                        item_id=item_id,
                        task="agreement",
                    )
                )

    def _plan_realism(
        self, plan: SuitePlan, config: PalateConfig, run: RunConfig, users: list[UserData]
    ) -> None:
        trials = [
            (u, s, k)
            for u in users
            for s in _heldout(u, config)
            for k in realism_positions(s, config.realism_turns, run.seed)
        ][: run.limit]
        index: dict[str, int] = {}
        for user, session, k in trials:
            item_id = f"{user.user_id}/{session.session_id}/{k}"
            plan.items.append(
                {
                    "item_id": item_id,
                    "task": "realism",
                    "data": {"user_id": user.user_id, "turn": k},
                    "source_file": str(user.folder / "sessions.jsonl"),
                    "source_line": user.lines.get(session.session_id),
                }
            )
            position = index[user.user_id] = index.get(user.user_id, -1) + 1
            for kind in config.simulator_kinds:
                first = simulated_first(f"{run.seed}:{kind}:{user.user_id}", position)
                plan.episodes.append(
                    EpisodeSpec(
                        f"realism/{kind}/{item_id}",
                        _bind(realism_program, user, session, k, kind, config, first),
                        item_id=item_id,
                        task="realism",
                    )
                )

    # ---- report ---------------------------------------------------------------------------
    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """Axes 1-3, the user x candidate matrix, behaviour, agreement and realism tables."""
        return report_tables(con, run_id)

    def demo(self) -> DemoSpec:
        """One candidate, two users, two panel cards, every role on the embedded model."""
        roles = {"candidate:embedded": "embedded", "user": "embedded", "judge": "embedded"}
        return DemoSpec(dict(DEMO_CONFIG), roles)


def _check_bound(candidates: list[Candidate], run: RunConfig) -> None:
    missing = [c.role for c in candidates if c.role not in run.models]
    if missing:
        raise InputError(
            None,
            None,
            f"no model bound to {', '.join(missing)}",
            "candidates come from --candidates (or --model candidate:NAME=SPEC)",
        )


def _product(
    candidates: list[Candidate], kinds: list[str], trials: range
) -> list[tuple[Candidate, str, int]]:
    return [(c, k, t) for c in candidates for k in kinds for t in trials]


def _heldout(user: UserData, config: PalateConfig) -> list[Session]:
    return user.heldout[: config.heldout_sessions]


def realism_positions(session: Session, count: int, seed: int = 0) -> list[int]:
    """Indices of ``count`` real user turns to imitate (the final ``[QUIT]`` is never one), seeded."""
    positions = [k for k, t in enumerate(session.turns) if t.role == "user" and t.text.strip() != QUIT]
    rng = random.Random(f"{seed}:{session.session_id}")
    return sorted(rng.sample(positions, min(count, len(positions))))
