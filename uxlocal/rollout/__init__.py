"""The scheduler, in three rooms.

The driver advances episodes, the batcher calls engines, and the store's generation cache answers
and commits.

```
rollout/
  driver.py    Scheduler: admits episodes up to max_live, advances each program, writes episode rows
  prepare.py   a GenRequest rendered for its role's model: template (tools too), seed, LoRA, cache key
  batcher.py   a tick's requests: cache hits, then per model one de-duplicated batch (rolling window
               or max_batch chunks), results kept as engines finish them (EngineCall)
  stats.py     RunStats, the counters both share
```
The cache and its commit policy are ``uxlocal.store.generation_cache`` (all SQL stays in ``store/``).
"""

from uxlocal.rollout.driver import Scheduler
from uxlocal.rollout.stats import RunStats
from uxlocal.store.generation_cache import COMMIT_GAP_S, MEMORY_RESULTS

__all__ = ["COMMIT_GAP_S", "MEMORY_RESULTS", "RunStats", "Scheduler"]
