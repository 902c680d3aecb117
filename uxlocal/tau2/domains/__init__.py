"""The tau2 domains, one package each (its DB, agent tools, user tools and ``DOMAIN`` spec).

A domain package is imported on first lookup by name (``registry.domain_spec``) through its entry
point in the ``uxlocal.tau2_domains`` group: adding a domain means adding one folder here and one
line to that table in ``pyproject.toml`` (a plugin package adds the line to its own).
"""
