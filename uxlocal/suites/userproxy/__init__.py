"""UserProxyBench suite: tau2 environments (``tau2/``) and, later, the user-fidelity layer (``ufs/``)."""
