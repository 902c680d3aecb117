"""The ``uxlocal`` command line: thin commands that parse options, call one library function, print.

Only this package and ``errors.py`` import click. Map: ``main.py`` (root group, entry point),
``common.py`` (options generated from config classes, the one ``RunConfig`` builder, printing),
then one module per command group: ``run.py`` (run, demo), ``store.py`` (query, merge),
``report.py`` (report, view), ``models.py`` (models, doctor), ``ufs.py`` (ingest, ufs),
``palate.py``. Every command body stays under 40 lines (tests/unit/test_cli_shape.py).
"""

from uxlocal import _env

_env.apply_defaults()

from .main import cli, main  # noqa: E402

__all__ = ["cli", "main"]
