"""``uxlocal run tau2``: tau2-bench tasks offline with local models (``suite.py``), and the
results.json export (``export.py``). The episodes themselves are ``uxlocal.tau2.episode``.
"""
