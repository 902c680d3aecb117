"""``selftest``: a tiny built-in suite that exercises every moving part in one minute.

Each episode is a two-exchange chat (user opener -> candidate -> simulated user follow-up ->
candidate), then the judge gives a constrained label (with label probabilities) and a JSON
verdict. It checks the plumbing, not model quality.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.engine.base import ROLES, GenRequest, Sampling
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome, Program
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.reportkit.model import ReportTable
from uxlocal.store.db import query
from uxlocal.suites.base import DemoSpec, Suite, SuitePlan

OPENERS = (
    "My sourdough never rises properly. What am I probably doing wrong?",
    "Can you suggest a name for a grey kitten who loves boxes?",
    "How do I politely decline a meeting that has no agenda?",
    "What's a quick way to remember the order of the planets?",
    "I have eggs, spinach and feta. What can I cook in 15 minutes?",
    "Explain what a mortgage offset account is in two sentences.",
    "Why does my laptop fan get loud when I open many browser tabs?",
    "Give me one tip to fall asleep faster tonight.",
    "How should I start learning to play the ukulele?",
    "What is the difference between weather and climate?",
    "Write a one-line birthday wish for my coworker who loves hiking.",
    "How can I keep basil alive on a windowsill?",
)
LABELS = ("good", "bad")


class JudgeVerdict(BaseModel):
    """The judge's structured verdict on the final reply."""

    helpful: bool
    score: int = Field(ge=1, le=5)


class SelftestConfig(SuiteConfig):
    """Options of the selftest suite."""

    max_tokens: int = 48
    """Completion budget of each candidate/user turn (tokens)."""
    exchanges: int = 2
    """User/candidate exchanges per episode."""


def _program(ctx: EpisodeContext, opener: str, cfg: SelftestConfig) -> Program:
    history: list[dict[str, str]] = [{"role": "user", "content": opener}]
    ctx.turn("user", opener)
    for exchange in range(cfg.exchanges):
        reply = yield GenRequest("candidate", tuple(history), Sampling(max_tokens=cfg.max_tokens), tag="reply")
        ctx.turn("assistant", reply.text, model_role="candidate", result=reply)
        history.append({"role": "assistant", "content": reply.text})
        if exchange == cfg.exchanges - 1:
            break
        flipped = [{"role": "system", "content": "You are the user in this chat. Write the user's next short message."}]
        flipped += [{"role": "assistant" if m["role"] == "user" else "user", "content": m["content"]} for m in history]
        follow = yield GenRequest("user", tuple(flipped), Sampling(temperature=0.7, max_tokens=cfg.max_tokens), tag="user")
        ctx.turn("user", follow.text, model_role="user", result=follow)
        history.append({"role": "user", "content": follow.text})
    transcript = "\n".join(f"{m['role']}: {m['content']}" for m in history)
    ask = f"Conversation:\n{transcript}\n\nWas the assistant's last reply helpful? Answer good or bad."
    label, verdict = yield [
        GenRequest("judge", ({"role": "user", "content": ask},), Sampling(max_tokens=4), Choice(LABELS), tag="label"),
        GenRequest("judge", ({"role": "user", "content": ask + " Reply as JSON with helpful and score (1-5)."},),
                   Sampling(max_tokens=40), JsonSchema.from_model(JudgeVerdict), tag="json"),
    ]
    good = (label.label_probs or {}).get("good")
    ctx.verdict("label", result=label, label=label.parsed, score=good)
    ctx.verdict("json", result=verdict, label=None if not verdict.valid else str(verdict.parsed["helpful"]).lower(),
                score=None if not verdict.valid else float(verdict.parsed["score"]))
    return Outcome("judged", reward=None if good is None else float(good))


class Selftest(Suite):
    """Plumbing check on twelve bundled openers."""

    name = "selftest"
    help = "Two-exchange chats judged with a label and a JSON verdict (plumbing check)."
    config_cls = SelftestConfig
    roles = ROLES

    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """One episode per opener (``--limit`` caps them)."""
        assert isinstance(config, SelftestConfig)
        openers = OPENERS[: run.limit] if run.limit else OPENERS
        episodes, items = [], []
        for i, opener in enumerate(openers):
            item_id = f"selftest-{i:02d}"
            items.append({"item_id": item_id, "task": "selftest", "data": {"opener": opener}})
            episodes.append(EpisodeSpec(item_id, _bind(opener, config), item_id=item_id, task="selftest"))
        return SuitePlan(episodes, items)

    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """The ``selftest_summary`` view for this run."""
        cols, rows = query(con, "SELECT * EXCLUDE (run_id) FROM selftest_summary WHERE run_id = ?", [run_id])
        return [ReportTable("selftest", cols, rows, "plumbing check; the embedded model's verdicts are near chance")]

    def demo(self) -> DemoSpec:
        """Four openers, every role on the embedded model."""
        return DemoSpec({"max_tokens": 32}, {"candidate": "embedded", "user": "embedded", "judge": "embedded"}, limit=4)


def _bind(opener: str, cfg: SelftestConfig) -> Any:
    return lambda ctx: _program(ctx, opener, cfg)
