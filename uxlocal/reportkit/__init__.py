"""What a suite builds its results and report section from, below the suites.

See ``README.md`` in this folder. Report assembly, HTML, Markdown and the viewer sit above the
suites in ``uxlocal.report``; nothing here imports a suite.
"""
