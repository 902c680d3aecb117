"""PALATE's episode programs: rubric induction, trajectories, agreement scoring, realism trials.

Layer contract: generators that yield ``GenRequest``s and record turns and verdicts on their
``EpisodeContext``; no store, no files, no engine (episode.py's contract).

Every program that needs a user's rubric asks for the same induction request (greedy, same
prompt), so the scheduler generates it once per user and serves the rest from its cache; the
``induce/<user>`` episode is the one that records it as the ``rubric`` verdict.

Trajectory (one session): the card's greeting opens as the candidate's turn 0; then the
simulator and the candidate alternate. The session stops when the simulator writes ``[QUIT]``
(``user_quit``), after ``max_turns`` candidate replies plus the simulator's reaction to the last
one (``turn_cap``), or early on an empty turn or a generation error (``empty_user_turn``,
``empty_reply``, ``context_window``, ``error``). The stop reason is the episode's termination.
Then the judge scores every reply with the general rubric and the user's rubric (the user's next
turn as evidence), and the whole session with the session rubric, all in one batch.

Verdict names: ``general_turn:N``, ``personal_turn:N`` (N = the reply's number, from 0),
``session``; ``agree_general:K``, ``agree_personal:K``, ``agree_personal_noreact:K`` (K = the
turn's index in the held-out session); ``realism``; ``rubric``. ``value`` holds the judge's
parsed output under ``verdict`` plus the facts the views need.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.episode import EpisodeContext, Outcome, Program
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.suites.palate.adapters import adapter_name
from uxlocal.suites.palate.options import Candidate, PalateConfig
from uxlocal.suites.palate.profiles import Card
from uxlocal.suites.palate.render import (
    CharacterView,
    JudgeWindow,
    Turn,
    candidate_messages,
    card_view,
    induce_messages,
    judge_personal_messages,
    judge_session_messages,
    judge_turn_messages,
    lora_sim_messages,
    parse_user_turn,
    prompted_sim_messages,
    realism_messages,
    session_history,
    session_view,
)
from uxlocal.suites.palate.rubrics import (
    GeneralTurnVerdict,
    InducedRubric,
    PersonalScore,
    PersonalVerdict,
    Rubric,
    SessionVerdict,
    general_score,
    induction_examples,
    personal_score,
    rubric_from_verdict,
    session_score,
)
from uxlocal.suites.palate.users import QUIT, Session, UserData

GENERAL_MAX_TOKENS = 96
SESSION_MAX_TOKENS = 110
PERSONAL_MAX_TOKENS = 40


def _json(role: str, messages: list[dict[str, str]], schema: Any, max_tokens: int, tag: str) -> GenRequest:
    return GenRequest(
        role, tuple(messages), Sampling(max_tokens=max_tokens), JsonSchema.from_model(schema), tag=tag
    )


def _window(cfg: PalateConfig) -> JudgeWindow:
    return JudgeWindow(cfg.judge_context_turns, cfg.judge_turn_chars)


def rubric_request(user: UserData, cfg: PalateConfig) -> GenRequest:
    """The induction request for ``user`` (identical for every episode that needs the rubric)."""
    examples = induction_examples(user.train, count=cfg.induction_examples)
    return _json("judge", induce_messages(user, examples), InducedRubric, cfg.rubric_max_tokens, "induce")


def simulator_request(
    kind: str, user: UserData, view: CharacterView, history: list[Turn], cfg: PalateConfig, tag: str
) -> GenRequest:
    """The user seat's next message: prompted (profile + examples) or adapted (the user's LoRA)."""
    sampling = Sampling(temperature=cfg.user_temperature, max_tokens=cfg.user_max_tokens)
    if kind == "lora":
        return GenRequest(
            "user",
            tuple(lora_sim_messages(view, user.lang, history)),
            sampling,
            lora=adapter_name(user.user_id),
            tag=tag,
        )
    messages = prompted_sim_messages(user, view, history, examples=cfg.example_turns)
    return GenRequest("user", tuple(messages), sampling, tag=tag)


def induce_program(ctx: EpisodeContext, user: UserData, cfg: PalateConfig) -> Program:
    """Induce (or fall back to) the user's rubric and record it with its hash and version."""
    result = yield rubric_request(user, cfg)
    rubric = rubric_from_verdict(user, result.parsed if result.valid else None)
    ctx.verdict(
        "rubric",
        result=result,
        label=rubric.version,
        valid=result.valid,
        value={**rubric.payload(), "sha256": rubric.sha256(), "version": rubric.version},
    )
    return Outcome(
        rubric.source,
        info={
            "kind": "induce",
            "user_id": user.user_id,
            "rubric_sha256": rubric.sha256(),
            "rubric_version": rubric.version,
            "rubric_source": rubric.source,
        },
    )


# ---- trajectories -----------------------------------------------------------------------------


@dataclass
class _Conversation:
    history: list[Turn]
    replies: list[int]
    """Index in ``history`` of every candidate reply."""
    stop: str = "turn_cap"


def trajectory_program(
    ctx: EpisodeContext, candidate: Candidate, user: UserData, card: Card, kind: str, cfg: PalateConfig
) -> Program:
    """One free-form session between a simulator of ``user`` and ``candidate`` on ``card``, then judged."""
    view = card_view(card, user.lang)
    convo = yield from _converse(ctx, candidate, user, card, view, kind, cfg)
    rubric_result = yield rubric_request(user, cfg)
    rubric = rubric_from_verdict(user, rubric_result.parsed if rubric_result.valid else None)
    asks = _trajectory_judging(view, rubric, convo, cfg)
    results: list[GenResult] = (yield asks) if asks else []
    _record_trajectory_verdicts(ctx, convo, rubric, results)
    info = {
        "kind": "trajectory",
        "candidate": candidate.name,
        "candidate_role": candidate.role,
        "user_id": user.user_id,
        "card_id": card.id,
        "simulator": kind,
        "stop_reason": convo.stop,
        "candidate_turns": len(convo.replies),
        "user_turns": sum(s == "user" for s, _ in convo.history),
        "rubric_sha256": rubric.sha256(),
        "rubric_source": rubric.source,
        "lang": user.lang,
    }
    return Outcome(convo.stop, info=info)


def _converse(
    ctx: EpisodeContext,
    candidate: Candidate,
    user: UserData,
    card: Card,
    view: CharacterView,
    kind: str,
    cfg: PalateConfig,
) -> Any:
    greeting = card.greeting.get(user.lang)
    convo = _Conversation([("character", greeting)], [])
    ctx.turn("assistant", greeting, meta={"source": "greeting", "card_id": card.id})
    candidate_sampling = Sampling(temperature=cfg.candidate_temperature, max_tokens=cfg.candidate_max_tokens)
    for step in range(cfg.max_turns + 1):
        said = yield simulator_request(kind, user, view, convo.history, cfg, f"user:{step}")
        if said.finish_reason in ("error", "context_window"):
            convo.stop = said.finish_reason
            break
        text, quit_ = parse_user_turn(said.text)
        if quit_ or text:
            shown = f"{text} {QUIT}".strip() if quit_ else text
            ctx.turn("user", shown, model_role="user", result=said, meta={"simulator": kind, "quit": quit_})
            convo.history.append(("user", shown))
        if quit_ or not text:
            convo.stop = "user_quit" if quit_ else "empty_user_turn"
            break
        if step == cfg.max_turns:
            break  # the last user turn is the reaction to the last reply
        reply = yield GenRequest(
            candidate.role,
            tuple(candidate_messages(card, user.lang, convo.history)),
            candidate_sampling,
            tag=f"reply:{step}",
        )
        if reply.finish_reason in ("error", "context_window") or not reply.text.strip():
            convo.stop = (
                reply.finish_reason if reply.finish_reason in ("error", "context_window") else "empty_reply"
            )
            break
        ctx.turn("assistant", reply.text, model_role=candidate.role, result=reply)
        convo.replies.append(len(convo.history))
        convo.history.append(("character", reply.text))
    return convo


def _trajectory_judging(
    view: CharacterView, rubric: Rubric, convo: _Conversation, cfg: PalateConfig
) -> list[GenRequest]:
    window = _window(cfg)
    asks = []
    for n, idx in enumerate(convo.replies):
        before, reply = convo.history[:idx], convo.history[idx][1]
        evidence = convo.history[idx + 1][1] if idx + 1 < len(convo.history) else None
        asks.append(
            _json(
                "judge",
                judge_turn_messages(view, before, reply, window),
                GeneralTurnVerdict,
                GENERAL_MAX_TOKENS,
                f"general:{n}",
            )
        )
        asks.append(
            _json(
                "judge",
                judge_personal_messages(view, rubric, before, reply, evidence, window),
                PersonalVerdict if evidence is not None else PersonalScore,
                PERSONAL_MAX_TOKENS,
                f"personal:{n}",
            )
        )
    if convo.replies:
        asks.append(
            _json(
                "judge",
                judge_session_messages(view, convo.history, convo.stop, window),
                SessionVerdict,
                SESSION_MAX_TOKENS,
                "session",
            )
        )
    return asks


def _record_trajectory_verdicts(
    ctx: EpisodeContext, convo: _Conversation, rubric: Rubric, results: list[GenResult]
) -> None:
    for n, _idx in enumerate(convo.replies):
        general, personal = results[2 * n], results[2 * n + 1]
        parsed_g = general.parsed if general.valid else None
        parsed_p = personal.parsed if personal.valid else None
        ctx.verdict(
            f"general_turn:{n}", result=general, score=general_score(parsed_g), value={"verdict": parsed_g}
        )
        ctx.verdict(
            f"personal_turn:{n}",
            result=personal,
            score=personal_score(parsed_p),
            label=(parsed_p or {}).get("reaction"),
            value={"verdict": parsed_p, "rubric_sha256": rubric.sha256(), "rubric_source": rubric.source},
        )
    if convo.replies:
        session = results[-1]
        parsed = session.parsed if session.valid else None
        ctx.verdict("session", result=session, score=session_score(parsed), value={"verdict": parsed})


# ---- agreement with held-out ratings ----------------------------------------------------------


def agreement_program(ctx: EpisodeContext, user: UserData, session: Session, cfg: PalateConfig) -> Program:
    """Score every rated reply of a held-out session three ways; the human rating rides along."""
    rubric_result = yield rubric_request(user, cfg)
    rubric = rubric_from_verdict(user, rubric_result.parsed if rubric_result.valid else None)
    view, window = session_view(session), _window(cfg)
    rated = session.rated()
    scorers = ["general", "personal"] + (["personal_noreact"] if cfg.agreement_without_reaction else [])
    asks = []
    for k, turn in rated:
        before, evidence = session_history(session, k), session.turns[k + 1].text
        asks += [
            _json(
                "judge",
                judge_turn_messages(view, before, turn.text, window),
                GeneralTurnVerdict,
                GENERAL_MAX_TOKENS,
                f"agree_general:{k}",
            ),
            _json(
                "judge",
                judge_personal_messages(view, rubric, before, turn.text, evidence, window),
                PersonalVerdict,
                PERSONAL_MAX_TOKENS,
                f"agree_personal:{k}",
            ),
        ]
        if cfg.agreement_without_reaction:
            asks.append(
                _json(
                    "judge",
                    judge_personal_messages(view, rubric, before, turn.text, None, window),
                    PersonalScore,
                    PERSONAL_MAX_TOKENS,
                    f"agree_personal_noreact:{k}",
                )
            )
    results = iter((yield asks))
    for k, turn in rated:
        facts = {
            "human_rating": turn.rating,
            "human_reaction": turn.reaction,
            "rubric_sha256": rubric.sha256(),
        }
        for scorer in scorers:
            result = next(results)
            parsed = result.parsed if result.valid else None
            score = general_score(parsed) if scorer == "general" else personal_score(parsed)
            ctx.verdict(
                f"agree_{scorer}:{k}",
                result=result,
                score=score,
                label=(parsed or {}).get("reaction"),
                value={"verdict": parsed, **facts},
            )
    return Outcome(
        "judged",
        info={
            "kind": "agreement",
            "user_id": user.user_id,
            "session_id": session.session_id,
            "rated_turns": len(rated),
            "rubric_sha256": rubric.sha256(),
            "rubric_source": rubric.source,
        },
    )


# ---- realism (2AFC) ---------------------------------------------------------------------------


def simulated_first(key: str, index: int) -> bool:
    """Whether trial ``index`` of a (simulator, user) shows the simulated turn as A.

    Sides alternate trial by trial (the first side is a coin fixed by ``key``), so a judge that
    always answers "A" scores exactly 0.5 on an even number of trials instead of whatever a run of
    coin flips gives.
    """
    start = hashlib.sha256(key.encode()).digest()[0] % 2 == 0
    return start if index % 2 == 0 else not start


def realism_program(
    ctx: EpisodeContext,
    user: UserData,
    session: Session,
    turn_idx: int,
    kind: str,
    cfg: PalateConfig,
    first: bool,
) -> Program:
    """Simulate the user's turn ``turn_idx`` of a held-out session; the judge guesses which is real.

    ``first``: show the simulated turn as A (the plan alternates it, see ``simulated_first``).
    """
    view, window = session_view(session), _window(cfg)
    history = session_history(session, turn_idx)
    real = session.turns[turn_idx].text
    simulated = yield simulator_request(kind, user, view, history, cfg, "realism:user")
    text = simulated.text.strip() or "…"
    ctx.turn("user", text, model_role="user", result=simulated, meta={"simulator": kind, "real": real})
    a, b = (text, real) if first else (real, text)
    sim_label = "A" if first else "B"
    pick = yield GenRequest(
        "judge",
        tuple(realism_messages(view, history, a, b, window)),
        Sampling(max_tokens=2),
        Choice(("A", "B")),
        tag="realism:judge",
    )
    picked_sim = (pick.parsed == sim_label) if pick.valid else None
    p_sim = (pick.label_probs or {}).get(sim_label)
    ctx.verdict(
        "realism",
        result=pick,
        label=pick.parsed if pick.valid else None,
        score=p_sim,
        value={
            "simulator": kind,
            "sim_label": sim_label,
            "picked_simulated": picked_sim,
            "real": real,
            "simulated": simulated.text,
        },
    )
    return Outcome(
        "judged",
        reward=None if picked_sim is None else float(picked_sim),
        info={
            "kind": "realism",
            "user_id": user.user_id,
            "simulator": kind,
            "session_id": session.session_id,
            "turn_idx": turn_idx,
        },
    )
