"""Write ``feedback.jsonl``: 480 rated conversations for learning a judge (written for uxlocal, CC0).

Run from the repository root (deterministic: the same file every time)::

    python uxlocal/data/judge/train/make_sample.py

Every question in ``topics.py`` yields six single- or two-turn conversations, three liked and
three disliked. The human thumb follows the reason a real user would have:

- ``answers`` (liked): the reply answers what was asked: short, with an extra useful detail, or
  with a friendly opener or closer.
- ``refusal`` (disliked): a refusal of a harmless request, short or long.
- ``off_topic`` (disliked): a correct, fluent answer to a *different* question of the same topic.
- ``padded`` (disliked): a padded non-answer: filler that never gives the answer, short or long.

Lengths overlap on purpose (short answers and short refusals, long answers and long padding), so
reply length alone does not give the label away; ``README.md`` reports how well it does.
"""

from __future__ import annotations

import json
import random
import runpy
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEED = 30

OPENERS = ["", "", "", "Sure! ", "Good question. ", "Happy to help. ", "Of course. ", "Great question! "]
CLOSERS = ["", "", "", " Hope that helps!", " Let me know if you have more questions.", " Good luck!"]

REFUSALS_SHORT = ["I'm sorry, but I can't help with that.", "Sorry, I can't assist with this request.",
                  "I'm not able to answer that.", "Unfortunately I can't help with that one."]
REFUSALS_LONG = [
    "I'm sorry, but I'm not able to give advice about {noun}. This is something I can't help with, "
    "so I'd suggest asking someone with the right expertise.",
    "I understand this matters to you, but questions about {noun} are outside what I can help with. "
    "Please consult a qualified professional or another trusted source.",
    "Thanks for asking. Unfortunately, I can't provide guidance on {noun} topics like this one, "
    "because I want to avoid giving information that might not suit your situation.",
    "I appreciate the question, but I have to decline. I'm not in a position to offer help with "
    "{noun}, and I'd recommend looking for a specialist instead.",
]
FILLER = [
    "That's a really interesting question about {noun}, and a lot of people wonder the same thing.",
    "The honest answer is that it depends on many different factors.",
    "Everyone's situation is a little different, so what works for one person may not work for another.",
    "It's always a good idea to think carefully about your own goals and circumstances.",
    "There are many opinions on this, and they all have their merits.",
    "In the end, the most important thing is to find an approach that feels right for you.",
    "It can help to do some research and weigh up the options before deciding.",
    "{noun_cap} is a broad subject with a lot of nuance.",
    "Take your time with it, and don't be afraid to experiment a little.",
    "Ultimately, there is no single answer that fits everyone.",
]
PADDED_SHORT = [
    "It really depends.",
    "That depends on a lot of things.",
    "There are many ways to look at it.",
    "Hard to say, it varies.",
]

Question = tuple[str, str, str]


def _answer(rng: random.Random, question: Question, *, long: bool | None = None) -> str:
    """Return a reply that answers ``question`` (short, or with its extra detail)."""
    _, answer, extra = question
    if long is None:
        long = rng.random() < 0.5
    return f"{answer} {extra}" if long else answer


def _refusal(rng: random.Random, noun: str) -> str:
    if rng.random() < 0.5:
        return rng.choice(REFUSALS_SHORT)
    return rng.choice(REFUSALS_LONG).format(noun=noun)


def _padded(rng: random.Random, noun: str) -> str:
    if rng.random() < 0.2:
        return rng.choice(PADDED_SHORT)
    sentences = rng.sample(FILLER, rng.randint(2, 5))
    text = " ".join(s.format(noun=noun, noun_cap=noun[:1].upper() + noun[1:]) for s in sentences)
    return rng.choice(OPENERS) + text


def _replies(
    rng: random.Random, noun: str, question: Question, others: list[Question]
) -> list[tuple[str, str]]:
    """(reason, reply) for the six conversations of one question."""
    other = rng.choice(others)
    return [
        ("answers", _answer(rng, question, long=False)),
        ("answers", _answer(rng, question, long=True)),
        ("answers", rng.choice(OPENERS[3:]) + _answer(rng, question) + rng.choice(CLOSERS)),
        ("refusal", _refusal(rng, noun)),
        ("off_topic", rng.choice(OPENERS) + _answer(rng, other) + rng.choice(CLOSERS)),
        ("padded", _padded(rng, noun) + rng.choice(CLOSERS)),
    ]


def _conversation(
    rng: random.Random, question: Question, reply: str, others: list[Question]
) -> list[dict[str, str]]:
    """Return the user's question and the reply, after an earlier answered exchange one time in four."""
    turns = []
    if rng.random() < 0.25:
        earlier = rng.choice(others)
        turns += [{"role": "user", "content": earlier[0]}, {"role": "assistant", "content": earlier[1]}]
    return turns + [{"role": "user", "content": question[0]}, {"role": "assistant", "content": reply}]


def build(seed: int = SEED) -> list[dict[str, Any]]:
    """Every conversation of the sample, shuffled, with ids in file order."""
    topics: dict[str, tuple[str, list[Question]]] = runpy.run_path(str(HERE / "topics.py"))["TOPICS"]
    rng = random.Random(seed)
    rows = []
    for topic, (noun, questions) in topics.items():
        for question in questions:
            others = [q for q in questions if q is not question]
            for reason, reply in _replies(rng, noun, question, others):
                thumb = "liked" if reason == "answers" else "disliked"
                rows.append({"topic": topic, "conversation": _conversation(rng, question, reply, others),
                             "thumb": thumb, "reason": reason})
    rng.shuffle(rows)
    return [{"id": f"fb{i:04d}", **row} for i, row in enumerate(rows, start=1)]


def length_baseline(rows: list[dict[str, Any]]) -> float:
    """Accuracy of the best length-only rule (last reply's characters above or below a threshold).

    The threshold and direction are chosen on the rows themselves, so this is an upper bound on
    what reply length alone can do here.
    """
    points = [(len(r["conversation"][-1]["content"]), r["thumb"] == "liked") for r in rows]
    best = 0.0
    for threshold in sorted({n for n, _ in points}):
        above = sum((n >= threshold) == liked for n, liked in points) / len(points)
        best = max(best, above, 1.0 - above)
    return best


def main() -> None:
    """Write the sample next to this script and print the length-only baseline."""
    rows = build()
    with (HERE / "feedback.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} conversations to {HERE / 'feedback.jsonl'}; "
          f"length-only accuracy {length_baseline(rows):.3f}")


if __name__ == "__main__":
    main()
