"""How an episode ends: tau2's termination reasons, the user's stop tokens, and the default limits.

The names are tau2's own (spec §B.2) so results.json files stay readable by tau2 tools, which
reject unknown reasons. Only ``user_stop`` and ``agent_stop`` are scored; every other ending
gets reward 0 (spec §B.3.3, §B.4.8).
"""

from __future__ import annotations

from typing import Final, Literal

USER_STOP: Final = "user_stop"
"""The user simulator said a stop token (done, transferred, or out of scope)."""
AGENT_STOP: Final = "agent_stop"
"""The candidate ended the conversation (solo agents only; tau2's text agent never does)."""
MAX_STEPS: Final = "max_steps"
"""The step budget ran out; a step is one routed message (agent→env and env→agent both count)."""
TIMEOUT: Final = "timeout"
TOO_MANY_ERRORS: Final = "too_many_errors"
"""Tool errors reached ``max_errors``."""
AGENT_ERROR: Final = "agent_error"
"""The candidate broke the turn protocol (when enforced) or produced nothing usable."""
USER_ERROR: Final = "user_error"
"""The user simulator broke the turn protocol or produced nothing usable."""
INFRASTRUCTURE_ERROR: Final = "infrastructure_error"
"""The run itself failed; tau2 leaves these episodes out of average reward and pass^k."""
CONTEXT_WINDOW_EXCEEDED: Final = "context_window_exceeded"
"""A seat's prompt no longer fits its model's context window."""
UNEXPECTED_ERROR: Final = "unexpected_error"

TerminationReason = Literal[
    "user_stop",
    "agent_stop",
    "max_steps",
    "timeout",
    "too_many_errors",
    "agent_error",
    "user_error",
    "infrastructure_error",
    "context_window_exceeded",
    "unexpected_error",
]
TERMINATION_REASONS: Final[tuple[str, ...]] = (
    USER_STOP,
    AGENT_STOP,
    MAX_STEPS,
    TIMEOUT,
    TOO_MANY_ERRORS,
    AGENT_ERROR,
    USER_ERROR,
    INFRASTRUCTURE_ERROR,
    CONTEXT_WINDOW_EXCEEDED,
    UNEXPECTED_ERROR,
)
SCORED_TERMINATIONS: Final = frozenset({USER_STOP, AGENT_STOP})
"""Endings whose trajectory is scored; any other ending scores 0."""

STOP_TOKEN: Final = "###STOP###"
TRANSFER_TOKEN: Final = "###TRANSFER###"
OUT_OF_SCOPE_TOKEN: Final = "###OUT-OF-SCOPE###"
USER_STOP_TOKENS: Final = (STOP_TOKEN, TRANSFER_TOKEN, OUT_OF_SCOPE_TOKEN)
"""All three end the episode as ``user_stop``; tau2 has no separate "transfer" ending."""

DEFAULT_MAX_STEPS: Final = 200
DEFAULT_MAX_ERRORS: Final = 10


def user_stop_token(text: str | None) -> str | None:
    """Return the first stop token contained anywhere in a user's text turn, else ``None``.

    tau2 tests containment, not equality, so "Thanks! ###STOP###" stops; the text before the
    token stays in the trajectory but the candidate never answers it.
    """
    if not text:
        return None
    for token in USER_STOP_TOKENS:
        if token in text:
            return token
    return None


def is_scored(termination_reason: str) -> bool:
    """Whether an episode that ended this way is scored at all."""
    return termination_reason in SCORED_TERMINATIONS
