"""One retry policy for every backend that retries: which failures, how many times, how long between.

A failure is worth retrying when a later attempt can succeed: the connection was refused, reset or
timed out, or the server answered 5xx (overloaded, restarting). A 4xx is the request's own fault and
is final, unless the user opts a status in (``retry_statuses``, e.g. 429 behind a rate-limiting
gateway; vLLM itself queues rather than answering 429). Delays grow exponentially with jitter, so
many clients that lost the same server do not all come back in the same millisecond.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


def backoff_delay(failures: int, base_s: float, max_s: float) -> float:
    """Exponential delay with +-20 % jitter, so retries from many clients do not arrive together."""
    return float(min(max_s, base_s * 2 ** max(0, failures - 1)) * random.uniform(0.8, 1.2))


@dataclass(frozen=True)
class RetryPolicy:
    """How a backend retries one request; ``HttpOptions`` fields of the same names fill it."""

    max_retries: int = 4
    """Retries after the first attempt (so ``max_retries + 1`` attempts in all)."""
    backoff_s: float = 0.5
    """First delay in seconds; it doubles per consecutive failure up to ``backoff_max_s``."""
    backoff_max_s: float = 8.0
    """Longest delay in seconds."""
    retry_statuses: frozenset[int] = frozenset()
    """4xx statuses retried like a 5xx (opt-in)."""

    @property
    def attempts(self) -> int:
        """Attempts in all, the first included."""
        return self.max_retries + 1

    def retries_status(self, status: int) -> bool:
        """Whether an HTTP error status can succeed later (5xx, or a 4xx the user opted in)."""
        return status >= 500 or status in self.retry_statuses

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failures in a row (also how long an endpoint is benched)."""
        return backoff_delay(failures, self.backoff_s, self.backoff_max_s)

    def wait_after(self, attempt: int) -> float | None:
        """Seconds to wait before the attempt after ``attempt`` (0-based), or None when none is left."""
        return self.delay(attempt + 1) if attempt < self.max_retries else None
