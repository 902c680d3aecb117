"""Probability of every label of a ``Choice``, over each label's whole token path.

A single next-token read sees only prefixes: with labels ``good``/``bad`` the first step may put
most mass on the token ``b``; with ``好``/``差`` the first token is often the UTF-8 lead byte both
characters share. So we walk the token trie: each token's probability (under the grammar mask)
flows to the labels its bytes are consistent with; when a token is a prefix of several labels we
expand that node with one more next-token distribution. Exact under the constrained distribution
when every expansion's distribution is complete; with top-K lists the uncovered mass is reported
and the result renormalised.

Every backend walks through this module: the in-process ones (``vllm.py``, ``hf.py``) hand it the
distributions they captured while generating and read off-path nodes with the model;
``http.py`` hands it a server's returned alternatives (``walk_alternatives``) and reads off-path
nodes with one ``/completions`` call each.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar


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


WALK_ROUNDS = 8
"""Most expansion rounds of one walk; a node still pending after them is settled in proportion."""

Dist = dict[int, float]
"""One position's next-token distribution: token id -> probability."""
Position = TypeVar("Position")


def expand_on_path(walk: LabelWalk, path: Sequence[int], positions: Sequence[Position], token_bytes: list[bytes],
                   eos_ids: set[int], *, masked: bool = True,
                   as_dist: Callable[[Position], Dist] = dict) -> list[TrieNode]:
    """Expand every pending node that lies on the generated ``path``; return the nodes off it.

    A node on the path costs nothing: its distribution was captured while generating
    (``positions[depth]``, turned into a ``Dist`` by ``as_dist``). A node off the path needs a
    next-token read of its own, which each backend does its way (one forward pass, an engine
    request, an HTTP call) before handing the result to ``expand_off_path``.
    """
    nodes, walk.pending = walk.pending, []
    off: list[TrieNode] = []
    for node in nodes:
        depth = len(node.prefix_ids)
        if list(node.prefix_ids) == list(path[:depth]) and depth < len(positions):
            expand(walk, node, as_dist(positions[depth]), token_bytes, eos_ids, masked=masked)
        else:
            off.append(node)
    return off


def expand_off_path(walk: LabelWalk, nodes: Sequence[TrieNode], dists: Sequence[Dist | None],
                    token_bytes: list[bytes], eos_ids: set[int]) -> None:
    """Expand off-path nodes with the distributions read for them; a node without one is settled.

    Reads are unconstrained (no grammar mask after an arbitrary prefix), so they are renormalised
    over the tokens that keep some label possible.
    """
    for node, dist in zip(nodes, dists, strict=True):
        if dist:
            expand(walk, node, dist, token_bytes, eos_ids, masked=False)
        else:
            settle_in_proportion(walk, node)


def settle_in_proportion(walk: LabelWalk, node: TrieNode) -> None:
    """Share an unexpandable node's mass among its labels in proportion to what they already have.

    The estimate assumes the split below a shared prefix resembles the split elsewhere; with no
    other evidence the labels share equally. Used only when the exact expansion is unavailable.
    """
    have = [walk.assigned.get(label, 0.0) for label in node.candidates]
    total = sum(have)
    for label, mass in zip(node.candidates, have, strict=True):
        share = mass / total if total > 0 else 1.0 / len(node.candidates)
        walk.assigned[label] = walk.assigned.get(label, 0.0) + node.mass * share


# ---- walks over a server's returned alternatives (openai-http) -------------------------------

EOS_TEXTS = frozenset({"<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>", "</s>", "<|end|>",
                       "<eos>"})
"""End-of-turn tokens as servers print them (used only without a local tokenizer)."""
TOKEN_ID = re.compile(r"^token_id:(\d+)$")
"""How vLLM prints a token with ``return_tokens_as_token_ids``."""
NO_LOGPROB = -9999.0
"""Servers send a logprob at or below this for tokens they could not score: skipped."""


class TokenSource(Protocol):
    """What a walk over returned alternatives needs of the local tokenizer (if any)."""

    eos_ids: set[int]

    @property
    def has_tokenizer(self) -> bool:
        """Whether token ids and token bytes are available."""

    def token_bytes(self) -> list[bytes]:
        """Byte string of every token id."""


class TokenTable:
    """Token ids and bytes for one response's label walk.

    Exact mode: the server returned ``token_id:N`` and we have the tokenizer's bytes. Byte mode:
    each distinct (bytes, end-of-turn) pair gets a local id; tokens whose bytes were lost in
    decoding ("" or U+FFFD: part of a UTF-8 character) are skipped.
    """

    def __init__(self, token_bytes: list[bytes] | None, eos_ids: set[int]) -> None:
        self.exact = bool(token_bytes)
        self.token_bytes: list[bytes] = token_bytes if token_bytes else []
        self.eos_ids: set[int] = set(eos_ids) if self.exact else set()
        self._local: dict[tuple[bytes, bool], int] = {}

    @classmethod
    def for_response(cls, content: list[dict[str, Any]], tokens: TokenSource) -> "TokenTable":
        """Exact when the response carries token ids and a tokenizer is known, else byte mode."""
        first = str(content[0].get("token", ""))
        if tokens.has_tokenizer and TOKEN_ID.match(first):
            return cls(tokens.token_bytes(), tokens.eos_ids)
        return cls(None, set())

    def id_of(self, entry: dict[str, Any]) -> int | None:
        """The id the walk uses for one returned token (None: unusable)."""
        token = str(entry.get("token", ""))
        if self.exact:
            match = TOKEN_ID.match(token)
            return int(match.group(1)) if match else None
        raw = entry.get("bytes")
        data = bytes(raw) if isinstance(raw, list) else token.encode("utf-8")
        eos = token in EOS_TEXTS
        if not eos and (not data or "\ufffd".encode() in data):
            return None
        key = (data, eos)
        if key not in self._local:
            self._local[key] = len(self.token_bytes)
            self.token_bytes.append(b"" if eos else data)
            if eos:
                self.eos_ids.add(self._local[key])
        return self._local[key]

    def dist(self, alternatives: list[dict[str, Any]]) -> Dist:
        """Probabilities of one position's alternatives, by walk id."""
        out: Dist = {}
        for entry in alternatives:
            token_id, logprob = self.id_of(entry), entry.get("logprob")
            if token_id is None or logprob is None or logprob <= NO_LOGPROB:
                continue
            out[token_id] = out.get(token_id, 0.0) + math.exp(logprob)
        return out


def content_of_completion(logprobs: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``/completions`` choice's ``logprobs`` (``tokens``, ``token_logprobs``, ``top_logprobs``
    as ``{token: logprob}``) in the chat shape ``walk_alternatives`` reads.
    """
    tokens = logprobs.get("tokens") or []
    chosen = logprobs.get("token_logprobs") or [None] * len(tokens)
    tops = logprobs.get("top_logprobs") or [None] * len(tokens)
    return [{"token": token, "logprob": logprob,
             "top_logprobs": [{"token": t, "logprob": lp} for t, lp in (top or {}).items()]}
            for token, logprob, top in zip(tokens, chosen, tops)]


def dist_of_token_ids(top_logprobs: dict[str, float | None]) -> Dist:
    """``{"token_id:N": logprob}`` (a completions answer) as a distribution over token ids."""
    dist: Dist = {}
    for token, logprob in top_logprobs.items():
        match = TOKEN_ID.match(str(token))
        if match and logprob is not None and logprob > NO_LOGPROB:
            dist[int(match.group(1))] = math.exp(logprob)
    return dist


ReadNext = Callable[[TrieNode], Awaitable[Dist | None]]
"""An off-path read: the next-token distribution after the prompt plus a node's tokens, or None."""


async def walk_alternatives(labels: tuple[str, ...], content: list[dict[str, Any]], tokens: TokenSource, *,
                            masked: bool, read_next: ReadNext) -> dict[str, float] | None:
    """Label distribution from a response's per-position ``top_logprobs`` (``content``).

    ``labels`` are the texts as generated (quoted when the server saw a JSON string enum).
    ``masked``: the server's logprobs come after its grammar mask (vLLM). Off-path nodes are read
    through ``read_next`` when the token ids are exact, else settled in proportion.
    """
    if not content:
        return None
    table = TokenTable.for_response(content, tokens)
    positions = [table.dist(entry.get("top_logprobs") or []) for entry in content]
    path = [table.id_of(entry) for entry in content]
    walk, root = start_walk(labels)
    expand(walk, root, positions[0], table.token_bytes, table.eos_ids, masked=masked)
    for _round in range(WALK_ROUNDS):
        off = expand_on_path(walk, path, positions, table.token_bytes, table.eos_ids,  # type: ignore[arg-type]
                             masked=masked)
        dists = [await read_next(node) if table.exact else None for node in off]
        expand_off_path(walk, off, dists, table.token_bytes, table.eos_ids)
        if not walk.pending:
            break
    for node in walk.pending:
        settle_in_proportion(walk, node)
    return walk.result()
