"""banking_knowledge's knowledge base and its offline, deterministic BM25 (spec §B.4).

Upstream's default search at v1.0.0 (variant ``bm25``) indexes each whole document's ``content``
(no title, no chunking), tokenised by lower-casing and splitting on whitespace with punctuation kept,
and scores with Okapi BM25 as the ``rank_bm25`` package does:

- ``idf(t) = ln((N - n_t + 0.5) / (n_t + 0.5))``; a *negative* idf (a term in more than half the
  documents) is replaced by ``epsilon * mean_idf``, the mean taken over the whole vocabulary before
  any replacement (an idf of exactly 0 stays 0);
- ``score(d, q) = sum over query tokens (repeats count) of
  idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))``, with k1 1.5, b 0.75,
  epsilon 0.25; a token the corpus never uses adds nothing.

A search returns the top 10 by a stable sort, zero-score documents included, ties in load order.
Upstream loads in unsorted ``Path.glob`` order; we load in filename order so ties break the same way
on every machine, and we leave out the ``[Timing …]`` line so identical calls give identical results.
We compute the scores with the same float operations in the same order as ``rank_bm25`` (so even
near-ties rank alike) but we do not depend on it.

Contract: pure library; reads the documents folder, never writes, never touches the network.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from uxlocal.errors import InputError

from ...toolkit import ToolError

BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25
TOP_K = 10
"""Hits per search, as upstream's retriever: a caller's ``k`` can only shrink this."""

DOCUMENTS_DIR = "documents"
"""The knowledge base's folder inside the domain folder (beside ``db.json``)."""


# --- the knowledge base --------------------------------------------------------------------------


@dataclass(frozen=True)
class KBDocument:
    """One knowledge-base document as stored in ``documents/<id>.json``."""

    id: str
    title: str
    content: str


@dataclass(eq=False)
class KnowledgeBase:
    """The documents of one folder, in filename order; the BM25 index is built on first search."""

    folder: Path
    documents: tuple[KBDocument, ...]

    @functools.cached_property
    def bm25(self) -> BM25Index:
        """The BM25 index over every document's content (built once per loaded folder)."""
        return BM25Index([doc.content for doc in self.documents])

    def __len__(self) -> int:
        return len(self.documents)


_LOADED: dict[Path, tuple[tuple[tuple[str, int, int], ...], KnowledgeBase]] = {}


def load_knowledge_base(folder: str | Path) -> KnowledgeBase:
    """Load ``folder/*.json`` (objects with string ``id``, ``title``, ``content``), sorted by file name.

    Cached per process by resolved folder; the cache is revalidated against every file's name,
    mtime and size (~1 ms for 698 files), so a test's temporary copy or an edited file is seen.
    """
    path = Path(folder).resolve()
    stamp = _folder_stamp(path)
    cached = _LOADED.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    documents = tuple(_read_document(path / name) for name, _, _ in stamp)
    _check_unique_ids(documents, path)
    kb = KnowledgeBase(folder=path, documents=documents)
    _LOADED[path] = (stamp, kb)
    return kb


def _folder_stamp(path: Path) -> tuple[tuple[str, int, int], ...]:
    try:
        entries = [e for e in os.scandir(path) if e.name.endswith(".json") and e.is_file()]
    except FileNotFoundError:
        raise InputError("knowledge base folder not found",
                         "banking_knowledge needs its documents/ folder beside db.json", path=path) from None
    except NotADirectoryError:
        raise InputError("knowledge base path is not a folder", path=path) from None
    stamp = []
    for entry in entries:
        info = entry.stat()
        stamp.append((entry.name, info.st_mtime_ns, info.st_size))
    stamp.sort()
    return tuple(stamp)


def _read_document(path: Path) -> KBDocument:
    try:
        raw = json.loads(path.read_bytes())
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON: {err.msg}", path=path, line=err.lineno) from None
    fields = ("id", "title", "content")
    if not isinstance(raw, dict) or not all(isinstance(raw.get(f), str) for f in fields):
        raise InputError("a knowledge base document must be an object with string "
                         "fields 'id', 'title' and 'content'",
                         path=path)
    return KBDocument(id=raw["id"], title=raw["title"], content=raw["content"])


def _check_unique_ids(documents: Sequence[KBDocument], folder: Path) -> None:
    # upstream keys documents by id, so a repeated id would silently drop a document
    seen: dict[str, int] = {}
    for index, doc in enumerate(documents):
        if doc.id in seen:
            raise InputError(f"document id {doc.id!r} appears twice "
                             f"(files #{seen[doc.id] + 1} and #{index + 1} in name order)",
                             path=folder)
        seen[doc.id] = index


# --- BM25 ------------------------------------------------------------------------------------------


def bm25_tokens(text: str) -> list[str]:
    """Upstream's tokeniser: lower-case, split on any whitespace, punctuation stays attached."""
    return text.lower().split()


class BM25Index:
    """Okapi BM25 over a fixed list of texts (see the module docstring for the exact formula)."""

    def __init__(self, texts: Sequence[str], *, k1: float = BM25_K1, b: float = BM25_B,
                 epsilon: float = BM25_EPSILON) -> None:
        if not texts:
            raise ValueError("BM25 needs at least one document")
        self.size = len(texts)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        lengths = []
        for index, text in enumerate(texts):
            tokens = bm25_tokens(text)
            lengths.append(len(tokens))
            # Counter keeps first-occurrence order, so the vocabulary (and the idf sum) is built
            # in the same order as rank_bm25's and the mean idf is bit-identical
            for term, tf in Counter(tokens).items():
                docs, tfs = postings.setdefault(term, ([], []))
                docs.append(index)
                tfs.append(tf)
        self.avgdl = sum(lengths) / self.size
        self.idf = _okapi_idf({term: len(docs) for term, (docs, _) in postings.items()}, self.size, epsilon)
        doc_len = np.array(lengths)
        # operation order as in rank_bm25's get_scores, so every score is the same float
        self._norm = k1 * (1 - b + b * doc_len / self.avgdl)
        self._k1_plus_1 = k1 + 1
        self._postings = {term: (np.array(docs), np.array(tfs)) for term, (docs, tfs) in postings.items()}

    def scores(self, query: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        """One BM25 score per document, in load order."""
        total = np.zeros(self.size)
        for term in bm25_tokens(query):
            idf = self.idf.get(term, 0.0)
            if idf == 0.0:
                continue
            docs, tfs = self._postings[term]
            total[docs] += idf * (tfs * self._k1_plus_1 / (tfs + self._norm[docs]))
        return total

    def top(self, query: str, k: int = TOP_K) -> list[tuple[int, float]]:
        """``(document index, score)`` of the best ``min(k, 10, N)`` documents, ties in load order.

        Zero-score documents are included when fewer documents match; an empty query returns
        nothing (upstream's retriever answers an empty or blank query with no results).
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if not query.strip():
            return []
        scores = self.scores(query)
        order = np.argsort(-scores, kind="stable")[: min(k, TOP_K, self.size)]
        return [(int(i), float(scores[i])) for i in order]


def _okapi_idf(doc_freq: dict[str, int], size: int, epsilon: float) -> dict[str, float]:
    idf = {term: math.log(size - n + 0.5) - math.log(n + 0.5) for term, n in doc_freq.items()}
    total = 0.0
    for value in idf.values():  # a plain running sum, as rank_bm25 (sum() compensates since 3.12)
        total += value
    floor = epsilon * (total / len(idf)) if idf else 0.0
    return {term: (floor if value < 0 else value) for term, value in idf.items()}


# --- search and its text ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    """One ranked document."""

    rank: int
    document: KBDocument
    score: float


def search(kb: KnowledgeBase, query: str, *, k: int = TOP_K) -> list[SearchHit]:
    """Rank the knowledge base for ``query`` by BM25: at most 10 hits, ``k`` only shrinks the list."""
    return [SearchHit(rank, kb.documents[index], score)
            for rank, (index, score) in enumerate(kb.bm25.top(query, k), 1)]


def format_hits(hits: Sequence[SearchHit]) -> str:
    """Write what the agent reads, in upstream's layout.

    Per hit its rank and title, then indented id, score (4 decimals) and full content; then the
    timing bracket.

    Upstream's bracket carries wall-clock milliseconds; ours is always ``retrieval=0ms, total=0ms``,
    so the same call gives the same text and the model still sees the line it would see upstream.
    """
    blocks = [f"{hit.rank}. {hit.document.title}\n"
              f"   ID: {hit.document.id}\n"
              f"   Score: {hit.score:.4f}\n"
              f"   Content: {hit.document.content}\n"
              for hit in hits]
    body = "\n".join(blocks) if blocks else "No relevant documents found."
    return f"{body}\n\n{TIMING_LINE}"


TIMING_LINE = "[Timing: retrieval=0ms, total=0ms]"


def documents_dir_of(db: Any) -> Path:
    """Locate a BankingDB's knowledge base: ``documents/`` beside the ``db.json`` it came from."""
    source = getattr(db, "source", None)
    if source is None:
        raise ToolError("the knowledge base is unavailable: this bank DB was not loaded from a data folder")
    return Path(source).parent / DOCUMENTS_DIR


def knowledge_base_of(db: Any) -> KnowledgeBase:
    """Return the (cached) knowledge base of a BankingDB's data folder."""
    return load_knowledge_base(documents_dir_of(db))
