"""The ``uxlocal`` command line: thin commands that parse options, call one library function, print.

Click is imported only here, in ``clikit.py`` (what every command is built from, below the
suites), ``errors.py`` and each suite's own ``cli.py``. Map: ``main.py`` (root group, entry point;
adds each suite's commands through its ``register_commands`` hook), ``common.py`` (the one
``RunConfig`` builder), then one module per core command group: ``run.py`` (run, demo),
``store.py`` (query, merge), ``report.py`` (report, view), ``models.py`` (models, doctor). A
suite's commands (``palate``, ``judge``, ``tau2``, ``ingest``, ``ufs``) live in its package.
Every command body stays under 40 lines (tests/unit/test_code_shape.py).
"""

from uxlocal import settings

settings.apply_process_defaults()

from .main import cli, main  # noqa: E402

__all__ = ["cli", "main"]
