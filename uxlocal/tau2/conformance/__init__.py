r"""Conformance with upstream tau2-bench: replay a recorded suite and measure the agreement.

The recording (``../shared/conformance/tau2/<domain>/``: cases, upstream's outputs per call, its
tool schemas) is the reference; ``compare_domain`` replays it through our runtime, ``table``
renders the per-domain figures as Markdown. Command line::

    python -m uxlocal.tau2.conformance --recording ../shared/conformance/tau2 \
        --data ../shared/data/tau2 --domains all [--json OUT] [--show N]
"""

from __future__ import annotations

from .compare import COMPONENTS, DomainReport, compare_domain, reward_record
from .report import CONFORMANCE_DOMAINS, details, table

__all__ = ["COMPONENTS", "CONFORMANCE_DOMAINS", "DomainReport", "compare_domain", "details",
           "reward_record", "table"]
