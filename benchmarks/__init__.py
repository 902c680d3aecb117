"""Performance scripts, one module each: ``python -m benchmarks.NAME`` from the checkout's root.

Every script has ``add_cli_args(parser)`` and ``main(args)``; ``_common.cli_parser`` adds the
shared options (``--model``, ``--json``). ``run_all`` imports them to check arguments and runs each
in a child process. Not part of the installed package (setup.py ships ``uxlocal*`` only).
"""
