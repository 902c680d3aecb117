"""tau2's banking_knowledge domain: 23 tables, listed and discoverable tools, a BM25 knowledge base.

Importing the package gives ``DOMAIN``, the spec the registry looks up by name.
"""

from .agent_tools import DOMAIN

__all__ = ["DOMAIN"]
