"""banking_knowledge retrieval as the agent meets it.

The ``KB_search`` tool, retrieval variants (``bm25``; ``bm25+dense`` with a local encoder) and the
variant's policy text.

The knowledge base and the BM25 scoring live in ``knowledge.py`` (their names are re-exported
here); the optional dense search in ``retrieval_dense.py``, imported only when a variant needs it.

Contract: pure library; reads the documents folder, never writes, never touches the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from uxlocal.errors import InputError

from ...registry import resolve_components
from ...toolkit import Toolkit, arg
from .knowledge import (  # noqa: F401  (re-exported: the knowledge base's names, as callers know them)
    _LOADED,
    BM25_B,
    BM25_EPSILON,
    BM25_K1,
    DOCUMENTS_DIR,
    TIMING_LINE,
    TOP_K,
    BM25Index,
    KBDocument,
    KnowledgeBase,
    SearchHit,
    bm25_tokens,
    documents_dir_of,
    format_hits,
    knowledge_base_of,
    load_knowledge_base,
    search,
)

# --- the agent tool and the variant ------------------------------------------------------------------

DEFAULT_RETRIEVAL_VARIANT = "bm25"


@dataclass(frozen=True)
class RetrievalVariant:
    """A retrieval set-up the agent can be given, as recorded in a run's info."""

    name: str
    tools: tuple[str, ...]
    prompt_file: str
    """The agent's policy template in ``prompts/`` (upstream's file for this variant)."""
    policy_note: str = ""
    """Our own sentence appended to the policy, for tools the upstream template does not name."""

    @property
    def dense(self) -> bool:
        """Whether the variant needs a local embedding model."""
        return "KB_search_dense" in self.tools


RETRIEVAL_VARIANTS: dict[str, RetrievalVariant] = {
    "bm25": RetrievalVariant("bm25", ("KB_search",), "classic_rag_bm25_no_grep.md"),
    "bm25+dense": RetrievalVariant(
        "bm25+dense", ("KB_search", "KB_search_dense"), "classic_rag_bm25_no_grep.md",
        policy_note="You can also search the knowledge base by meaning with the `KB_search_dense` tool "
                    "(a local embedding model), when keywords do not find what you need."),
}


def retrieval_variant(name: str = DEFAULT_RETRIEVAL_VARIANT) -> RetrievalVariant:
    """Look up a variant by name; a ``ValueError`` lists the ones we implement."""
    try:
        return RETRIEVAL_VARIANTS[name]
    except KeyError:
        known = ", ".join(sorted(RETRIEVAL_VARIANTS))
        raise ValueError(f"unknown banking_knowledge retrieval variant {name!r}; "
                         f"implemented: {known}") from None


def check_retrieval(name: str = DEFAULT_RETRIEVAL_VARIANT) -> None:
    """Fail before a run starts when the variant cannot work (dense without a model: ``InputError``)."""
    if retrieval_variant(name).dense:
        from .retrieval_dense import embedding_model_dir

        embedding_model_dir()


def retrieval_info(name: str = DEFAULT_RETRIEVAL_VARIANT) -> dict[str, object]:
    """Describe retrieval for a run's info, so results say which search the agent had.

    Leaderboard numbers after May 2026 use upstream's ``alltools``; ours are ``bm25`` (v1.0.0's
    default, offline) unless stated. Dense variants also name the embedding model folder.
    """
    variant = retrieval_variant(name)
    info: dict[str, object] = {"retrieval_variant": variant.name, "retrieval_tools": list(variant.tools),
                               "retrieval_top_k": TOP_K, "retrieval_prompt": variant.prompt_file}
    if variant.dense:
        from .retrieval_dense import embedding_model_dir

        info["retrieval_embedding_model"] = str(embedding_model_dir())
    return info


def KB_search(  # the tool name the agent and upstream's prompts use
    db: Any,
    query: Annotated[str, arg("Words to look for in the bank's documents, e.g. 'dispute credit card "
                                "charge'. Matching is on whole lower-case words, so use the terms a "
                                "policy document would use.")],
) -> str:
    """Search the bank's knowledge base with BM25 keyword matching."""
    return format_hits(search(knowledge_base_of(db), query))


_KB_SEARCH_DESCRIPTION = (
    "Search the bank's knowledge base (policies, procedures, product terms, fees, and the names of "
    "tools you can unlock) by keyword relevance (BM25). Returns the 10 best-matching documents in "
    "full, each with its title, document ID and score."
)


def register_retrieval(toolkit: Toolkit, variant: str = DEFAULT_RETRIEVAL_VARIANT) -> None:
    """Add the variant's search tools to the agent's toolkit (read tools: never replayed).

    Registering needs no model; a dense variant finds its model on the first search, so call
    ``check_retrieval(variant)`` before a run to fail early with the fix.
    """
    chosen = retrieval_variant(variant)
    toolkit.tool("read", _KB_SEARCH_DESCRIPTION, qualifier="KBSearchMixin")(KB_search)  # upstream's mixin
    if chosen.dense:
        from .retrieval_dense import KB_SEARCH_DENSE_DESCRIPTION, KB_search_dense

        toolkit.tool("read", KB_SEARCH_DENSE_DESCRIPTION)(KB_search_dense)


# --- the agent's policy for a variant -----------------------------------------------------------------



def variant_policy(domain_folder: str | Path, variant: str = DEFAULT_RETRIEVAL_VARIANT) -> str:
    """Render the agent policy: the variant's ``prompts/`` template with its components inlined.

    Each ``{{component:NAME}}`` becomes ``prompts/components/NAME.md``; both are read from the data
    dir, never bundled. A variant's ``policy_note`` (ours) is appended.
    """
    prompts = Path(domain_folder) / "prompts"
    chosen = retrieval_variant(variant)
    template = prompts / chosen.prompt_file
    try:
        text = template.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("banking_knowledge prompt template not found", path=template) from None

    try:
        policy = resolve_components(text, prompts / "components")
    except FileNotFoundError as err:
        raise InputError(str(err), path=template) from None
    return f"{policy.rstrip()}\n\n{chosen.policy_note}\n" if chosen.policy_note else policy
