"""The NL-assertion judge seat: one constrained request per assertion, answered together.

tau2 asks one model call for all assertions at once (spec §B.4.8, step 5); we ask one request
per assertion in a single batch, which a small local judge handles more reliably and which gives
every assertion its own verdict row. Each answer is ``{"justification": str, "met": bool}`` under
a JSON-schema constraint, the justification first so the judge reasons before it decides; its
length is capped so the object closes within the token budget. The judge sees the dialogue as
``role: text`` lines, as tau2's does.

An answer that cannot be used (truncated, invalid, context window) counts as *not met*, with the
reason as justification and the verdict row marked invalid: the reward cannot be higher than the
evidence for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.grammar import JsonSchema
from uxlocal.tau2 import Message, NLVerdict, judge_transcript

from .actions import text_cap
from .prompts import prompt_text

JUDGE_ROLE = "judge"
"""The model role of this seat (``--model judge=...``)."""


def verdict_schema(max_tokens: int) -> dict[str, Any]:
    """Build the judge's answer schema; the justification is capped to fit ``max_tokens``."""
    return {
        "type": "object",
        "properties": {
            "justification": {"type": "string", "maxLength": text_cap(max_tokens)},
            "met": {"type": "boolean"},
        },
        "required": ["justification", "met"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class JudgeSeat:
    """Builds the judge's requests and reads its verdicts."""

    sampling: Sampling

    @property
    def constraint(self) -> JsonSchema:
        """The verdict constraint for this seat's token budget."""
        return JsonSchema(schema=verdict_schema(self.sampling.max_tokens))

    def requests(self, assertions: Sequence[str], trajectory: Sequence[Message]) -> list[GenRequest]:
        """One request per assertion, in order."""
        transcript = judge_transcript(trajectory) or "(no messages)"
        system = prompt_text("judge.md")
        constraint = self.constraint
        return [
            GenRequest(
                JUDGE_ROLE,
                (
                    {"role": "system", "content": system},
                    {
                        "role": "user",
                        "content": f"<conversation>\n{transcript}\n</conversation>\n\n"
                        f"<expected_outcome>\n{assertion}\n</expected_outcome>",
                    },
                ),
                self.sampling,
                constraint,
                tag=f"nl_assertion:{k}",
            )
            for k, assertion in enumerate(assertions)
        ]

    @staticmethod
    def verdict(result: GenResult) -> tuple[NLVerdict, bool]:
        """Read the verdict and whether the judge's output was usable (unusable → not met)."""
        value = result.parsed if result.valid else None
        if isinstance(value, dict) and isinstance(value.get("met"), bool):
            return NLVerdict(met=value["met"], justification=str(value.get("justification", ""))), True
        problem = result.error or "the verdict has no boolean 'met'"
        if result.finish_reason == "context_window":
            problem = "the transcript does not fit the judge's context window"
        return NLVerdict(met=False, justification=f"judge output unusable: {problem}"), False
