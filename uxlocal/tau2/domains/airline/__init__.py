"""tau2's airline domain: flights, users and reservations.

Importing the package gives ``DOMAIN``, the spec the registry looks up by name.
"""

from .tools import DOMAIN

__all__ = ["DOMAIN"]
