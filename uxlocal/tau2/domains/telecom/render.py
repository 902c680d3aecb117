"""How a telecom tool's structured answer reads as text: tau2's serialisation, which models are used to.

tau2 writes a tool's return value as JSON after one pass over it: a record becomes its field dict
(values left as Python objects, so a timestamp prints through ``str()`` as "2025-01-15 10:30:00"),
while a bare number or boolean *in a dict or list the tool built itself* becomes a string
(``"data_used_gb": "8.7"``) and a bare date its ISO form. A model reading our output sees the same
bytes as one reading upstream's, which is what the conformance suite checks.
"""

from __future__ import annotations

import datetime
import json

from pydantic import BaseModel


def as_text(value: object) -> str:
    """Render a tool's return value; a string is returned as it is."""
    if isinstance(value, str):
        return value
    return json.dumps(_shallow(value), default=str)


def _shallow(value: object) -> object:
    """One pass over what a tool built: records dumped, scalars stringified, containers walked."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    if isinstance(value, list | tuple):
        return [_shallow(item) for item in value]
    if isinstance(value, dict):
        return {key: _shallow(item) for key, item in value.items()}
    if isinstance(value, datetime.date):
        return value.isoformat()
    raise TypeError(f"a telecom tool returned an unsupported {type(value).__name__}")
