"""PALATE: role-play agents evaluated through per-user simulators over a frozen panel of cards.

See ``README.md`` in this folder for the module map and ``../shared/specs/palate.md`` for the
benchmark this follows. The suite registers itself from ``uxlocal.suites.palate.suite``.
"""
