"""UserProxyBench: tau2 environments (``tau2/``), the ``tau2`` suite (``tau2_suite/``), the user-fidelity
layer (``ufs/``), ``uxlocal run userproxy`` (``suite.py``) and ``uxlocal ufs criteria`` (``criteria_run.py``)."""
