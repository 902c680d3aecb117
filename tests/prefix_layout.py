"""Check the prefix-shared prompt layout (issue 17 item 6) on the prompts a FakeEngine recorded.

Imported by the suites' unit tests (``tests/`` is on ``sys.path`` because of ``tests/conftest.py``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def assert_conversation_then_question(prompts: Sequence[str], conversation: Sequence[str],
                                      questions: Sequence[str]) -> str:
    """Assert that the K prompts of one conversation share one prefix holding the whole conversation.

    ``conversation``: pieces of the conversation as rendered (they must all lie in the common
    prefix); ``questions``: the piece only prompt k has (criterion, rubric), which must lie after
    it. Returns the common prefix.
    """
    assert len(prompts) >= 2 and len(set(prompts)) == len(prompts), "K distinct prompts expected"
    common = os.path.commonprefix(list(prompts))
    for piece in conversation:
        assert piece in common, f"conversation piece outside the shared prefix: {piece[:60]!r}"
    for prompt, question in zip(prompts, questions, strict=True):
        rest = prompt[len(common):]
        assert question in rest, f"question not after the shared prefix: {question[:60]!r}"
        assert not any(piece in rest for piece in conversation), "conversation text after the question"
    return common
