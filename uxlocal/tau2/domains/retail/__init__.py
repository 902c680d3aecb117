"""tau2's retail domain: products, users and orders.

Importing the package gives ``DOMAIN``, the spec the registry looks up by name.
"""

from .tools import DOMAIN

__all__ = ["DOMAIN"]
