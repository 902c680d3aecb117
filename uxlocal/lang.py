"""Which language a text is in: the one rule every suite uses to pick ``en`` or ``zh``.

UXBench picks its prompt language from the user's words, PALATE the language of a card it
imports; both are the same question, so they share this rule instead of two thresholds that
classify the same text differently.

The rule: count CJK ideographs (the unified block, extension A, the compatibility block and
extension B) among all alphabetic characters (``str.isalpha``: letters of any script, not digits,
not punctuation). A share of ``ZH_MIN_CJK_SHARE`` (0.15) or more is Chinese. Text with no letter
at all says nothing and falls back (to the rest of a conversation, then to ``en``).
"""

from __future__ import annotations

import re
from typing import Literal

Lang = Literal["en", "zh"]
"""The two languages uxlocal's prompts and bundled data come in."""

_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df]")

ZH_MIN_CJK_SHARE = 0.15
"""Share of CJK characters among all letters at or above which text counts as Chinese.

One CJK character carries about as much as 4-5 Latin letters, so 0.15 means roughly "a third
or more of the content is Chinese"; it keeps Chinese questions about code ("Python 里的 list
comprehension 怎么写", share 0.18) Chinese, while an English sentence quoting a name stays English.
"""


def cjk_share(text: str) -> float | None:
    """CJK characters / all alphabetic characters; None when the text has no letters."""
    letters = sum(1 for ch in text if ch.isalpha())
    if letters == 0:
        return None
    return len(_CJK.findall(text)) / letters


def detect_lang(primary: str, fallback: str = "") -> Lang:
    """Return zh or en from ``primary``, else (no letter in it) from ``fallback``, else en.

    UXBench passes the user's own words first because replies may be code-heavy or in the
    language a user asked a translation into.
    """
    for text in (primary, fallback):
        share = cjk_share(text)
        if share is not None:
            return "zh" if share >= ZH_MIN_CJK_SHARE else "en"
    return "en"
