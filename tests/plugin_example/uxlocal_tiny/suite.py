"""``uxlocal run tiny``: one episode per sentence, the judge answers yes or no."""

from __future__ import annotations

from typing import Any

from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.grammar import Choice
from uxlocal.reportkit.model import ReportTable
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome, Program
from uxlocal.store.db import query
from uxlocal.suites.base import Suite, SuitePlan

SENTENCES = ("The sky is green.", "Water is wet.", "Two plus two is four.")


class TinyConfig(SuiteConfig):
    """Options of the tiny suite."""

    question: str = "Is this sentence true?"
    """What the judge is asked about each sentence."""


def _program(ctx: EpisodeContext, sentence: str, question: str) -> Program:
    ask = ({"role": "user", "content": f"{question}\n\n{sentence}\n\nAnswer yes or no."},)
    answer = yield GenRequest("judge", ask, Sampling(max_tokens=2), Choice(("yes", "no")), tag="answer")
    ctx.verdict("answer", result=answer, label=answer.parsed)
    ctx.row("tiny_answers", {"sentence": sentence, "answer": answer.parsed})  # migrations/001
    return Outcome("judged")


class TinySuite(Suite):
    """Three sentences, one yes/no verdict each."""

    name = "tiny"
    help = "Ask the judge whether three sentences are true."
    config_cls = TinyConfig
    roles = ("judge",)
    report_section = "uxlocal_tiny.section"

    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """One episode per sentence."""
        assert isinstance(config, TinyConfig)
        episodes = [EpisodeSpec(f"tiny-{i}", lambda ctx, s=s: _program(ctx, s, config.question),
                                item_id=f"tiny-{i}", task="tiny") for i, s in enumerate(SENTENCES)]
        items = [{"item_id": f"tiny-{i}", "task": "tiny", "data": {"sentence": s}}
                 for i, s in enumerate(SENTENCES)]
        return SuitePlan(episodes, items)

    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """The ``tiny_summary`` view for this run."""
        cols, rows = query(con, "SELECT * EXCLUDE (run_id) FROM tiny_summary WHERE run_id = ?", [run_id])
        return [ReportTable("tiny", cols, rows)]
