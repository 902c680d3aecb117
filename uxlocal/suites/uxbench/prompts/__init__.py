"""UXBench prompts: Jinja files in this folder and the functions that render them.

The code sits in ``_render.py``; this package keeps the templates beside it, so
``uxlocal.suites.uxbench.prompts`` is both the import path and the folder of prompt files.
"""

from uxlocal.suites.uxbench.prompts._render import (
    PROMPTS_DIR,
    JudgeMode,
    ReasonVerdictEn,
    ReasonVerdictZh,
    eval_generation_messages,
    eval_judge_messages,
    judge_messages,
    labels_for,
    parse_verdict,
    prompt_hashes,
    reason_model,
    recovery_generation_messages,
    recovery_judge_messages,
    render_transcript,
)

__all__ = [
    "PROMPTS_DIR",
    "JudgeMode",
    "ReasonVerdictEn",
    "ReasonVerdictZh",
    "eval_generation_messages",
    "eval_judge_messages",
    "judge_messages",
    "labels_for",
    "parse_verdict",
    "prompt_hashes",
    "reason_model",
    "recovery_generation_messages",
    "recovery_judge_messages",
    "render_transcript",
]
