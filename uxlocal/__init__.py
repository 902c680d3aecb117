"""uxlocal: offline evaluation of multi-turn assistants and their simulated users.

The stable public surface is re-exported here; everything else is internal.
"""

from uxlocal import _env

_env.apply_defaults()

from uxlocal.config import RunConfig, SuiteConfig  # noqa: E402
from uxlocal.engine.base import Engine, GenRequest, GenResult, Sampling  # noqa: E402
from uxlocal.engine.fake import FakeEngine  # noqa: E402
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome  # noqa: E402
from uxlocal.grammar import Choice, JsonSchema, Regex  # noqa: E402
from uxlocal.rollout import Scheduler  # noqa: E402
from uxlocal.runner import run_suite  # noqa: E402

__version__ = "0.1.0"
__all__ = [
    "Choice",
    "Engine",
    "EpisodeContext",
    "EpisodeSpec",
    "FakeEngine",
    "GenRequest",
    "GenResult",
    "JsonSchema",
    "Outcome",
    "Regex",
    "RunConfig",
    "Sampling",
    "Scheduler",
    "SuiteConfig",
    "run_suite",
]
