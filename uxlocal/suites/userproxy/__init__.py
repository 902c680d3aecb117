"""UserProxyBench on the tau2 runtime (``uxlocal.tau2``).

Episodes come from ``uxlocal.tau2.episode``. The user-fidelity layer (``ufs/``), ``uxlocal run
userproxy`` (``suite.py``) and ``uxlocal ufs criteria`` (``criteria_run.py``).
"""
