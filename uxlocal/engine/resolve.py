"""``--model`` specs to loadable models, asking a running server which model it serves when needed.

``models.py`` knows presets, folders and URL specs but never talks to a server; this module adds
the one network question a spec can raise (``URL`` without ``#NAME``: which model do you serve?)
and is what every caller uses. Keeping the question here leaves ``models.py`` below the engines:
the engines import ``ResolvedModel`` from it, and it imports nothing of theirs.
"""

from __future__ import annotations

from uxlocal.engine.http import bearer_headers
from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel, resolve_spec

SERVED_NAME_TIMEOUT_S = 10.0
"""How long ``ask_served_name`` waits for ``/models``; a server that is up answers in milliseconds."""


def resolve(spec: str, *, prepare_missing: bool = True) -> ResolvedModel:
    """Turn ``PRESET``, ``PATH``, either ``@BACKEND``, or a server URL into a loadable model."""
    return resolve_spec(spec, prepare_missing=prepare_missing, ask_served_name=ask_served_name)


def ask_served_name(url: str) -> str:
    """Ask the server at ``url`` for the one model it serves (for URL specs without ``#NAME``)."""
    import httpx

    try:
        response = httpx.get(f"{url}/models", headers=bearer_headers(), timeout=SERVED_NAME_TIMEOUT_S)
        if response.status_code in (401, 403):
            raise InputError(f"{url}/models answered HTTP {response.status_code}",
                             "export the server's key as $UXLOCAL_API_KEY")
        body = response.json()
        names = [m["id"] for m in body.get("data", [])]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot ask {url}/models which model it serves ({exc})",
                         f"name it: --model ROLE={url}#SERVED_NAME") from exc
    if len(names) != 1:
        raise InputError(f"{url} serves {len(names)} models {names}", f"pick one: --model ROLE={url}#NAME")
    return str(names[0])
