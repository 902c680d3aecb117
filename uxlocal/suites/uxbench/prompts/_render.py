"""Chat messages for every UXBench request, rendered from this folder's Jinja files.

Layer contract: items in, ``[{"role", "content"}]`` lists out; no engine, no store, no I/O
beyond reading the templates. The prompt wording is ours (spec ``uxbench.md`` §8 forbids
copying upstream's), in a zh and an en version picked by ``item.lang``.

Decisions (the spec leaves them open or we deviate on purpose):

- One pointwise judge prompt (``pointwise_label``) serves T1, T2 and T3. T3 fills it the way
  upstream's GRM did (§2.3): the failed reply is the only prior turn, the complaint is the
  user's latest message. So T1 accuracy measures the very judge prompt that produces T2 Good%
  and T3 Recovery Rate, which is how spec §7 asks a proxy judge to be calibrated.
- Judge prompts are one user message with no system message (as upstream, §2.1, §2.3), which
  also works with chat templates that have no system role.
- In transcripts every non-user role, system included, is shown as the assistant (§1.5).
- T2 generation sends ``item.messages`` verbatim (it already ends with the query; §7.3).
- T3 generation is the multi-turn chat ``history..., assistant failed_response, user
  complaint`` with no system prompt by default (§2.5 variant (a), the run_eval code path);
  ``system_prompt=True`` adds our short recovery instruction (``recovery_system``).
- Nothing here truncates: to fit a small window, pass ``item.model_copy(update={"history":
  item.history[-k:]})``; the run should record ``k``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Literal

import jinja2
from pydantic import BaseModel, ValidationError

from uxlocal.lang import Lang
from uxlocal.suites.uxbench.data import EvalItem, JudgeItem, RecoveryItem, Turn

PROMPTS_DIR: Path = Path(__file__).resolve().parent
JudgeMode = Literal["label", "reason"]

_LABELS: dict[str, tuple[str, str]] = {"en": ("good", "bad"), "zh": ("好", "差")}
_SPEAKERS: dict[str, tuple[str, str]] = {"en": ("User: ", "Assistant: "), "zh": ("用户：", "助手：")}
_NO_HISTORY: dict[str, str] = {"en": "(none)", "zh": "（无）"}

Message = dict[str, str]


def labels_for(lang: Lang) -> tuple[str, str]:
    """(good label, bad label) the judge must answer with: the engine's Choice constraint."""
    return _LABELS[lang]


def render_transcript(turns: Sequence[Turn], lang: Lang) -> str:
    """One ``speaker: text`` line per turn; any non-user role shows as the assistant."""
    if not turns:
        return _NO_HISTORY[lang]
    user, assistant = _SPEAKERS[lang]
    return "\n".join((user if t.role == "user" else assistant) + t.content for t in turns)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(PROMPTS_DIR), undefined=jinja2.StrictUndefined,
                              autoescape=False, keep_trailing_newline=False)


def _render(name: str, lang: Lang, **values: str) -> str:
    good, bad = labels_for(lang)
    return _environment().get_template(f"{name}.{lang}.j2").render(good=good, bad=bad, **values)


def _pointwise(lang: Lang, mode: JudgeMode, history: Sequence[Turn], query: str, reply: str) -> list[Message]:
    text = _render(f"pointwise_{mode}", lang, transcript=render_transcript(history, lang), query=query,
                   response=reply)
    return [{"role": "user", "content": text}]


def judge_messages(item: JudgeItem, mode: JudgeMode = "label") -> list[Message]:
    """T1: would the user like ``item.response``? Label or reason mode.

    ``label`` asks for exactly one label (constrain with ``Choice(labels_for(item.lang))``);
    ``reason`` asks for a JSON object ``{reasoning, verdict}`` (constrain with
    ``reason_model(item.lang)``).
    """
    return _pointwise(item.lang, mode, item.history, item.query, item.response)


def eval_judge_messages(item: EvalItem, reply: str) -> list[Message]:
    """T2: would the user like the candidate's ``reply`` to ``item.query``? Label mode."""
    return _pointwise(item.lang, "label", item.history, item.query, reply)


def recovery_judge_messages(item: RecoveryItem, reply: str) -> list[Message]:
    """T3: does ``reply`` satisfy the complaining user? Label mode.

    The judge sees the failed reply and the complaint, not the earlier history (as upstream's
    GRM, spec §1.4); an empty failed reply leaves the transcript empty.
    """
    failed = [Turn(role="assistant", content=item.failed_response)] if item.failed_response.strip() else []
    return _pointwise(item.lang, "label", failed, item.user_complaint, reply)


def _as_messages(turns: Sequence[Turn]) -> list[Message]:
    return [{"role": t.role, "content": t.content} for t in turns]


def eval_generation_messages(item: EvalItem) -> list[Message]:
    """T2 candidate chat: the item's messages verbatim, ending with the user query."""
    return _as_messages(item.messages)


def recovery_generation_messages(item: RecoveryItem, *, system_prompt: bool = False) -> list[Message]:
    """T3 candidate chat: history, the failed reply as assistant, the complaint as user.

    ``system_prompt=True`` puts our recovery instruction first (merged into a leading system
    turn of the history, since several chat templates reject two system messages).
    """
    chat = [*_as_messages(item.history), {"role": "assistant", "content": item.failed_response},
            {"role": "user", "content": item.user_complaint}]
    if not system_prompt:
        return chat
    instruction = _render("recovery_system", item.lang)
    if chat[0]["role"] == "system":
        return [{"role": "system", "content": chat[0]["content"] + "\n\n" + instruction}, *chat[1:]]
    return [{"role": "system", "content": instruction}, *chat]


class ReasonVerdictEn(BaseModel):
    """Reason-mode output for English prompts."""

    reasoning: str
    verdict: Literal["good", "bad"]


class ReasonVerdictZh(BaseModel):
    """Reason-mode output for Chinese prompts."""

    reasoning: str
    verdict: Literal["好", "差"]


def reason_model(lang: Lang) -> type[ReasonVerdictEn] | type[ReasonVerdictZh]:
    """Pydantic model of the reason-mode JSON; its schema is the engine's JSON constraint."""
    return ReasonVerdictZh if lang == "zh" else ReasonVerdictEn


def parse_verdict(text: str, lang: Lang, mode: JudgeMode = "label") -> int | None:
    """1 good, -1 bad, None when the output is not exactly what the prompt asked for.

    No lenient fallbacks (upstream's cascade guesses from stray characters): under a grammar
    constraint anything else is an engine fault, and unconstrained outputs that miss the format
    are counted as invalid, per class, by the metrics.
    """
    good, bad = labels_for(lang)
    if mode == "reason":
        try:
            text = reason_model(lang).model_validate(json.loads(text, strict=False)).verdict
        except (ValueError, ValidationError):
            return None
    answer = text.strip()
    answer = answer.lower() if lang == "en" else answer
    return 1 if answer == good else -1 if answer == bad else None


def prompt_hashes() -> dict[str, str]:
    """sha256 of every template file by name (includes too): part of the run identity."""
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(PROMPTS_DIR.glob("*.j2"))}
