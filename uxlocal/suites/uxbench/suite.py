"""``uxlocal run uxbench``: T1 UX Judge, T2 UX Eval and T3 UX Recovery as scheduler episodes.

One episode per item. T1 asks the judge once (label mode: a Choice over the two labels with label
probabilities; reason mode: JSON ``{reasoning, verdict}``). T2 and T3 ask the candidate for a reply,
then the judge for a label on it; the scheduler batches each step across items. ``--reply-scoring
grm`` reads T2/T3 verdicts the way UXBench's GRM is read (spec §2.4): score =
P(good)/(P(good)+P(bad)) from the label probabilities, good when score >= 0.5; any judge can stand
there, a prompted model or one with a learned adapter.

Every verdict row names its judge; invalid outputs (cut off, context window, empty reply) are
stored with ``valid = false`` and counted apart, never guessed. Point metrics come from
``suites/uxbench/views.sql``; intervals are percentile bootstraps over the same view rows
(``metrics.py``), so the printed numbers and ``uxlocal query`` agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from uxlocal import settings
from uxlocal.config import RunConfig, SuiteConfig
from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome, Program
from uxlocal.errors import InputError
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.reportkit.model import ReportTable
from uxlocal.store.db import json_value, query
from uxlocal.suites.base import DemoSpec, Suite, SuitePlan
from uxlocal.suites.uxbench import metrics, published, upstream_run
from uxlocal.suites.uxbench.data import (
    SAMPLE_DIR,
    EvalItem,
    JudgeItem,
    Loaded,
    QuarantineRecord,
    RecoveryItem,
    Turn,
    UXBenchFiles,
    canonical_dimension,
    canonical_scenario,
    canonical_success,
    load_eval,
    load_judge,
    load_recovery,
    task_files,
)
from uxlocal.suites.uxbench.prompts import (
    eval_generation_messages,
    eval_judge_messages,
    judge_messages,
    labels_for,
    parse_verdict,
    prompt_hashes,
    reason_model,
    recovery_generation_messages,
    recovery_judge_messages,
)
from uxlocal.suites.uxbench.upstream import ENV_VAR, UpstreamProtocol, read_checkout

TASKS = ("judge", "eval", "recovery")
VERDICT_NAMES = {"judge": "t1", "eval": "t2", "recovery": "t3"}
"""verdicts.name per task (the views select on these)."""
LABEL_TOKENS = 8
"""Completion budget of a label-mode verdict (a label is one to three tokens)."""


class UXBenchConfig(SuiteConfig):
    """Options of ``uxlocal run uxbench``."""

    not_in_identity: ClassVar[dict[str, str]] = {
        "data": "where the files sit; their contents are hashed into the run identity instead"}

    data: str | None = None
    """Folder with the released files (default: the bundled sample data we wrote)."""
    tasks: str = "judge,eval,recovery"
    """Comma-separated tasks to run: judge (T1), eval (T2), recovery (T3)."""
    judge_mode: Literal["label", "reason"] = "label"
    """T1 judge: label (constrained label + probabilities) or reason (JSON reasoning then verdict)."""
    judge_bad_file: str | None = None
    """T1 disliked file name (default as released)."""
    judge_good_file: str | None = None
    """T1 liked file name (default as released)."""
    eval_file: str | None = None
    """T2 file name (default as released)."""
    recovery_file: str | None = None
    """T3 file name (default as released)."""
    skip_bad_rows: bool = False
    """Quarantine bad rows (stored with the reason) instead of stopping at the first one."""
    max_tokens: int = Field(2048, ge=1)
    """Completion budget of T2/T3 candidate replies (the original harness used 2048)."""
    temperature: float = Field(0.7, ge=0.0)
    """Sampling temperature of T2/T3 candidate replies (seeded per item)."""
    reason_max_tokens: int = Field(512, ge=8)
    """Completion budget of a T1 reason-mode verdict."""
    max_history_turns: int | None = Field(None, ge=0)
    """Keep only the last N history turns in every prompt (to fit small windows); recorded."""
    recovery_system_prompt: bool = False
    """T3: put our recovery instruction in a system turn (default: the plain multi-turn variant)."""
    bootstrap: int = Field(2000, ge=0)
    """Bootstrap resamples for the 95% intervals (0 = no intervals)."""
    upstream: str | None = None
    """A UXBench checkout (mengze-hong/UXBench; default: $UXLOCAL_UXBENCH_SRC; "" = none): ask and read
    as its harness does, with its words read from there. Without one, uxlocal's own words: the run is
    NOT comparable with the published leaderboard."""
    reply_scoring: Literal["label", "grm"] = "label"
    """T2/T3 verdicts: label (the judge's constrained greedy label) or grm (UXBench's GRM rule for any
    judge, trained or not: score = P(good)/(P(good)+P(bad)) from the label probabilities, good when
    score >= 0.5, ties to good)."""

    def task_list(self) -> list[str]:
        """Return the chosen tasks in canonical order; unknown names are a user error."""
        chosen = [t.strip() for t in self.tasks.split(",") if t.strip()]
        unknown = [t for t in chosen if t not in TASKS]
        if unknown or not chosen:
            raise InputError(f"--tasks: unknown task(s) {', '.join(unknown) or '(none)'}",
                             f"choose from {', '.join(TASKS)}")
        return [t for t in TASKS if t in chosen]

    def files(self) -> UXBenchFiles:
        """Released file names with this run's overrides."""
        given = {"judge_bad": self.judge_bad_file, "judge_good": self.judge_good_file,
                 "eval": self.eval_file, "recovery": self.recovery_file}
        return UXBenchFiles(**{k: v for k, v in given.items() if v})

    def data_dir(self) -> Path:
        """Return the data folder (bundled samples by default)."""
        return Path(self.data) if self.data else SAMPLE_DIR

    def checkout(self) -> Path | None:
        """Return the UXBench checkout whose protocol the run follows: ``upstream``, else the environment."""
        if self.upstream == "":
            return None
        given = Path(self.upstream) if self.upstream else settings.current().uxbench_src
        return given.expanduser().resolve() if given else None

    def task_paths(self, task: str) -> list[Path]:
        """Return the data files one task reads, in reading order (JSONL, Parquet or hub shards)."""
        keys = {"judge": ["judge_bad", "judge_good"], "eval": ["eval"], "recovery": ["recovery"]}
        return [path for key in keys[task] for path in task_files(self.data_dir(), self.files(), key)]


# ---------------------------------------------------------------- helpers


def _trim(turns: Sequence[Turn], keep: int | None) -> list[Turn]:
    """Return the last ``keep`` turns (all when None); a leading system turn is kept for generation."""
    turns = list(turns)
    if keep is None or len(turns) <= keep:
        return turns
    system = [t for t in turns[:1] if t.role == "system"]
    rest = turns[len(system):]
    return system + (rest[-keep:] if keep else [])


def _p_good(result: GenResult, good: str, bad: str) -> float | None:
    """P(good) renormalized over the two labels, from the label-path probabilities."""
    probs = result.label_probs or {}
    g, b = probs.get(good), probs.get(bad)
    if g is None or b is None or g + b <= 0:
        return None
    return g / (g + b)


def _label_request(messages: list[dict[str, str]], lang: str, tag: str) -> GenRequest:
    """Return a greedy label-mode judge request (the GRM convention: greedy, a few tokens)."""
    return GenRequest("judge", tuple(messages), Sampling(temperature=0.0, max_tokens=LABEL_TOKENS),
                      Choice(labels_for(lang)), tag=tag)  # type: ignore[arg-type]


def _record_label(ctx: EpisodeContext, name: str, result: GenResult, lang: str) -> int | None:
    """Store a label-mode verdict; returns 1 / -1 / None."""
    good, bad = labels_for(lang)  # type: ignore[arg-type]
    verdict = parse_verdict(result.text, lang, "label") if result.valid else None  # type: ignore[arg-type]
    ctx.verdict(name, result=result, label=_canonical_label(verdict), score=_p_good(result, good, bad),
                valid=verdict is not None)
    return verdict


def _record_grm(ctx: EpisodeContext, name: str, result: GenResult, lang: str) -> int | None:
    """Store a GRM-rule verdict (spec §2.4): the larger label probability wins, ties go to good.

    Read from the label probabilities whatever text the greedy decode produced: a label of
    several tokens can be decoded greedily one way while its whole path is less likely.
    """
    good, bad = labels_for(lang)  # type: ignore[arg-type]
    score = _p_good(result, good, bad)
    verdict = None if score is None else metrics.verdict_from_p_good(score)
    ctx.verdict(name, result=result, label=_canonical_label(verdict), score=score, valid=verdict is not None,
                value={"scoring": "grm", "text": result.text})
    return verdict


def _canonical_label(verdict: int | None) -> str | None:
    return None if verdict is None else ("good" if verdict == 1 else "bad")


def _data_turns(ctx: EpisodeContext, turns: Sequence[Turn | dict[str, str]]) -> None:
    for turn in turns:
        role, content = (
            (turn.role, turn.content) if isinstance(turn, Turn) else (turn["role"], turn["content"])
        )
        ctx.turn(role, content)


# ---------------------------------------------------------------- episode programs


def judge_program(ctx: EpisodeContext, item: JudgeItem, cfg: UXBenchConfig) -> Program:
    """T1: one judge call on a logged reply."""
    item = item.model_copy(update={"history": _trim(item.history, cfg.max_history_turns)})
    messages = judge_messages(item, cfg.judge_mode)
    _data_turns(ctx, [*item.history, Turn(role="user", content=item.query),
                      Turn(role="assistant", content=item.response)])
    if cfg.judge_mode == "label":
        result = yield _label_request(messages, item.lang, "t1_label")
        verdict = _record_label(ctx, "t1", result, item.lang)
    else:
        schema = JsonSchema.from_model(reason_model(item.lang))
        result = yield GenRequest(
            "judge",
            tuple(messages),
            Sampling(temperature=0.0, max_tokens=cfg.reason_max_tokens),
            schema,
            tag="t1_reason",
        )
        verdict = parse_verdict(result.text, item.lang, "reason") if result.valid else None
        reasoning = (
            result.parsed.get("reasoning")
            if verdict is not None and isinstance(result.parsed, dict)
            else None
        )
        ctx.verdict("t1", result=result, label=_canonical_label(verdict), valid=verdict is not None,
                    rationale=reasoning)
    if verdict is None:
        return Outcome("invalid", info={"finish_reason": result.finish_reason, "error": result.error})
    return Outcome("judged", reward=float(verdict == item.ground_truth))


def _reply_then_judge(ctx: EpisodeContext, name: str, chat: list[dict[str, str]], lang: str,
                      judge_chat: Callable[[str], list[dict[str, str]]], cfg: UXBenchConfig) -> Program:
    """Shared T2/T3 flow: candidate reply (sampled), then a label-mode judgement of it."""
    _data_turns(ctx, chat)
    sampling = Sampling(temperature=cfg.temperature, max_tokens=cfg.max_tokens)
    reply = yield GenRequest("candidate", tuple(chat), sampling, tag=f"{name}_reply")
    ctx.turn("assistant", reply.text, model_role="candidate", result=reply,
             meta={"finish_reason": reply.finish_reason})
    if reply.finish_reason in ("context_window", "error") or not reply.text.strip():
        # as upstream: an empty or failed reply is never sent to the judge; it counts as not judged
        status = "context_window" if reply.finish_reason == "context_window" else "no_reply"
        ctx.verdict(name, label=None, valid=False, value={"status": status})
        return Outcome(status)
    result = yield _label_request(judge_chat(reply.text), lang, f"{name}_judge")
    record = _record_grm if cfg.reply_scoring == "grm" else _record_label
    verdict = record(ctx, name, result, lang)
    if verdict is None:
        return Outcome("invalid", info={"finish_reason": result.finish_reason})
    return Outcome("judged", reward=float(verdict == 1))


def eval_program(ctx: EpisodeContext, item: EvalItem, cfg: UXBenchConfig) -> Program:
    """T2: the candidate writes the next reply; the judge rates it."""
    keep = cfg.max_history_turns
    item = item.model_copy(update={"history": _trim(item.history, keep),
                                   "messages": _trim(item.messages[:-1], keep) + item.messages[-1:]})
    return (yield from _reply_then_judge(ctx, "t2", eval_generation_messages(item), item.lang,
                                         lambda reply: eval_judge_messages(item, reply), cfg))


def recovery_program(ctx: EpisodeContext, item: RecoveryItem, cfg: UXBenchConfig) -> Program:
    """T3: the candidate answers the complaint about its failed reply; the judge rates it."""
    item = item.model_copy(update={"history": _trim(item.history, cfg.max_history_turns)})
    chat = recovery_generation_messages(item, system_prompt=cfg.recovery_system_prompt)
    return (yield from _reply_then_judge(ctx, "t3", chat, item.lang,
                                         lambda reply: recovery_judge_messages(item, reply), cfg))


# ---------------------------------------------------------------- items


def _judge_data(item: JudgeItem) -> dict[str, Any]:
    if item.ground_truth == 1:
        dimension = canonical_success(item.success_dimension) or item.success_dimension
    else:
        dimension = canonical_dimension(item.failure_dimension) or item.failure_dimension
    return {"ground_truth": item.ground_truth, "dimension": dimension,
            "raw_dimension": item.failure_dimension if item.ground_truth == -1 else item.success_dimension,
            "response_was_rich": item.response_was_rich}


def _eval_data(item: EvalItem) -> dict[str, Any]:
    return {
        "dimension": canonical_dimension(item.dimension) or item.dimension,
        "raw_dimension": item.dimension,
        "messages_source": item.messages_source,
    }


def _recovery_data(item: RecoveryItem) -> dict[str, Any]:
    return {"dimension": canonical_dimension(item.failure_dimension) or item.failure_dimension,
            "raw_dimension": item.failure_dimension, "failed_reply_empty": not item.failed_response.strip()}


def _item_row(task: str, item: JudgeItem | EvalItem | RecoveryItem, extra: dict[str, Any]) -> dict[str, Any]:
    data = {
        "cid": item.item_id,
        "lang": item.lang,
        "scenario": canonical_scenario(item.scenario) or item.scenario,
        "raw_scenario": item.scenario,
        "difficulty": item.difficulty,
        **extra,
    }
    return {"item_id": f"{task}:{item.item_id}", "task": task, "data": data,
            "source_file": item.source_file, "source_line": item.source_line}


def _balanced(items: list[JudgeItem], limit: int | None) -> list[JudgeItem]:
    """At most ``limit`` T1 items, half from each class (a bad-only slice has no Good-Acc)."""
    if limit is None:
        return items
    bad = [i for i in items if i.ground_truth == -1][: (limit + 1) // 2]
    good = [i for i in items if i.ground_truth == 1][: limit // 2]
    return bad + good


def _quarantine_rows(records: list[QuarantineRecord]) -> list[dict[str, Any]]:
    return [{"task": r.task, "source_file": r.file, "source_line": r.line,
             "reason": f"{r.field}: {r.reason}" if r.field else r.reason, "raw": r.raw} for r in records]


def _bind(
    program: Callable[..., Program], item: Any, cfg: UXBenchConfig
) -> Callable[[EpisodeContext], Program]:
    return lambda ctx: program(ctx, item, cfg)


_LOADERS: dict[
    str, tuple[Callable[..., Loaded[Any]], Callable[..., Program], Callable[[Any], dict[str, Any]]]
] = {
    "judge": (load_judge, judge_program, _judge_data),
    "eval": (load_eval, eval_program, _eval_data),
    "recovery": (load_recovery, recovery_program, _recovery_data),
}


UPSTREAM_KEY = "upstream checkout: "
"""Prefix of the ``prompt_hashes`` key naming the checkout a run read (its value: the files' digest)."""
_UPSTREAM_FIXED = {"judge_mode": "label", "reply_scoring": "label", "max_history_turns": None,
                   "recovery_system_prompt": False, "max_tokens": 2048, "temperature": 0.7}
"""Options whose other values would change what UXBench's protocol asks (the checkout sets these)."""


def _upstream_words(config: UXBenchConfig, checkout: Path) -> UpstreamProtocol:
    """Read the checkout's words, after refusing options that would change upstream's protocol."""
    changed = [name for name, value in _UPSTREAM_FIXED.items() if getattr(config, name) != value]
    if changed:
        flags = ", ".join("--" + name.replace("_", "-") for name in changed)
        raise InputError(f"--upstream runs UXBench's own protocol; {flags} would change it",
                         f"drop those options, or drop --upstream (and {ENV_VAR}) for uxlocal's words")
    return read_checkout(checkout)


def _bind_upstream(task: str, item: Any, row: dict[str, Any],
                   words: UpstreamProtocol) -> Callable[[EpisodeContext], Program]:
    if task == "judge":
        return lambda ctx: upstream_run.judge_program(ctx, item, row, words)
    return lambda ctx: upstream_run.reply_program(ctx, task, item, row, words)


def protocol_line(checkout: str | None) -> str:
    """Say in one line whose words a run used and whether it compares with the published leaderboard."""
    if checkout is None:
        return ("protocol: uxlocal's own prompts and rules: NOT comparable with the published UXBench "
                "leaderboard (--upstream DIR or UXLOCAL_UXBENCH_SRC runs UXBench's own)")
    return (f"protocol: UXBench's own, words read from {checkout}: T1 comparable with the published "
            "leaderboard; T2/T3 only when the judge is UXBench's GRM")


# ---------------------------------------------------------------- suite


class UXBench(Suite):
    """UXBench T1/T2/T3 over the released files or the bundled samples."""

    name = "uxbench"
    report_section = "uxlocal.suites.uxbench.section"
    help = ("UXBench: T1 UX Judge (liked vs disliked replies), T2 UX Eval (Good%), T3 UX Recovery "
            "(Recovery Rate), with a local judge.")
    config_cls = UXBenchConfig
    roles = ("judge",)
    optional_roles = ("candidate",)

    def prompt_hashes(self, config: SuiteConfig) -> dict[str, str]:
        """Template hashes (ours, or the checkout's files and its path) plus every data file's hash."""
        assert isinstance(config, UXBenchConfig)
        checkout = config.checkout()
        if checkout is None:
            hashes = dict(prompt_hashes())
        else:
            words = read_checkout(checkout)
            hashes = {f"upstream/{rel}": digest for rel, digest in words.file_hashes.items()}
            hashes[f"{UPSTREAM_KEY}{words.root}"] = words.digest()
        for task in config.task_list():
            for path in config.task_paths(task):
                if path.is_file():
                    hashes[f"data/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
        return hashes

    def plan(self, config: SuiteConfig, run: RunConfig) -> SuitePlan:
        """Load the chosen tasks' files and make one episode per item."""
        assert isinstance(config, UXBenchConfig)
        tasks = config.task_list()
        if any(t in tasks for t in ("eval", "recovery")) and "candidate" not in run.models:
            raise InputError("tasks eval/recovery need a candidate model",
                             "pass --model candidate=PRESET_OR_PATH, or --tasks judge")
        data_dir = config.data_dir()
        if not data_dir.is_dir():
            raise InputError("no such data folder", "point --data at the released UXBench files",
                             path=data_dir)
        checkout = config.checkout()
        words = _upstream_words(config, checkout) if checkout is not None else None
        plan = SuitePlan(episodes=[])
        for task in tasks:
            loader, program, extra = _LOADERS[task]
            loaded = loader(data_dir, files=config.files(), skip_bad_rows=config.skip_bad_rows)
            items = _balanced(loaded.items, run.limit) if task == "judge" else loaded.items[: run.limit]
            rows = upstream_run.read_rows(data_dir, config.task_paths(task)) if words is not None else {}
            for item in items:
                row = _item_row(task, item, extra(item))
                plan.items.append(row)
                bound = (_bind(program, item, config) if words is None
                         else _bind_upstream(task, item, rows[(item.source_file, item.source_line)], words))
                plan.episodes.append(EpisodeSpec(row["item_id"], bound, item_id=row["item_id"], task=task))
            plan.quarantine += _quarantine_rows(loaded.quarantine)
            if loaded.quarantine:
                plan.notes.append(f"{task}: {len(loaded.quarantine)} bad row(s) quarantined "
                                  "(see the quarantine table)")
        if config.max_history_turns is not None:
            plan.notes.append(f"prompts keep the last {config.max_history_turns} history turns")
        plan.notes.append(protocol_line(None if words is None else f"{words.root} ({words.digest()[:12]})"))
        return plan

    def report(self, con: Any, run_id: str) -> list[ReportTable]:
        """T1/T2/T3 headline tables with intervals, then breakdowns (all read from the views)."""
        n_boot, seed = bootstrap_settings(con, run_id)
        return uxbench_tables(con, run_id, n_boot=n_boot, seed=seed)

    def demo(self) -> DemoSpec:
        """Eight items per task, short replies, history capped to fit the embedded model's window."""
        return DemoSpec({"max_tokens": 48, "max_history_turns": 6, "bootstrap": 500, "upstream": ""},
                        {"candidate": "embedded", "judge": "embedded"}, limit=8)


# ---------------------------------------------------------------- report


def bootstrap_settings(con: Any, run_id: str) -> tuple[int, int]:
    """Return (resamples, seed) of a run's intervals, from its stored config.

    The tables and the report's leaderboard whiskers both use these, so they print the same
    interval.
    """
    row = con.execute("SELECT config FROM runs WHERE run_id = ?", [run_id]).fetchone()
    config = (json_value(row[0]) if row else None) or {}
    return UXBenchConfig(**config.get("suite_config", {})).bootstrap, int(config.get("seed", 0))


def _stored_checkout(con: Any, run_id: str) -> tuple[str, str] | None:
    """(path, digest) of the checkout a stored run read its words from; None for uxlocal's words."""
    row = con.execute("SELECT config FROM runs WHERE run_id = ?", [run_id]).fetchone()
    hashes = ((json_value(row[0]) if row else None) or {}).get("prompt_hashes") or {}
    found = [(k.removeprefix(UPSTREAM_KEY), v) for k, v in hashes.items() if k.startswith(UPSTREAM_KEY)]
    return found[0] if found else None


def run_checkout(con: Any, run_id: str) -> str | None:
    """Return the checkout a stored run read its words from (path and digest), None for uxlocal's words."""
    found = _stored_checkout(con, run_id)
    return f"{found[0]} ({found[1][:12]})" if found else None


def published_tables(con: Any, run_id: str, local: dict[str, published.LocalRow]) -> list[ReportTable]:
    """Return the checkout's published leaderboards with this run's rows, when it has them."""
    found = _stored_checkout(con, run_id)
    if found is None:
        return []
    root = Path(found[0])
    tables = [published.t1_table(root, local["judge"]) if "judge" in local else None,
              published.t2_table(root, local.get("eval"), local.get("recovery"))]
    return [t for t in tables if t is not None]


def protocol_table(con: Any, run_id: str) -> ReportTable:
    """Say whose words the run used and whether its numbers sit beside the published leaderboard."""
    checkout = run_checkout(con, run_id)
    comparable = ("NOT comparable" if checkout is None
                  else "T1: comparable; T2/T3: comparable only with UXBench's GRM as the judge")
    words = "uxlocal's own" if checkout is None else f"UXBench's, read from {checkout}"
    return ReportTable("UXBench protocol", ["words and rules", "published leaderboard"],
                       [(words, comparable)], protocol_line(checkout))


def _interval(iv: metrics.Interval) -> str | None:
    if iv.low is None or iv.high is None:
        return None
    return f"[{iv.low:.1f}, {iv.high:.1f}]"


def _rows(con: Any, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cols, rows = query(con, sql, params)
    return [dict(zip(cols, r, strict=True)) for r in rows]


def uxbench_tables(con: Any, run_id: str, *, n_boot: int = 2000, seed: int = 0) -> list[ReportTable]:
    """Every UXBench table for one run: SQL points, bootstrap intervals over the view rows."""
    tables: list[ReportTable] = []
    local: dict[str, published.LocalRow] = {}
    t1 = _rows(con, "SELECT * FROM uxbench_t1 WHERE run_id = ?", [run_id])
    if t1:
        rows = _rows(con, "SELECT * FROM uxbench_t1_rows WHERE run_id = ? ORDER BY item_id", [run_id])
        ci = {m: _interval(metrics.bootstrap_judge(rows, m, n_resamples=n_boot, seed=seed))
              if n_boot else None for m in ("good_acc", "bad_acc", "avg_acc")}
        s = t1[0]
        tables.append(ReportTable(
            f"UXBench T1 UX Judge: judge {s['judge_model']}, {s['mode']} mode",
            ["metric", "value", "95% CI", "detail"],
            [("Good-Acc %", _f1(s["good_acc"]), ci["good_acc"],
              f"{s['n_good']} liked, {s['good_invalid']} invalid"),
             ("Bad-Acc %", _f1(s["bad_acc"]), ci["bad_acc"],
              f"{s['n_bad']} disliked, {s['bad_invalid']} invalid"),
             ("Avg-Acc %", _f1(s["avg_acc"]), ci["avg_acc"], "published rounding, invalid left out"),
             ("Avg-Acc strict %", _f1(s["avg_acc_strict"]), None, "invalid counted wrong"),
             ("AUROC", _f3(s["auroc"]), None, "from label probabilities"),
             ("ECE", _f3(s["ece"]), None, "10 bins, confidence in own verdict")],
            "convention C (published): invalid outputs excluded from the denominators and counted"))
        accuracies = {k: s[f"{k}_acc"] for k in ("good", "bad", "avg")}
        local["judge"] = published.LocalRow(s["judge_model"], accuracies,
                                            {k: ci[f"{k}_acc"] for k in ("good", "bad", "avg")})
    rates = _rows(con, "SELECT * FROM uxbench_rates WHERE run_id = ? ORDER BY task", [run_id])
    if rates:
        out = []
        for r in rates:
            rows = _rows(con, "SELECT * FROM uxbench_reply_rows WHERE run_id = ? AND task = ? "
                         "ORDER BY item_id", [run_id, r["task"]])
            iv = _interval(metrics.bootstrap_rate(rows, n_resamples=n_boot, seed=seed)) if n_boot else None
            label = "T2 Good %" if r["task"] == "eval" else "T3 Recovery Rate %"
            local[r["task"]] = published.LocalRow(r["candidate_model"], {"rate": r["rate"]}, {"rate": iv})
            out.append((label, _f1(r["rate"]), iv, f"{r['n_valid']}/{r['n']}",
                        f"{r['n_invalid']} ({r['n_not_judged']} not judged)", _f1(r["rate_strict"]),
                        r["candidate_model"], r["judge_model"]))
        tables.append(
            ReportTable(
                "UXBench T2 UX Eval / T3 UX Recovery",
                ["metric", "value", "95% CI", "valid/n", "invalid", "strict %", "candidate", "judge"],
                out,
                "rates over judged-valid replies; not judged = empty reply or prompt over the "
                "window (never sent to the judge); strict = over all items",
            )
        )
    breakdown = _rows(con, "SELECT * FROM uxbench_breakdown WHERE run_id = ? AND facet <> 'all' "
                           "ORDER BY task, facet, key", [run_id])
    if breakdown:
        tables.append(
            ReportTable(
                "UXBench breakdowns (T1: Avg-Acc; T2/T3: rate %)",
                ["task", "by", "key", "n", "valid", "Good-Acc", "Bad-Acc", "Avg-Acc / rate"],
                [
                    (
                        b["task"],
                        b["facet"],
                        b["key"],
                        b["n"],
                        b["n_valid"],
                        _f1(b["good_acc"]),
                        _f1(b["bad_acc"]),
                        _f1(b["value"]),
                    )
                    for b in breakdown
                ],
            )
        )
    quarantined = con.execute(
        "SELECT task, count(*) FROM quarantine WHERE run_id = ? GROUP BY task ORDER BY task", [run_id]
    ).fetchall()
    if quarantined:
        tables.append(ReportTable("UXBench quarantined rows", ["task", "rows"], quarantined,
                                  "see: uxlocal query --db DB \"select * from quarantine\""))
    return [*tables, protocol_table(con, run_id), *published_tables(con, run_id, local)]


def _f1(value: float | None) -> str | None:
    return None if value is None else f"{value:.1f}"


def _f3(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f}"
