"""tau2's telecom domain: the carrier's DB and agent tools, the user's phone and its tools (dual control).

Importing the package gives ``DOMAIN``, the spec the registry looks up by name.
"""

from .agent_tools import DOMAIN

__all__ = ["DOMAIN"]
