"""A scripted PALATE engine for tests: candidates A/B differ in one word, the judge likes ALPHA.

Imported by ``tests/unit/palate`` and ``tests/report_store.py`` (``tests/`` is on ``sys.path``
because of ``tests/conftest.py``).
"""

from __future__ import annotations

import json
from typing import Any

from uxlocal.engine.base import PreparedRequest
from uxlocal.suites.palate.rubrics import GENERAL_CRITERIA


def judge_json(title: str, prompt: str) -> str:
    if "ALPHA" in prompt:
        score = 5
    elif "beta reply" in prompt:
        score = 2
    else:  # held-out sessions: a score that varies with the reply, so pairs are not all ties
        score = 1 + len(prompt.split("Reply to rate:")[-1]) % 5
    if title == "InducedRubric":
        return json.dumps(
            {"criteria": [{"name": f"c{i}", "description": f"likes thing {i}"} for i in range(3)]}
        )
    if title == "GeneralTurnVerdict":
        return json.dumps({c: score for c in GENERAL_CRITERIA})
    if title == "SessionVerdict":
        return json.dumps({c: score for c in (*GENERAL_CRITERIA, "overall")})
    if title == "PersonalVerdict":
        return json.dumps({"reaction": "continue", "score": score})
    return json.dumps({"score": score})


def respond(prepared: PreparedRequest) -> str:
    """Candidates A/B differ in one word; the simulator quits on its third turn; the judge likes ALPHA."""
    request = prepared.request
    if request.role == "candidate:A":
        return "ALPHA reply, staying in the scene."
    if request.role.startswith("candidate:"):
        return "beta reply."
    if request.role == "user":
        said = sum(m["role"] == "assistant" for m in request.messages)
        return "[QUIT]" if said >= 2 else f"user message {said}"
    if request.constraint is not None and request.constraint.kind == "choice":
        return "A"
    return judge_json(request.constraint.schema.get("title", ""), prepared.prompt)


def simulator_prompts(
    user: Any, lora: str | None, renderer: Any, *, n: int, max_tokens: int
) -> list[PreparedRequest]:
    """Return ``n`` LoRA-simulator requests over the user's held-out sessions.

    After the greeting, then one exchange later, asking adapter ``lora`` (None = the base model).
    """
    from uxlocal.engine.base import GenRequest, Sampling
    from uxlocal.suites.palate.render import lora_sim_messages, session_history, session_view

    prepared = []
    for k in range(n):
        session = user.heldout[k % len(user.heldout)]
        upto = 1 + 2 * (k // len(user.heldout))
        messages = lora_sim_messages(session_view(session), user.lang, session_history(session, upto))
        prompt, ids = renderer.render(messages)
        request = GenRequest("user", tuple(messages), Sampling(max_tokens=max_tokens), lora=lora)
        prepared.append(PreparedRequest(request, prompt, ids, f"{user.user_id}-{lora}-{k}"))
    return prepared
