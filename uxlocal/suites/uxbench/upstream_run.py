"""UXBench's own protocol as episode programs (``uxlocal run uxbench --upstream DIR``).

Layer contract: episode programs over a released row (the dict as in the file), its validated
item (ids, breakdown keys, the transcript) and the words read from the checkout; no store, no
files written (``read_rows`` only reads the data files the run already reads).

- T1: two requests on upstream's one-message prompt, answered together. The *free* one uses
  upstream's call settings and is read by ``extract_verdict``: that verdict (``t1``, with its
  parse note) is the one comparable with the published Avg-Acc. The *label* one is the same
  prompt constrained to 好/差 (greedy), so every row also has P(好) for AUROC and ECE
  (``t1_label``; the views take ``p_good`` from it).
- T2/T3: the candidate writes with upstream's settings (T2: the row's ``messages``; T3: history,
  failed reply, complaint, no system turn). The judge is asked upstream's GRM prompt, greedy,
  with top-k log-probabilities; the verdict is the answer's first character and the score
  P(好)/(P(好)+P(差)) from the log-probabilities. A prompt beyond the judge's window
  (``finish_reason == "context_window"``, where upstream got HTTP 400) is retried one rung down
  the truncation ladder; the rung used is stored.

Every verdict's ``value`` carries ``protocol: "upstream"``, the parse note (T1) or the GRM
details (T2/T3), and any ``deviations`` from upstream (e.g. a history string upstream could not
read, parsed here).
"""

from __future__ import annotations

import json
import math
from collections.abc import Generator, Iterable, Mapping
from pathlib import Path
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.episode import EpisodeContext, Outcome, Program
from uxlocal.grammar import Choice
from uxlocal.suites.uxbench import protocol
from uxlocal.suites.uxbench.data import EvalItem, JudgeItem, RecoveryItem, Turn, iter_rows, source_name
from uxlocal.suites.uxbench.upstream import UpstreamProtocol

LABEL_TOKENS = 8
"""Completion budget of the T1 label arm (a label is one to three tokens)."""
CHAT_ROLES = ("user", "assistant", "system")
_ROLE_ALIASES = {"ai": "assistant", "bot": "assistant", "model": "assistant", "human": "user"}
RowKey = tuple[str, int]
"""(source name, 1-based line or row): where an item's row sits, as ``data.py`` records it."""


def read_rows(data_dir: Path, paths: Iterable[Path]) -> dict[RowKey, dict[str, Any]]:
    """Every JSON-object row of the given files by (file name, line), as the items name them."""
    rows: dict[RowKey, dict[str, Any]] = {}
    for path in paths:
        name = source_name(data_dir, path)
        for line, raw in iter_rows(path):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8").lstrip("\ufeff"))
            except ValueError:
                continue  # the item loader reports or quarantines this line
            if isinstance(row, dict):
                rows[(name, line)] = row
    return rows


def _label(verdict: int | None) -> str | None:
    return None if verdict is None else ("good" if verdict == 1 else "bad")


def _p_good(result: GenResult) -> float | None:
    probs = result.label_probs or {}
    good, bad = probs.get(protocol.GOOD), probs.get(protocol.BAD)
    if good is None or bad is None or good + bad <= 0:
        return None
    return good / (good + bad)


def _transcript(ctx: EpisodeContext, turns: Iterable[Turn]) -> None:
    for turn in turns:
        ctx.turn(turn.role, turn.content)


# ---------------------------------------------------------------- T1


def judge_program(ctx: EpisodeContext, item: JudgeItem, row: Mapping[str, Any],
                  words: UpstreamProtocol) -> Program:
    """T1 by upstream's protocol: free generation read by its rules, plus the label arm."""
    rendered = protocol.t1_messages(row, words.t1_template)
    _transcript(ctx, [*item.history, Turn(role="user", content=item.query),
                      Turn(role="assistant", content=item.response)])
    chat = tuple(rendered.messages)
    call = words.t1_call
    free, label = yield [
        GenRequest("judge", chat, Sampling(temperature=call.temperature, max_tokens=call.max_tokens),
                   tag="t1_upstream"),
        GenRequest("judge", chat, Sampling(temperature=0.0, max_tokens=LABEL_TOKENS),
                   Choice((protocol.GOOD, protocol.BAD)), tag="t1_label")]
    verdict, note, reasoning = read_t1(free)
    value = {"protocol": "upstream", "parse_note": note, "finish_reason": free.finish_reason,
             "deviations": list(rendered.deviations)}
    ctx.verdict("t1", result=free, label=_label(verdict), valid=verdict is not None,
                rationale=reasoning or None, value=value)
    arm = (1 if label.parsed == protocol.GOOD else -1) if label.valid else None
    ctx.verdict("t1_label", result=label, label=_label(arm), score=_p_good(label), valid=arm is not None,
                value={"protocol": "upstream", "arm": "label"})
    if verdict is None:
        return Outcome("invalid", info={"parse_note": note, "finish_reason": free.finish_reason})
    return Outcome("judged", reward=float(verdict == item.ground_truth))


def read_t1(result: GenResult) -> tuple[int | None, str, str]:
    """(verdict, parse note, reasoning) of a free T1 answer, as upstream reads an API reply.

    A failed call (error, prompt over the window: upstream's HTTP failure) is ``__llm_error__``;
    an answer cut at ``max_tokens`` is still read, as upstream reads whatever came back.
    """
    if result.finish_reason in ("error", "context_window"):
        return None, "__llm_error__", ""
    content, reasoning = protocol.split_reasoning(result.text)
    verdict, note = protocol.extract_verdict(content, reasoning)
    return verdict, note, reasoning


# ---------------------------------------------------------------- T2 / T3


def _chat_roles(messages: list[dict[str, str]]) -> tuple[list[dict[str, str]], tuple[str, ...]]:
    """Map role spellings a chat template rejects (ai, bot, human) to ours; a recorded deviation."""
    if all(m["role"] in CHAT_ROLES for m in messages):
        return messages, ()
    mapped = [{**m, "role": _ROLE_ALIASES.get(str(m["role"]).strip().lower(), "user")} for m in messages]
    return mapped, ("roles_mapped",)


def eval_chat(row: Mapping[str, Any], item: EvalItem) -> protocol.Rendered:
    """T2 candidate chat: the row's ``messages`` verbatim, as upstream sends them.

    Rows whose ``messages`` upstream could not send (missing, a string, turns without string
    ``content``) use the item's rebuilt chat, recorded as ``messages_rebuilt``.
    """
    given = row.get("messages")
    usable = isinstance(given, list) and given and all(
        isinstance(m, dict) and isinstance(m.get("content"), str) and isinstance(m.get("role"), str)
        for m in given)
    if not usable:
        return protocol.Rendered([{"role": t.role, "content": t.content} for t in item.messages],
                                 ("messages_rebuilt",))
    chat, deviations = _chat_roles([{"role": m["role"], "content": m["content"]} for m in given])  # type: ignore[union-attr]
    return protocol.Rendered(chat, deviations)


def recovery_chat(row: Mapping[str, Any]) -> protocol.Rendered:
    """T3 candidate chat by upstream's rule, with role spellings a template rejects mapped."""
    rendered = protocol.t3_messages(row)
    plain = [{"role": str(m["role"]), "content": str(m["content"])} for m in rendered.messages]
    chat, mapped = _chat_roles(plain)
    return protocol.Rendered(chat, rendered.deviations + mapped)


def positions(result: GenResult) -> list[tuple[str, list[tuple[str, float]]]]:
    """Pair each generated position's top-k with its emitted token (greedy: the list's first)."""
    tops = result.top_logprobs or []
    return [(top[0][0] if top else "", list(top)) for top in tops]


def reply_program(ctx: EpisodeContext, task: str, item: EvalItem | RecoveryItem, row: Mapping[str, Any],
                  words: UpstreamProtocol) -> Program:
    """T2 (``eval``) or T3 (``recovery``) by upstream's protocol: generate, then GRM-score."""
    name = "t2" if task == "eval" else "t3"
    rendered = eval_chat(row, item) if isinstance(item, EvalItem) else recovery_chat(row)
    for message in rendered.messages:
        ctx.turn(message["role"], message["content"])
    gen = words.generation[task]
    sampling = Sampling(temperature=gen.temperature, max_tokens=gen.max_tokens)
    reply = yield GenRequest("candidate", tuple(rendered.messages), sampling, tag=f"{name}_reply")
    ctx.turn("assistant", reply.text, model_role="candidate", result=reply,
             meta={"finish_reason": reply.finish_reason})
    base = {"protocol": "upstream", "deviations": list(rendered.deviations)}
    if reply.finish_reason in ("context_window", "error") or not reply.text.strip():
        # upstream's scorer skips a missing or empty reply: not judged, not counted
        status = "context_window" if reply.finish_reason == "context_window" else "no_reply"
        ctx.verdict(name, label=None, valid=False, value={**base, "status": status})
        return Outcome(status)
    result, rung = yield from _grm_ladder(task, row, reply.text, words, name)
    return _record_grm(ctx, name, result, rung, base)


def _grm_ladder(task: str, row: Mapping[str, Any], reply: str, words: UpstreamProtocol,
                name: str) -> Generator[GenRequest, GenResult, tuple[GenResult, int]]:
    """Ask the GRM prompt at each truncation rung until one fits the judge's window."""
    call = words.grm_call[task]
    sampling = Sampling(temperature=call.temperature, max_tokens=call.max_tokens, logprobs=call.top_logprobs)
    ladder = words.truncation[task]
    for rung, level in enumerate(ladder):
        prompt = protocol.grm_prompt(task, row, reply, words.grm_templates[task], level)
        chat = ({"role": "user", "content": prompt},)
        result = yield GenRequest("judge", chat, sampling, tag=f"{name}_grm")
        if result.finish_reason != "context_window" or rung == len(ladder) - 1:
            return result, rung
    raise ValueError("an empty truncation ladder (upstream.py rejects one)")


def _record_grm(ctx: EpisodeContext, name: str, result: GenResult, rung: int,
                base: dict[str, Any]) -> Outcome:
    if result.finish_reason in ("context_window", "error"):
        status = "context_window" if result.finish_reason == "context_window" else "grm_error"
        value = {**base, "status": status, "rung": rung}
        ctx.verdict(name, result=result, label=None, valid=False, value=value)
        return Outcome(status)
    content = protocol.split_reasoning(result.text)[0].strip()
    verdict = protocol.grm_verdict(content)
    scored = protocol.grm_score(positions(result))
    score = None if scored.score is None or not math.isfinite(scored.score) else scored.score
    ctx.verdict(name, result=result, label=_label(verdict or None), score=score, valid=verdict != 0,
                value={**base, "scoring": "grm", "content": content, "rung": rung,
                       "good_logprob": scored.good_logprob, "bad_logprob": scored.bad_logprob,
                       "status": "judged" if verdict else "no_verdict"})
    if verdict == 0:
        return Outcome("invalid", info={"content": content})
    return Outcome("judged", reward=float(verdict == 1))
