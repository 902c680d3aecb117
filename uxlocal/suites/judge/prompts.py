"""Judge prompts, laid out so what items share comes first and what differs comes last.

Layer contract: pure text building; no engine, no store.

Layout ``shared`` (the default): instructions, then the conversation (and for pairwise the two
replies), then the criterion's question and its answer options. K criteria on one conversation
render K prompts with one long common prefix, which vLLM's prefix cache computes once; the
per-turn unit also shares the conversation's earlier turns. Layout ``criterion_first`` puts the
question and options before the conversation: the same information, no shared prefix past the
instructions. It exists so ``benchmarks/judge_throughput.py`` can measure what the order buys.

The wording is ours, in English and Chinese; the rubric's language picks it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from uxlocal.suites.judge.rubrics import Criterion, Rubric

Layout = Literal["shared", "criterion_first"]

_TEXT = {
    "en": {
        "intro": "You are reviewing a conversation between a user and an AI assistant. Read it; "
        "a question about it comes after it.",
        "conversation": "Conversation:",
        "turn": "The question is about the assistant's last message in the conversation above.",
        "replies": "Two candidate replies to the user's last message:",
        "reply": "Reply {name}:",
        "question": "Question: {question}",
        "options": "Answer with exactly one of these options:",
        "reason": 'First explain your judgement briefly in "reasoning", then give the option in "verdict".',
        "roles": {"user": "User", "assistant": "Assistant", "system": "System"},
    },
    "zh": {
        "intro": "你在审阅一段用户与 AI 助手之间的对话。请先读完对话，问题在对话之后。",
        "conversation": "对话：",
        "turn": "问题针对上面对话中助手的最后一条消息。",
        "replies": "针对用户最后一条消息的两个候选回复：",
        "reply": "回复 {name}：",
        "question": "问题：{question}",
        "options": "只能回答下列选项之一：",
        "reason": '先在 "reasoning" 中简要说明理由，再在 "verdict" 中给出选项。',
        "roles": {"user": "用户", "assistant": "助手", "system": "系统"},
    },
}


def transcript(turns: Sequence[dict[str, str]], lang: str) -> str:
    """Return the conversation as ``Role: text`` blocks separated by blank lines."""
    roles = _TEXT[lang]["roles"]
    return "\n\n".join(f"{roles[t['role']]}: {t['content']}" for t in turns)


def _material(rubric: Rubric, turns: Sequence[dict[str, str]], pair: tuple[str, str] | None,
              per_turn: bool) -> list[str]:
    """Return the shared part: the conversation, and the replies or the per-turn pointer."""
    text = _TEXT[rubric.language]
    parts = [text["conversation"], transcript(turns, rubric.language)]
    if pair is not None:
        parts += [text["replies"], text["reply"].format(name="A") + "\n" + pair[0],
                  text["reply"].format(name="B") + "\n" + pair[1]]
    if per_turn:
        parts.append(text["turn"])
    return parts


def _ask(rubric: Rubric, criterion: Criterion, reason: bool) -> list[str]:
    """Return the varying part: the criterion's question and the answer options."""
    text = _TEXT[rubric.language]
    options = "\n".join(
        f"- {name}: {meaning}" if meaning else f"- {name}" for name, meaning in rubric.descriptions()
    )
    parts = [text["question"].format(question=criterion.question), text["options"] + "\n" + options]
    if reason:
        parts.append(text["reason"])
    return parts


def judge_messages(rubric: Rubric, criterion: Criterion, turns: Sequence[dict[str, str]], *,
                   pair: tuple[str, str] | None = None, per_turn: bool = False, reason: bool = False,
                   layout: Layout = "shared") -> list[dict[str, str]]:
    """One user message asking ``criterion`` about ``turns`` (and ``pair`` for pairwise rubrics)."""
    intro = [_TEXT[rubric.language]["intro"]]
    material = _material(rubric, turns, pair, per_turn)
    ask = _ask(rubric, criterion, reason)
    parts = intro + (material + ask if layout == "shared" else ask + material)
    return [{"role": "user", "content": "\n\n".join(parts)}]


def template_sha256() -> str:
    """Hash of this module's wording (part of the run identity: a changed prompt is a new run)."""
    return hashlib.sha256(repr(sorted(_TEXT.items(), key=lambda kv: kv[0])).encode("utf-8")).hexdigest()
