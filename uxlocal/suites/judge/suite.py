"""``uxlocal judge`` (also ``uxlocal run judge``): judge any conversations file with a rubric.

Plan: load the input through the column map, then one episode per (item, judge) — or per
(assistant turn, judge) for ``unit = each_assistant_turn`` — in input order, so the requests of
one conversation stay adjacent in every batch. Several judges are roles ``judge``, ``judge2``, …
(``--judges a,b`` binds them); each verdict row names its judge.

Identity: the rubric's sha256, the prompt wording's hash and a content hash of the input are in
the run identity (``prompt_hashes``), so the same command on changed data or a changed rubric is
a new run, and the same command on the same data replays from the cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from uxlocal import paths
from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.episode import EpisodeSpec
from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel
from uxlocal.reportkit.model import ReportTable
from uxlocal.suites.base import DemoSpec, PlanChunk, Suite, SuitePlan
from uxlocal.suites.judge import adapter as judge_adapter
from uxlocal.suites.judge import episodes
from uxlocal.suites.judge.config import JudgeConfig
from uxlocal.suites.judge.inputs import DistinctIds, HumanParser, JudgeItem, input_sha256, iter_loaded
from uxlocal.suites.judge.prompts import template_sha256
from uxlocal.suites.judge.rubrics import TIE_LABEL, Rubric, load_rubric


def judge_roles(roles: Any) -> list[str]:
    """The judge roles bound in a run, ``judge`` first."""
    found = [r for r in roles if r == "judge" or (r.startswith("judge") and r[5:].isdigit())]
    return sorted(found, key=lambda r: int(r[5:] or 1))


def human_parser(rubric: Rubric) -> HumanParser:
    """How a human column value becomes a label, a score or a preference for this rubric."""
    if rubric.kind == "likert":
        return _score
    if rubric.kind == "pairwise":
        return _preference
    names = {n.casefold(): n for n in rubric.names()}
    positive = rubric.positive_label()
    negative = next((n for n in rubric.names() if n != positive), None)

    def label(value: Any) -> str:
        text = str(value).strip()
        if text.casefold() in names:
            return names[text.casefold()]
        if positive is not None and text.casefold() in ("1", "true", "yes", "+1"):
            return positive
        if negative is not None and text.casefold() in ("0", "-1", "false", "no"):
            return negative
        raise ValueError(f"{text!r} is not one of {list(rubric.names())}")
    return label


def _score(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number") from None


def _preference(value: Any) -> str:
    text = str(value).strip().casefold()
    mapping = {"a": "A", "b": "B", "tie": TIE_LABEL, "model_a": "A", "model_b": "B"}
    if text not in mapping:
        raise ValueError(f"{value!r} is not A, B or tie")
    return mapping[text]


def _require_input(config: JudgeConfig) -> None:
    if not config.input:
        raise InputError(None, None, "no input given", "pass INPUT (a .jsonl/.csv/.parquet or duckdb:PATH::SQL)")


def _item_rows(item: JudgeItem, turn: int | None, kind: str) -> dict[str, Any]:
    item_id = item.item_id if turn is None else f"{item.item_id}@t{turn}"
    data = {"kind": kind, "human": item.human if turn is None else None, "group": item.group,
            "source_id": item.item_id, "turn": turn, "n_turns": len(item.conversation)}
    return {"item_id": item_id, "task": "judge", "data": data, "source_file": item.source_file,
            "source_line": item.source_line}


def _chunks(config: JudgeConfig, rubric: Rubric, asker: episodes.Asker, roles: list[str], limit: int | None,
            keep: set[str] | None = None, distinct: DistinctIds | None = None) -> Iterator[PlanChunk]:
    """The plan of the first ``limit`` items (all when None) among ``keep`` (all when None), one
    input chunk at a time (``distinct``: what earlier reads found of the ids, see ``DistinctIds``)."""
    pairwise = rubric.kind == "pairwise"
    left = limit
    for loaded in iter_loaded(config.input, config.columns(), pairwise=pairwise, human=human_parser(rubric),
                              skip_bad_rows=config.skip_bad_rows, distinct=distinct):
        chunk = PlanChunk(items=[], episodes=[], quarantine=[
            {"task": "judge", "source_file": q.file, "source_line": q.line, "reason": q.reason, "raw": q.raw}
            for q in loaded.quarantine])
        items = loaded.items if keep is None else [i for i in loaded.items if i.item_id in keep]
        items = items if left is None else items[:left]
        for item in items:
            for turn in episodes.unit_turns(item, rubric.unit):
                row = _item_rows(item, turn, rubric.kind)
                chunk.items.append(row)
                for role in roles:
                    program = (episodes.bind(episodes.pairwise_program, item, asker, role, config.both_orders)
                               if pairwise else episodes.bind(episodes.pointwise_program, item, asker, role, turn))
                    chunk.episodes.append(EpisodeSpec(f"{row['item_id']}|{role}", program, item_id=row["item_id"],
                                                      task="judge"))
        yield chunk
        if left is not None:
            left -= len(items)
            if left <= 0:
                return


class JudgeSuite(Suite):
    """Judge scoring of the user's own conversations, with agreement against human labels."""

    name = "judge"
    help = "Judge a conversations file with a rubric; agreement with human labels when given."
    config_cls = JudgeConfig
    roles = ("judge",)
    example = "--input data.jsonl --rubric ux-liked --model judge=embedded"
    report_section = "uxlocal.suites.judge.section"

    def role_specs(self, config: SuiteConfig, specs: dict[str, str]) -> dict[str, str]:
        """``--judges a,b`` binds judge=a, judge2=b; explicit ``--model`` bindings win."""
        assert isinstance(config, JudgeConfig)
        names = [n.strip() for n in (config.judges or "").split(",") if n.strip()]
        implied = {("judge" if i == 0 else f"judge{i + 1}"): n for i, n in enumerate(names)}
        return {**implied, **specs}

    def demo(self) -> DemoSpec:
        """Ten bundled conversations (en and zh) with their human thumbs, judged with ``ux-liked``."""
        sample = paths.data_dir() / "judge" / "conversations.jsonl"
        config = {"input": str(sample), "rubric": "ux-liked", "human_col": "thumb", "group_col": "topic",
                  "bootstrap": 200}
        return DemoSpec(config, {"judge": "embedded"}, limit=10,
                        data="uxlocal's bundled judge sample (conversations we wrote, CC0, with human thumbs)")

    def adapt_models(self, config: SuiteConfig, models: dict[str, ResolvedModel]) -> dict[str, ResolvedModel]:
        """Attach ``--judge-adapter`` adapters (checked against their base) to their judge roles."""
        assert isinstance(config, JudgeConfig)
        return judge_adapter.attach(config.judge_adapter, models)

    def prompt_hashes(self, config: SuiteConfig) -> dict[str, str]:
        """Rubric sha256, prompt wording hash, the input's content hash (and the held-out selection)."""
        assert isinstance(config, JudgeConfig)
        _require_input(config)
        rubric = load_rubric(config.rubric)
        hashes = {f"rubric/{rubric.name}": rubric.sha256(), "judge/prompts": template_sha256(),
                  "input": input_sha256(config.input)}
        if config.heldout_of:
            ids = judge_adapter.heldout_ids(config.heldout_of, hashes["input"])
            hashes["judge/heldout"] = judge_adapter.ids_sha256(ids)
        return hashes

    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """One episode per (unit, judge), conversations kept adjacent; the input is read in chunks.

        The plan is streamed (``SuitePlan.stream``): a million-row input is never held whole. The
        first chunk is read here, so a bad file or row stops the command before the run starts.
        """
        assert isinstance(config, JudgeConfig)
        _require_input(config)
        rubric = load_rubric(config.rubric)
        asker = episodes.Asker(rubric, reason=config.mode == "reason", layout=config.layout,
                               reason_max_tokens=config.reason_max_tokens,
                               loras=judge_adapter.role_loras(config.judge_adapter))
        roles = judge_roles(run.models) or ["judge"]
        keep = None
        if config.heldout_of:
            keep = set(judge_adapter.heldout_ids(config.heldout_of, input_sha256(config.input)))
        distinct = DistinctIds()  # the run's second read of an unchanged file skips the check across chunks
        plan = SuitePlan(episodes=[],
                         stream=lambda: _chunks(config, rubric, asker, roles, run.limit, keep, distinct))
        next(plan.chunks(), None)
        if keep is not None:  # the adapter recorded its held-out ids from this very input (its hash is checked)
            plan.notes.append(f"{len(keep)} held-out rows of the adapter {config.heldout_of}")
        plan.notes.append(f"rubric {rubric.name} ({rubric.kind}, sha256 {rubric.sha256()[:12]}), "
                          f"{len(rubric.criteria_list())} criteria, judges: {', '.join(roles)}")
        return plan

    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """Verdict counts, throughput and agreement tables, from the judge views."""
        from uxlocal.suites.judge.report import judge_tables

        row = con.execute("SELECT config FROM runs WHERE run_id = ?", [run_id]).fetchone()
        config = json.loads(row[0]) if row else {}
        n_boot = int(config.get("suite_config", {}).get("bootstrap", 1000))
        return judge_tables(con, run_id, n_boot=n_boot, seed=int(config.get("seed", 0)))
