"""``python -m uxlocal.cli``: the same as the ``uxlocal`` command."""

from .main import main

main()
