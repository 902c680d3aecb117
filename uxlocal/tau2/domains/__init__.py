"""The tau2 domains, one package each (its DB, agent tools, user tools and ``DOMAIN`` spec).

A domain package is imported on first lookup by name (``registry.domain_spec``); adding a domain
means adding one folder here and its name to ``registry._BUILTIN_MODULES``.
"""
