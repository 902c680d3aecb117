"""Chat messages for every PALATE request, rendered from this package's ``prompts/*.j2`` files.

Layer contract: cards, users and conversation histories in; ``[{"role", "content"}]`` lists out;
no engine, no store, no I/O beyond reading templates. Each template exists in ``en`` and ``zh``;
the user's language picks it (a card falls back to the language it has).

Decisions the spec leaves open (palate.md marks them [U]):

- The card's greeting opens every session as the candidate's first turn; the simulator replies.
- The candidate sees a system prompt made from the card, then the conversation (assistant first).
- Simulators see the conversation with roles flipped (character turns as ``user``, the user's
  turns as ``assistant``), so the model writes the user's next message as its own turn. This is
  also the training format of the LoRA simulator, so serving and training match token for token.
- The prompted simulator gets the user's profile summary and example messages from the user's
  *training* sessions only; the adapted simulator gets a one-line task and no persona (the paper's
  point: style comes from the user's data, not from a description).
- Judges see a clipped window: the last ``context_turns`` turns before the judged reply, each
  cut to ``turn_chars`` characters (a third of that for Chinese), marked when clipped.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from uxlocal.suites.palate.profiles import Card
from uxlocal.suites.palate.rubrics import InductionExample, Rubric, clip
from uxlocal.suites.palate.users import QUIT, Session, UserData

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
Message = dict[str, str]
Turn = tuple[str, str]
"""``(speaker, text)`` with speaker ``character`` or ``user``."""

_LABELS = {
    "en": {"user": "User", "omitted": "(earlier turns omitted)", "none": "(none)"},
    "zh": {"user": "用户", "omitted": "（前面的对话已省略）", "none": "（无）"},
}
_ENDINGS = {
    "en": {
        "user_quit": "the user chose to leave",
        "turn_cap": "stopped at the turn limit",
        "other": "ended early",
    },
    "zh": {"user_quit": "用户主动离开", "turn_cap": "达到轮数上限后结束", "other": "提前结束"},
}


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPTS_DIR),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )


def render_template(template: str, lang: str, **values: Any) -> str:
    """One template in the user's language."""
    return _environment().get_template(f"{template}.{_lang(lang)}.j2").render(quit=QUIT, **values).strip()


def template_hashes() -> dict[str, str]:
    """sha256 of every template (part of the run identity: a changed prompt is a different run)."""
    return {
        f"palate/prompts/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(PROMPTS_DIR.glob("*.j2"))
    }


def _lang(lang: str) -> str:
    return "zh" if lang == "zh" else "en"



def _sentences(text: str, count: int) -> str:
    parts = re.split(r"(?<=[.!?。！？])\s*", text.strip())
    return " ".join(p for p in parts[:count] if p).strip()


@dataclass(frozen=True)
class CharacterView:
    """What prompts need to know about the character, in one language."""

    name: str
    brief: str
    """Who the character is, in a sentence or two."""
    setting: str
    boundaries: str
    lang: str


def card_view(card: Card, lang: str) -> CharacterView:
    """Return the card seen in ``lang`` (falls back to the card's other language)."""
    return CharacterView(
        card.name.get(lang),
        clip(_sentences(card.persona.get(lang), 2), 320, lang),
        clip(card.scenario.get(lang), 320, lang),
        clip(card.boundaries.get(lang), 320, lang),
        lang,
    )


def session_view(session: Session) -> CharacterView:
    """Return a held-out session's character (sessions need not come from pool cards)."""
    lang = session.lang
    none = _LABELS[_lang(lang)]["none"]
    description = session.character.description or none
    return CharacterView(session.character.name, clip(description, 320, lang), "", none, lang)


def session_history(session: Session, upto: int) -> list[Turn]:
    """Return turns ``0..upto-1`` of a rated session as ``(speaker, text)``."""
    return [(t.role, t.text) for t in session.turns[:upto]]


def transcript(
    history: Sequence[Turn], name: str, lang: str, *, last: int | None = None, turn_chars: int = 600
) -> str:
    """``Speaker: text`` lines; only the last ``last`` turns, each clipped."""
    labels = _LABELS[_lang(lang)]
    shown = list(history) if last is None or len(history) <= last else list(history[-last:])
    colon = "：" if _lang(lang) == "zh" else ": "
    lines = [labels["omitted"]] if len(shown) < len(history) else []
    for speaker, text in shown:
        who = labels["user"] if speaker == "user" else name
        lines.append(f"{who}{colon}{clip(text, turn_chars, lang)}")
    return "\n".join(lines) if lines else labels["none"]


# ---- the candidate ---------------------------------------------------------------------------


def candidate_messages(card: Card, lang: str, history: Sequence[Turn]) -> list[Message]:
    """System prompt from the card, then the conversation (greeting first, as the assistant)."""
    system = render_template(
        "rpa_system",
        lang,
        name=card.name.get(lang),
        persona=card.persona.get(lang),
        background=card.background.get(lang),
        relationship=card.relationship_to_user.get(lang),
        scenario=card.scenario.get(lang),
        boundaries=card.boundaries.get(lang),
        examples=[(line.speaker, line.get(lang)) for line in card.example_dialogue],
    )
    messages = [{"role": "system", "content": system}]
    messages += [{"role": "assistant" if s == "character" else "user", "content": t} for s, t in history]
    return messages


# ---- simulators ------------------------------------------------------------------------------


def _flipped(history: Sequence[Turn]) -> list[Message]:
    return [{"role": "user" if s == "character" else "assistant", "content": t} for s, t in history]


def example_user_turns(user: UserData, count: int, *, turn_chars: int = 300) -> list[str]:
    """``count`` of the user's own messages from training sessions, round-robin over sessions."""
    queues = [[t.text for t in s.turns if t.role == "user" and t.text.strip() != QUIT] for s in user.train]
    out: list[str] = []
    depth = 0
    while len(out) < count and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(out) < count:
                out.append(clip(queue[depth], turn_chars, user.lang))
        depth += 1
    return out


def prompted_sim_messages(
    user: UserData, view: CharacterView, history: Sequence[Turn], *, examples: int = 6
) -> list[Message]:
    """Return the prompted simulator's input: profile summary, example messages, the flipped conversation."""
    system = render_template(
        "sim_prompted_system",
        user.lang,
        summary=user.profile.summary,
        examples=example_user_turns(user, examples),
        name=view.name,
        brief=view.brief,
    )
    return [{"role": "system", "content": system}, *_flipped(history)]


def lora_sim_messages(view: CharacterView, lang: str, history: Sequence[Turn]) -> list[Message]:
    """Return the adapted simulator's input: a one-line task, then the flipped conversation.

    That is its training format.
    """
    system = render_template("sim_lora_system", lang, name=view.name, brief=view.brief)
    return [{"role": "system", "content": system}, *_flipped(history)]


def parse_user_turn(text: str) -> tuple[str, bool]:
    """Return the simulator's message without the quit marker, and whether it quit.

    ``[QUIT]`` anywhere (any case) ends the session; words before it are kept as a goodbye.
    """
    quit_ = bool(re.search(re.escape(QUIT), text, flags=re.I))
    cleaned = re.sub(re.escape(QUIT), "", text, flags=re.I).strip() if quit_ else text.strip()
    return cleaned, quit_


# ---- judges ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeWindow:
    """How much conversation the judge sees."""

    context_turns: int = 8
    turn_chars: int = 600


def judge_turn_messages(
    view: CharacterView, before: Sequence[Turn], reply: str, window: JudgeWindow
) -> list[Message]:
    """General rubric for one reply.

    Shares ``_reply_head`` (character, conversation, reply) with ``judge_personal_messages``:
    the two or three judge calls on one reply have one common prefix, which vLLM's prefix
    cache computes once; the rubric (here the limits and the five criteria) comes after it.
    """
    text = render_template(
        "judge_turn",
        view.lang,
        name=view.name,
        brief=view.brief,
        boundaries=view.boundaries,
        transcript=transcript(
            before, view.name, view.lang, last=window.context_turns, turn_chars=window.turn_chars
        ),
        reply=clip(reply, window.turn_chars * 2, view.lang),
    )
    return [{"role": "user", "content": text}]


def judge_session_messages(
    view: CharacterView, history: Sequence[Turn], stop_reason: str, window: JudgeWindow
) -> list[Message]:
    """Session rubric over the conversation (its last ``4 x context_turns`` turns)."""
    endings = _ENDINGS[_lang(view.lang)]
    text = render_template(
        "judge_session",
        view.lang,
        name=view.name,
        brief=view.brief,
        boundaries=view.boundaries,
        ending=endings.get(stop_reason, endings["other"]),
        transcript=transcript(
            history, view.name, view.lang, last=4 * window.context_turns, turn_chars=window.turn_chars // 2
        ),
    )
    return [{"role": "user", "content": text}]


def judge_personal_messages(
    view: CharacterView,
    rubric: Rubric,
    before: Sequence[Turn],
    reply: str,
    evidence: str | None,
    window: JudgeWindow,
) -> list[Message]:
    """Personalized rubric for one reply; ``evidence`` is the user's next message (None: without it).

    The user's criteria and the evidence come after the shared ``_reply_head`` (see
    ``judge_turn_messages``).
    """
    text = render_template(
        "judge_personal",
        view.lang,
        criteria=rubric.as_prompt(),
        name=view.name,
        brief=view.brief,
        transcript=transcript(
            before, view.name, view.lang, last=window.context_turns, turn_chars=window.turn_chars
        ),
        reply=clip(reply, window.turn_chars * 2, view.lang),
        evidence=None if evidence is None else clip(evidence, window.turn_chars, view.lang),
    )
    return [{"role": "user", "content": text}]


def induce_messages(user: UserData, examples: list[InductionExample]) -> list[Message]:
    """Ask the judge for this user's rubric from rated training replies."""
    return [{"role": "user", "content": render_template("induce_rubric", user.lang, examples=examples)}]


def realism_messages(
    view: CharacterView, history: Sequence[Turn], a: str, b: str, window: JudgeWindow
) -> list[Message]:
    """2AFC: which of two next user messages did the real user write."""

    def shown(text: str) -> str:
        body, quit_ = parse_user_turn(text)
        return (body + " " + QUIT).strip() if quit_ else clip(body, window.turn_chars, view.lang)

    text = render_template(
        "realism_2afc",
        view.lang,
        transcript=transcript(
            history, view.name, view.lang, last=window.context_turns, turn_chars=window.turn_chars
        ),
        a=shown(a),
        b=shown(b),
    )
    return [{"role": "user", "content": text}]
