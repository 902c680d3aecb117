"""Probability of every label of a ``Choice``, over each label's whole token path.

A single next-token read sees only prefixes: with labels ``good``/``bad`` the first step may put
most mass on the token ``b``; with ``好``/``差`` the first token is often the UTF-8 lead byte both
characters share. So we walk the token trie: each token's probability (under the grammar mask)
flows to the labels its bytes are consistent with; when a token is a prefix of several labels we
expand that node with one more next-token distribution. Exact under the constrained distribution
when every expansion's distribution is complete; with top-K lists the uncovered mass is reported
and the result renormalised.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TrieNode:
    """A prefix shared by more than one label, still to be expanded."""

    prefix_ids: tuple[int, ...]
    prefix_bytes: bytes
    mass: float
    candidates: tuple[str, ...]


@dataclass
class LabelWalk:
    """State of the walk for one request: mass assigned so far and nodes left to expand."""

    labels: tuple[str, ...]
    assigned: dict[str, float] = field(default_factory=dict)
    pending: list[TrieNode] = field(default_factory=list)
    lost_mass: float = 0.0

    def result(self) -> dict[str, float] | None:
        """Normalised label distribution, or None when no mass reached any label."""
        total = sum(self.assigned.values())
        if total <= 0:
            return None
        return {label: self.assigned.get(label, 0.0) / total for label in self.labels}


def start_walk(labels: tuple[str, ...]) -> tuple[LabelWalk, TrieNode]:
    """A walk and its root node (empty prefix, all mass, every label)."""
    return LabelWalk(labels=labels), TrieNode((), b"", 1.0, labels)


def expand(walk: LabelWalk, node: TrieNode, dist: dict[int, float], token_bytes: list[bytes],
           eos_ids: set[int], *, masked: bool) -> None:
    """Distribute ``node.mass`` over the next-token distribution ``dist`` (token id -> probability).

    ``masked`` says whether ``dist`` already excludes tokens the grammar forbids; when not, we
    keep only tokens consistent with some candidate label and renormalise over them.
    """
    label_bytes = {label: label.encode("utf-8") for label in node.candidates}
    moves: list[tuple[int, float, tuple[str, ...], bytes]] = []
    for token_id, prob in dist.items():
        if prob <= 0.0:
            continue
        if token_id in eos_ids:
            done = tuple(lb for lb, b in label_bytes.items() if b == node.prefix_bytes)
            if done:
                moves.append((token_id, prob, done, node.prefix_bytes))
            continue
        if token_id >= len(token_bytes):
            continue
        extended = node.prefix_bytes + token_bytes[token_id]
        consistent = tuple(lb for lb, b in label_bytes.items() if b.startswith(extended))
        if consistent:
            moves.append((token_id, prob, consistent, extended))
    kept = sum(m[1] for m in moves)
    if kept <= 0:
        walk.lost_mass += node.mass
        return
    scale = node.mass / kept if not masked else node.mass
    if masked:
        walk.lost_mass += node.mass * max(0.0, 1.0 - kept)
    for token_id, prob, consistent, extended in moves:
        share = prob * scale
        finished = [lb for lb in consistent if label_bytes[lb] == extended]
        if len(consistent) == 1:
            walk.assigned[consistent[0]] = walk.assigned.get(consistent[0], 0.0) + share
        elif token_id in eos_ids and finished:
            walk.assigned[finished[0]] = walk.assigned.get(finished[0], 0.0) + share
        else:
            walk.pending.append(TrieNode(node.prefix_ids + (token_id,), extended, share, consistent))


def max_label_tokens(labels: tuple[str, ...]) -> int:
    """Upper bound on tokens needed to emit any label plus the end token (>= 1 byte per token)."""
    return max(len(label.encode("utf-8")) for label in labels) + 1
