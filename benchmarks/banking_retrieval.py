"""banking_knowledge retrieval: BM25 index/query time and the agent's context with one search.

    .venv/bin/python -m benchmarks.banking_retrieval [--model embedded] [--data DIR]

Goals (issue 16): the index over the 698 documents builds in < 1 s and a query (rank + format)
takes < 20 ms. Also counts, with the model's own tokenizer and chat template, the tokens of the
agent seat's prompt (instructions + the bm25 policy + the agent tools) and of the same prompt after
one ``KB_search`` result, i.e. the context window a model needs to get through one search.
When the banking domain module (``domains.banking_knowledge``) is not there, the tool list is ``KB_search``
alone and the block says so.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks._common import cli_parser, report, wait_quiet

QUERIES = [
    "dispute a credit card charge", "How do I open a checking account?",
    "lost or stolen debit card replacement", "credit limit increase request",
    "Rho-Bank+ subscription annual fee", "transfer to human agent",
    "close my credit card account", "cash back rewards redemption",
]


def _agent_tool_schemas() -> tuple[list[dict[str, Any]], str]:
    from uxlocal.tau2.domains.banking_knowledge.retrieval import register_retrieval
    from uxlocal.tau2.toolkit import Toolkit

    try:
        from uxlocal.tau2.domains.banking_knowledge.agent_tools import DOMAIN  # type: ignore[import-not-found]
    except ImportError:
        alone = Toolkit("bm25 only")
        register_retrieval(alone)
        return [s.openai_schema() for s in alone.tools()], "KB_search only (banking domain absent)"
    return [s.openai_schema() for s in DOMAIN.agent_tools.tools()], "banking_knowledge agent tools"


def _timings(docs: Path) -> list[tuple[str, Any]]:
    from uxlocal.tau2.domains.banking_knowledge import retrieval

    started = time.perf_counter()
    kb = retrieval.load_knowledge_base(docs)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    kb.bm25  # noqa: B018 - builds the index
    index_s = time.perf_counter() - started
    query_ms = []
    for _ in range(5):
        for query in QUERIES:
            started = time.perf_counter()
            retrieval.format_hits(retrieval.search(kb, query))
            query_ms.append(1000 * (time.perf_counter() - started))
    started = time.perf_counter()
    for _ in QUERIES:
        retrieval.load_knowledge_base(docs)  # what each tool call does first: revalidate the cache
    revalidate_ms = 1000 * (time.perf_counter() - started) / len(QUERIES)
    words = [len(retrieval.format_hits(retrieval.search(kb, q)).split()) for q in QUERIES]
    return [("documents", len(kb)), ("load JSON, cold (ms)", 1000 * load_s),
            ("build BM25 index (ms)", 1000 * index_s), ("query: rank + format, mean (ms)",
            statistics.mean(query_ms)), ("query: rank + format, max (ms)", max(query_ms)),
            ("cache revalidation per tool call (ms)", revalidate_ms),
            ("words per search result, mean", round(statistics.mean(words))),
            ("words per search result, min / max", f"{min(words)} / {max(words)}")]


def _context_tokens(model: str, domain: Path) -> tuple[list[tuple[str, Any]], str]:
    from transformers import AutoTokenizer

    from uxlocal.engine.base import Sampling
    from uxlocal.engine.resolve import resolve
    from uxlocal.tau2 import Message, ToolCall
    from uxlocal.tau2.domains.banking_knowledge.retrieval import (
        format_hits,
        load_knowledge_base,
        search,
        variant_policy,
    )
    from uxlocal.tau2.episode.agent import GREETING, AgentSeat

    tokenizer = AutoTokenizer.from_pretrained(resolve(model, prepare_missing=False).path)
    schemas, tools_note = _agent_tool_schemas()
    seat = AgentSeat.build(policy=variant_policy(domain), tool_schemas=schemas, sampling=Sampling())
    kb = load_knowledge_base(domain / "documents")
    opening = [Message(role="assistant", content=GREETING),
               Message(role="user", content="Hi, there is a charge on my credit card I don't recognise.")]

    def tokens(messages: list[Message]) -> int:
        chat = seat.request(messages).messages
        text = tokenizer.apply_chat_template(list(chat), tokenize=False, add_generation_prompt=True)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    base = tokens(opening)
    after = []
    for query in QUERIES:
        call = ToolCall(id="c1", name="KB_search", arguments={"query": query})
        result = format_hits(search(kb, query))
        after.append(tokens(opening + [Message(role="assistant", tool_calls=[call]),
                                       Message(role="tool", id="c1", content=result, requestor="assistant")]))
    growth = [a - base for a in after]
    rows = [("prompt before any search (tokens)", base),
            ("one search result adds, mean (tokens)", round(statistics.mean(growth))),
            ("one search result adds, max (tokens)", max(growth)),
            ("prompt + one search, max (tokens)", max(after)),
            ("prompt + two searches, est. max (tokens)", base + 2 * max(growth))]
    return rows, tools_note


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--data", type=Path, default=None, help="tau2 data dir (default: as uxlocal finds it)")


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    from uxlocal.tau2.data import resolve_data_dir
    from uxlocal.tau2.layout import domain_dir, tau2_root

    domain = domain_dir(tau2_root(resolve_data_dir(args.data)), "banking_knowledge")
    load = wait_quiet()
    rows = _timings(domain / "documents")
    token_rows, tools_note = _context_tokens(args.model, domain)
    config = {"data": str(domain), "model (tokenizer)": args.model, "agent tools": tools_note,
              "queries": len(QUERIES), "1-min load at start": f"{load:.2f}"}
    report("banking_knowledge retrieval: speed and context", config, rows + token_rows, args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
