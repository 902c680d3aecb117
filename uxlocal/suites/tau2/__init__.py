"""``uxlocal run tau2``: tau2-bench tasks offline with local models.

The run is ``suite.py``, the results.json export ``export.py``. The episodes themselves are
``uxlocal.tau2.episode``.
"""
