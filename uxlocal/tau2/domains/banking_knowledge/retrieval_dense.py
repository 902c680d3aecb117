"""banking_knowledge dense search: a local embedding model, cosine similarity, top 10 (optional).

Upstream's later default (``alltools``) adds ``KB_search_dense`` over OpenAI embeddings. We offer the
same kind of search with any local model folder the user gives (a sentence-transformers or plain
transformers encoder): each document's ``content`` and the query are embedded by the model's token
states pooled over the attention mask (mean pooling, or the first token when the folder's
``1_Pooling/config.json`` asks for CLS), L2-normalised, and ranked by cosine, ties in load order.
Nothing is ever downloaded: the model loads with ``local_files_only`` and ``HF_HUB_OFFLINE=1``.

Which model: ``configure_embedding_model(folder)`` (what a CLI option would call), else the
environment variable ``UXLOCAL_KB_EMBEDDING_MODEL``; without either, ``embedding_model_dir``
raises an ``InputError`` that says how to set one. torch and transformers import lazily.

Contract: pure library; reads the model folder and the documents, writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from uxlocal import settings
from uxlocal.errors import InputError

from ...toolkit import arg
from .knowledge import TOP_K, KnowledgeBase, SearchHit, format_hits, knowledge_base_of

EMBEDDING_MODEL_ENV = "UXLOCAL_KB_EMBEDDING_MODEL"
_configured: Path | None = None


def configure_embedding_model(folder: str | Path | None) -> None:
    """Set (or with ``None`` clear) the embedding model folder for this process."""
    global _configured
    _configured = Path(folder).expanduser() if folder is not None else None


def embedding_model_dir() -> Path:
    """Return the configured embedding model folder; an ``InputError`` says how when there is none."""
    folder = _configured or settings.current().kb_embedding_model
    if folder is None:
        raise InputError(None, None, "dense knowledge-base search needs a local embedding model, and none is "
                         "configured", f"set {EMBEDDING_MODEL_ENV}=/path/to/model (a sentence-transformers "
                         "or transformers folder with config.json)")
    if not (folder / "config.json").is_file():
        raise InputError(folder, None, "not an embedding model folder: config.json is missing")
    return folder


class DenseIndex:
    """Unit-length embeddings of a fixed list of texts, searched by cosine similarity."""

    def __init__(self, model_dir: Path, texts: Sequence[str], *, batch_size: int = 16) -> None:
        self.model_dir = model_dir
        self._tokenizer, self._model = _load_encoder(model_dir)
        self._cls = _uses_cls_pooling(model_dir)
        self._batch_size = batch_size
        self.vectors = self.embed(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        """One L2-normalised row per text (float32), in order."""
        import torch

        rows = []
        limit = min(int(getattr(self._tokenizer, "model_max_length", 512) or 512), 512)
        # batches of similar length waste less compute on padding; rows go back to input order below
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.no_grad():
            for start in range(0, len(order), self._batch_size):
                chunk = [texts[i] for i in order[start:start + self._batch_size]]
                batch = self._tokenizer(chunk, padding=True, truncation=True, max_length=limit,
                                        return_tensors="pt")
                states = self._model(**batch).last_hidden_state
                if self._cls:
                    pooled = states[:, 0]
                else:
                    mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
                    pooled = (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
                rows.append(torch.nn.functional.normalize(pooled.float(), dim=-1).numpy())
        if not rows:
            return np.zeros((0, 0), np.float32)
        vectors = np.empty_like(np.concatenate(rows), dtype=np.float32)
        vectors[order] = np.concatenate(rows)
        return vectors

    def top(self, query: str, k: int = TOP_K) -> list[tuple[int, float]]:
        """``(document index, cosine)`` of the best ``min(k, 10, N)`` documents, ties in load order."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if not query.strip():
            return []
        scores = self.vectors @ self.embed([query])[0]
        order = np.argsort(-scores, kind="stable")[: min(k, TOP_K, len(scores))]
        return [(int(i), float(scores[i])) for i in order]


def _load_encoder(model_dir: Path) -> tuple[Any, Any]:
    settings.apply_process_defaults()  # never reach a hub, whatever the folder's config names
    try:
        from transformers import AutoModel, AutoTokenizer
    except ImportError as err:  # pragma: no cover - transformers is a core dependency
        raise InputError(model_dir, None, f"cannot load the embedding model: {err}") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        model = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
    except (OSError, ValueError) as err:
        raise InputError(model_dir, None, f"cannot load the embedding model: {err}") from None
    if tokenizer.pad_token is None:  # decoder-only models often have none; padding is masked anyway
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"  # CLS pooling reads position 0
    model.eval()
    return tokenizer, model


def _uses_cls_pooling(model_dir: Path) -> bool:
    pooling = model_dir / "1_Pooling" / "config.json"
    if not pooling.is_file():
        return False
    return bool(json.loads(pooling.read_text(encoding="utf-8")).get("pooling_mode_cls_token"))


_INDEXES: dict[tuple[Path, Path], tuple[KnowledgeBase, DenseIndex]] = {}


def dense_index(kb: KnowledgeBase, model_dir: Path | None = None) -> DenseIndex:
    """Return the dense index of ``kb`` under a model (default: the configured one), embedded once."""
    folder = (model_dir or embedding_model_dir()).resolve()
    cached = _INDEXES.get((kb.folder, folder))
    if cached is not None and cached[0] is kb:
        return cached[1]
    index = DenseIndex(folder, [doc.content for doc in kb.documents])
    _INDEXES[(kb.folder, folder)] = (kb, index)
    return index


def dense_search(
    kb: KnowledgeBase, query: str, *, k: int = TOP_K, model_dir: Path | None = None
) -> list[SearchHit]:
    """Rank the knowledge base for ``query`` by cosine similarity: at most 10 hits."""
    return [SearchHit(rank, kb.documents[index], score)
            for rank, (index, score) in enumerate(dense_index(kb, model_dir).top(query, k), 1)]


def KB_search_dense(  # the tool name upstream's alltools variant uses
    db: Any,
    *,
    query: Annotated[str, arg("What you are looking for, in your own words, e.g. 'customer wants to "
                                "contest a card payment'. Matching is by meaning, not exact words.")],
) -> str:
    """Search the bank's knowledge base by meaning (local embedding model, cosine similarity)."""
    return format_hits(dense_search(knowledge_base_of(db), query))


KB_SEARCH_DENSE_DESCRIPTION = (
    "Search the bank's knowledge base by meaning rather than exact words (a local embedding model, "
    "cosine similarity). Returns the 10 most similar documents in full, each with its title, "
    "document ID and similarity score. Use it when KB_search's keywords find nothing useful."
)
