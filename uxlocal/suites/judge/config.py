"""Options of ``uxlocal judge``, in a light module: the CLI builds its options from these
field docstrings without importing the scheduler, the store or the engines.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

from pydantic import Field

from uxlocal.config import SuiteConfig
from uxlocal.suites.judge.inputs import Columns
from uxlocal.train.lora import TrainSettings

JUDGE_SETTINGS = TrainSettings(steps=80, batch_size=8, lr=2e-3, warmup=8, max_length=2048, top_layers=8,
                               target_modules=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                               "down_proj"))
"""Defaults of ``uxlocal judge train`` (benchmarks/judge_train.py measures what they reach).

Every linear layer of the top 8 decoder layers: a verdict is read from the last tokens, so the top
of the model is where a judge's decision is made; the layers below stay frozen, which lets training
compute their output once (``lora.frozen_prefix``) and run only the top 8 layers per step."""


def judge_settings(*, steps: int, batch_size: int, lr: float, rank: int, top_layers: int, modules: str,
                   seed: int, max_length: int = JUDGE_SETTINGS.max_length) -> TrainSettings:
    """``JUDGE_SETTINGS`` with the command-line choices: alpha = 2 x rank, a tenth of the steps to
    warm up, ``modules`` a comma-separated list of module names."""
    return dataclasses.replace(JUDGE_SETTINGS, steps=steps, batch_size=batch_size, lr=lr, rank=rank,
                               alpha=2 * rank, warmup=max(1, steps // 10), max_length=max_length, seed=seed,
                               top_layers=top_layers,
                               target_modules=tuple(m.strip() for m in modules.split(",") if m.strip()))


class JudgeConfig(SuiteConfig):
    """Options of ``uxlocal judge``."""

    not_in_identity: ClassVar[dict[str, str]] = {
        "input": "where the data sits; its content hash is in the run identity instead",
        "rubric": "where the rubric sits; its sha256 is in the run identity instead",
        "judges": "model bindings; the models' identities are in the run identity",
        "judge_adapter": "where the adapter sits; its weights sha256 is in the run identity instead",
        "heldout_of": "where the adapter sits; the hash of the held-out ids is in the run identity instead"}

    input: str = ""
    """JSONL, CSV or Parquet file, or duckdb:PATH::SQL."""
    rubric: str = "ux-liked"
    """Built-in rubric name or a rubric TOML file."""
    id_col: str = "id"
    """Column with the item id (default: file stem and line)."""
    conversation_col: str | None = None
    """Column with a [{role, content}] list or its JSON (default: conversation, else messages)."""
    prompt_col: str = "prompt"
    """Single-turn user message column (used when there is no conversation column)."""
    response_col: str = "response"
    """Single-turn assistant reply column."""
    response_a_col: str = "response_a"
    """Pairwise: first reply column."""
    response_b_col: str = "response_b"
    """Pairwise: second reply column."""
    human_col: str | None = None
    """Column with the human label (label), score (likert) or preference A/B/tie (pairwise)."""
    group_col: str | None = None
    """Column for breakdowns and clustered bootstrap (e.g. user or conversation id)."""
    mode: Literal["label", "reason"] = "label"
    """label: constrained label with every label's probability; reason: JSON {reasoning, verdict}."""
    layout: Literal["shared", "criterion_first"] = "shared"
    """Prompt order: conversation first (prefix-cache friendly) or criterion first."""
    both_orders: bool = True
    """Pairwise: judge A/B and B/A and reconcile (reports position bias)."""
    skip_bad_rows: bool = False
    """Quarantine bad rows (stored with the reason) instead of stopping at the first one."""
    reason_max_tokens: int = Field(512, ge=16)
    """Completion budget of a reason-mode verdict (tokens)."""
    bootstrap: int = Field(1000, ge=0)
    """Bootstrap resamples for the 95% intervals (0 = none)."""
    judges: str | None = None
    """Comma-separated judge models: the first binds role judge, the next judge2, judge3, ..."""
    judge_adapter: str | None = None
    """Learned judge: an adapter folder from `uxlocal judge train` (or a preset's adapter name) for role
    judge, or judgeN=DIR pairs, comma-separated (e.g. judge2=DIR beside a prompted judge)."""
    heldout_of: str | None = None
    """Judge only the rows this adapter folder's training held out (its measured split)."""

    def columns(self) -> Columns:
        """The column map."""
        return Columns(id=self.id_col, conversation=self.conversation_col, prompt=self.prompt_col,
                       response=self.response_col, response_a=self.response_a_col,
                       response_b=self.response_b_col, human=self.human_col, group=self.group_col)
