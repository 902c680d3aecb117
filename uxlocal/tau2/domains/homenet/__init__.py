"""homenet, our own sample domain (CC0): an internet provider and the user's router.

Importing the package gives ``DOMAIN``, the spec the registry looks up by name.
"""

from .tools import DOMAIN

__all__ = ["DOMAIN"]
