"""tau2's mock domain: a task tracker (agent) and notifications (user).

Importing the package gives ``DOMAIN``, the spec the registry looks up by name.
"""

from .tools import DOMAIN

__all__ = ["DOMAIN"]
