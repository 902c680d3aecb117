"""Learn a judge from human labels: training examples in ``uxlocal judge``'s own prompt layout.

Layer contract: reads the user's file and a base model folder, writes one adapter folder; the
held-out judging is ``uxlocal judge`` itself, through a runner the caller hands in (the runner
sits above the suites). Training itself is ``uxlocal.train`` (shared with PALATE's simulators).

One renderer for both: an example's prompt is the ``GenRequest`` that ``episodes.Asker`` builds
for ``uxlocal judge`` (label mode, the same layout), rendered by the same ``make_renderer`` the
scheduler uses, so training and serving see the same token ids. The loss falls only on the
verdict's label tokens, which follow the prompt as the model would generate them: the human
label (``label`` rubrics), the human score rounded to a point (``likert``), or the preferred
side (``pairwise``, in both orders, the second with the replies and the answer swapped).

The held-out part is whole groups (``--group-col``; each row its own group without one), drawn
with ``seed`` until it holds at least ``heldout`` of the rows; it never trains. Every check on
the input (no human column, a label the rubric lacks, a score off the scale, one class in the
training part, a held-out part too small to measure, a prompt longer than ``max_length``) runs
before the model loads and stops with ``file:line: column: problem``.

Held-out statistics come from two ``uxlocal judge`` runs over the adapter's recorded held-out
rows (``--heldout-of``), the base prompted as it is and the base with the adapter
(``--judge-adapter``): the same prompts, the same engine path (vLLM with LoRA, our CPU kernels,
or the hf backend), the same label probabilities over every token path under the grammar, and
the same agreement arithmetic. So the numbers ``judge train`` prints are the numbers
``uxlocal judge INPUT --judge-adapter OUT --heldout-of OUT`` prints, and both runs sit in the
store (``--db``) for ``uxlocal report``. The held-out loss on the label tokens (teacher forced,
in the trainer) is reported beside them.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel, folder_fingerprint
from uxlocal.suites.judge import compare, episodes
from uxlocal.suites.judge.adapter import META_FILE
from uxlocal.suites.judge.compare import agreement, difference_intervals, paired
from uxlocal.suites.judge.config import JUDGE_SETTINGS
from uxlocal.suites.judge.inputs import Columns, JudgeItem, input_sha256, load_items
from uxlocal.suites.judge.prompts import Layout, template_sha256
from uxlocal.suites.judge.rubrics import TIE_LABEL, Rubric
from uxlocal.suites.judge.suite import human_parser
from uxlocal.train import lora
from uxlocal.train.adapter import save_adapter
from uxlocal.train.examples import Example, completion_example

MIN_HELDOUT = 10
"""Fewest held-out rows whose agreement we report (with at least two human classes)."""


@dataclass(frozen=True)
class JudgeTrainSpec:
    """What to learn from: the input, its column map, the rubric, and how to split it."""

    source: str
    columns: Columns
    rubric: Rubric
    heldout: float = 0.2
    """Fraction of rows (whole groups) kept out of training for the agreement statistics."""
    seed: int = 0
    """Seeds the split, the adapter's initialization and the batch order."""
    layout: Layout = "shared"
    rubric_ref: str = ""
    """How the held-out judge runs load the rubric (built-in name or TOML path); default its name."""


@dataclass
class Split:
    """Rows that train and rows that only measure (whole groups each)."""

    train: list[JudgeItem]
    heldout: list[JudgeItem]
    heldout_groups: list[str]

    def as_dict(self) -> dict[str, Any]:
        """For the adapter's metadata."""
        return {"train_rows": len(self.train), "heldout_rows": len(self.heldout),
                "heldout_groups": self.heldout_groups, "heldout_ids": [i.item_id for i in self.heldout]}


@dataclass
class Prepared:
    """A checked, split and rendered training set (nothing loaded but the tokenizer)."""

    spec: JudgeTrainSpec
    split: Split
    train: list[Example]
    heldout: list[Example]
    asker: episodes.Asker
    renderer: Any


# ---------------------------------------------------------------- split and targets


def _group(item: JudgeItem) -> str:
    return item.group if item.group is not None else item.item_id


def split_by_group(items: Sequence[JudgeItem], fraction: float, seed: int) -> Split:
    """Whole groups, shuffled with ``seed``, go to the held-out part until it has ``fraction`` of the rows."""
    sizes: dict[str, int] = {}
    for item in items:
        sizes[_group(item)] = sizes.get(_group(item), 0) + 1
    order = sorted(sizes)
    random.Random(seed).shuffle(order)
    held: list[str] = []
    count = 0
    for group in order:
        if count >= fraction * len(items) or count + sizes[group] >= len(items):
            break
        held.append(group)
        count += sizes[group]
    chosen = set(held)
    return Split([i for i in items if _group(i) not in chosen], [i for i in items if _group(i) in chosen],
                 sorted(held))


def human_point(score: float) -> str:
    """A likert human score as the label the judge would answer (rounded half up, as the views do)."""
    return str(int(math.floor(score + 0.5)))


def verdict_targets(rubric: Rubric, item: JudgeItem) -> list[tuple[tuple[str, str] | None, str]]:
    """(replies shown, label to learn) of each training example of ``item``."""
    if rubric.kind == "label":
        return [(None, str(item.human))]
    if rubric.kind == "likert":
        return [(None, human_point(float(item.human)))]
    assert item.response_a is not None and item.response_b is not None
    swapped = {"A": "B", "B": "A"}.get(str(item.human), str(item.human))
    return [((item.response_a, item.response_b), str(item.human)),
            ((item.response_b, item.response_a), swapped)]


# ---------------------------------------------------------------- checks (before any training)


def _check_rubric(spec: JudgeTrainSpec) -> None:
    rubric = spec.rubric
    if len(rubric.criteria_list()) != 1:
        raise InputError(rubric.name, None, f"has {len(rubric.criteria_list())} criteria; a judge learns one "
                         "question from one human column", "train one rubric per criterion")
    if rubric.unit != "conversation":
        raise InputError(rubric.name, None, "unit = 'each_assistant_turn' has no human label per turn",
                         "train with a unit = 'conversation' rubric")
    if spec.columns.human is None:
        raise InputError(spec.source, None, "no human column: training needs the label, score or preference "
                         "each row was given", "pass --human-col COLUMN")
    if not 0.0 < spec.heldout < 1.0:
        raise InputError(spec.source, None, f"--heldout {spec.heldout}: must be between 0 and 1")


def _check_values(spec: JudgeTrainSpec, items: Sequence[JudgeItem]) -> None:
    """Every human value must be an answer the judge can give."""
    rubric, column = spec.rubric, spec.columns.human
    for item in items:
        if rubric.kind == "likert":
            point = human_point(float(item.human))
            if point not in rubric.names():
                raise InputError(item.source_file, item.source_line,
                                 f"{column}: score {float(item.human):g} is off the rubric's scale 1..{rubric.scale}")
        if rubric.kind == "pairwise" and item.human == TIE_LABEL and not rubric.allow_tie:
            raise InputError(item.source_file, item.source_line,
                             f"{column}: 'tie' but the rubric has no tie label", "set allow_tie = true")


def _classes(rubric: Rubric, items: Sequence[JudgeItem]) -> list[str]:
    return sorted({verdict_targets(rubric, i)[0][1] for i in items})


def _check_split(spec: JudgeTrainSpec, split: Split) -> None:
    rubric, column = spec.rubric, spec.columns.human
    if not split.train:
        raise InputError(spec.source, None, "nothing left to train on after the held-out split")
    train_classes = _classes(rubric, split.train)
    if rubric.kind != "pairwise" and len(train_classes) < 2:
        first = split.train[0]
        raise InputError(first.source_file, first.source_line, f"{column}: every training row says "
                         f"{train_classes[0]!r}; a judge cannot learn from one class",
                         "add rows of the other labels or change --seed/--heldout")
    held_classes = _classes(rubric, split.heldout)
    if len(split.heldout) < MIN_HELDOUT or (rubric.kind != "pairwise" and len(held_classes) < 2):
        where = split.heldout[0] if split.heldout else None
        what = spec.columns.group or spec.columns.id
        raise InputError(spec.source if where is None else where.source_file, None if where is None else
                         where.source_line, f"{what}: the held-out part has {len(split.heldout)} rows "
                         f"(classes {held_classes}); measuring agreement needs at least {MIN_HELDOUT} rows "
                         "and two classes", "raise --heldout, add rows, or change --seed")


# ---------------------------------------------------------------- examples


def item_prompts(asker: episodes.Asker, renderer: Any, item: JudgeItem) -> list[tuple[list[int], str]]:
    """(prompt ids exactly as ``uxlocal judge`` sends them, label to learn) of each example of ``item``."""
    criterion = asker.rubric.criteria_list()[0]
    out = []
    for pair, label in verdict_targets(asker.rubric, item):
        request = asker.request("judge", criterion, item.conversation, pair=pair)
        out.append((renderer.render(list(request.messages))[1], label))
    return out


def _render_all(asker: episodes.Asker, renderer: Any, items: Sequence[JudgeItem], max_length: int) -> list[Example]:
    examples = []
    for item in items:
        for ids, label in item_prompts(asker, renderer, item):
            example = completion_example(ids, renderer.encode(label))
            if len(example.ids) > max_length:
                raise InputError(item.source_file, item.source_line, f"the judge prompt is {len(example.ids)} "
                                 f"tokens, more than max_length {max_length}", "raise --max-length")
            examples.append(example)
    return examples


def prepare(spec: JudgeTrainSpec, base: ResolvedModel, *, max_length: int = 2048) -> Prepared:
    """Load, check, split and render; raises ``InputError`` before any model weight is read."""
    from uxlocal.engine.render import make_renderer

    _check_rubric(spec)
    loaded = load_items(spec.source, spec.columns, pairwise=spec.rubric.kind == "pairwise",
                        human=human_parser(spec.rubric))
    _check_values(spec, loaded.items)
    split = split_by_group(loaded.items, spec.heldout, spec.seed)
    _check_split(spec, split)
    asker = episodes.Asker(spec.rubric, reason=False, layout=spec.layout, reason_max_tokens=16)
    renderer = make_renderer(base.path)
    return Prepared(spec, split, _render_all(asker, renderer, split.train, max_length),
                    _render_all(asker, renderer, split.heldout, max_length), asker, renderer)


# ---------------------------------------------------------------- held-out statistics


RunFn = Callable[..., Any]
"""``uxlocal.cli.common.run_configured``: the runner sits above the suites, so the caller hands it in."""
HeldoutJudge = Callable[[dict[str, Any]], list[dict[str, Any]]]
PrefixProgress = Callable[[str, int, int], None]
"""``(part, examples done, total)`` while the frozen layers' states are computed (``part``: train or held-out)."""
"""Runs ``uxlocal judge`` with these options and returns its verdict rows (``report.verdict_rows``)."""


def judge_options(spec: JudgeTrainSpec, adapter: str | Path, *, with_adapter: bool) -> dict[str, Any]:
    """The ``uxlocal judge`` options that judge the adapter's held-out rows, with or without it."""
    columns = spec.columns
    options = {"input": spec.source, "rubric": spec.rubric_ref or spec.rubric.name, "id_col": columns.id,
               "conversation_col": columns.conversation, "prompt_col": columns.prompt,
               "response_col": columns.response, "response_a_col": columns.response_a,
               "response_b_col": columns.response_b, "human_col": columns.human, "group_col": columns.group,
               "layout": spec.layout, "heldout_of": str(adapter)}
    if with_adapter:
        options["judge_adapter"] = str(adapter)
    return {k: v for k, v in options.items() if v is not None}


def heldout_judge(run: RunFn, base_spec: str, db: str | Path, kind: str, criterion: str) -> HeldoutJudge:
    """A ``HeldoutJudge`` running ``uxlocal judge -m judge=BASE --db DB`` through ``run``."""
    from uxlocal.store.db import connect
    from uxlocal.suites.judge.report import verdict_rows

    def judge(options: dict[str, Any]) -> list[dict[str, Any]]:
        result = run("judge", options, {"model": (f"judge={base_spec}",), "db": str(db), "progress": False},
                     show=lambda _: None)
        con = connect(result.db, read_only=True)
        try:
            return verdict_rows(con, result.run_id, kind, criterion, "judge")
        finally:
            con.close()
    return judge


# ---------------------------------------------------------------- training


@dataclass
class JudgeTrainResult:
    """What training produced and measured."""

    folder: Path
    weights_sha256: str
    base: dict[str, Any]
    """Held-out loss and agreement of the base model (prompted judge)."""
    adapter: dict[str, Any]
    """The same for the trained adapter."""
    intervals: dict[str, tuple[float | None, float | None]]
    """95% paired bootstrap interval of adapter - base, per agreement statistic."""
    seconds: float
    """Wall time of everything: load, both measurements, training, saving."""
    train_s: float = 0.0
    """Wall time of training: the frozen layers' pass over the training examples and the loop."""
    losses: list[float] = field(default_factory=list)
    heldout_judged: int = 0
    """Held-out items both arms judged validly (abstentions and invalid verdicts are left out)."""


def _meta(prepared: Prepared, base: ResolvedModel, settings: lora.TrainSettings, result: dict[str, Any]) -> dict[str, Any]:
    spec = prepared.spec
    return {"kind": "uxlocal-judge-adapter", "base_name": base.name, "base_identity": base.identity,
            "base_path": base.path, "base_weights": folder_fingerprint(Path(base.path)) if base.path else None,
            "rubric_name": spec.rubric.name, "rubric_ref": spec.rubric_ref or spec.rubric.name,
            "rubric_sha256": spec.rubric.sha256(),
            "prompt_sha256": template_sha256(), "layout": spec.layout, "data_source": spec.source,
            "data_sha256": input_sha256(spec.source), "columns": asdict(spec.columns),
            "split": {"heldout": spec.heldout, "seed": spec.seed, **prepared.split.as_dict()},
            "settings": settings.as_dict(), "train_examples": len(prepared.train),
            "heldout_examples": len(prepared.heldout), **result,
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat()}


def _fit(prepared: Prepared, base: ResolvedModel, out: str | Path, settings: lora.TrainSettings,
         on_step: lora.OnStep | None, on_prefix: PrefixProgress | None = None
         ) -> tuple[str, dict[str, Any], list[float], float]:
    """Train and save; returns the weights hash, the held-out label-token losses, the step losses and the
    training seconds (the frozen-prefix pass over the training examples and the loop)."""
    import gc

    model, where = lora.load_base(base.path)
    pad = lora.pad_id(model)
    start = lora.first_adapted_layer(model, settings)
    began = time.perf_counter()
    train_prefix = lora.frozen_prefix(model, prepared.train, start, pad, where,
                                      on_batch=on_prefix and functools.partial(on_prefix, "train"))
    prefix_s = time.perf_counter() - began
    held_prefix = lora.frozen_prefix(model, prepared.heldout, start, pad, where,
                                     on_batch=on_prefix and functools.partial(on_prefix, "held-out"))
    loss_before = lora.heldout_loss(model, prepared.heldout, pad, where=where, prefix=held_prefix)
    model = lora.with_lora(model, settings)
    began = time.perf_counter()
    losses = lora.train_loop(model, prepared.train, settings, pad, where, on_step=on_step, prefix=train_prefix)
    train_s = prefix_s + time.perf_counter() - began
    loss = {"base": loss_before, "adapter": lora.heldout_loss(model, prepared.heldout, pad, where=where,
                                                              prefix=held_prefix)}
    measured = {"heldout_loss": loss, "train_loss_first": losses[0], "train_loss_last": losses[-1],
                "train_s": round(train_s, 1), "frozen_prefix": train_prefix is not None}
    sha = save_adapter(model, out, META_FILE, _meta(prepared, base, settings, measured))
    del model, train_prefix, held_prefix
    gc.collect()  # the judge runs load the base again, through the serving engine
    _free_gpu_cache()
    return sha, loss, losses, train_s


def _free_gpu_cache() -> None:
    """Hand torch's cached GPU blocks back: vLLM sizes its KV cache from the memory free at load."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def train_judge(prepared: Prepared, base: ResolvedModel, out: str | Path, *, judge: HeldoutJudge,
                settings: lora.TrainSettings = JUDGE_SETTINGS, on_step: lora.OnStep | None = None,
                on_prefix: PrefixProgress | None = None) -> JudgeTrainResult:
    """Train the adapter on the training part, save it, then judge the held-out part with the base and with it.

    Both arms are ``uxlocal judge`` runs (``judge``) on the adapter's recorded held-out rows, so
    ``uxlocal judge INPUT --judge-adapter OUT --heldout-of OUT`` prints the adapter's numbers again.
    """
    started = time.perf_counter()
    sha, loss, losses, train_s = _fit(prepared, base, out, settings, on_step, on_prefix)
    kind = prepared.spec.rubric.kind
    base_all = judge(judge_options(prepared.spec, out, with_adapter=False))
    adapter_all = judge(judge_options(prepared.spec, out, with_adapter=True))
    # each arm's statistics over its own valid verdicts, exactly as ``uxlocal judge`` prints them;
    # the paired interval of the difference over the items both arms judged validly
    before = {"loss": loss["base"], **agreement(kind, base_all)}
    after = {"loss": loss["adapter"], **agreement(kind, adapter_all)}
    base_rows, adapter_rows = paired(base_all, adapter_all)
    intervals = difference_intervals(kind, base_rows, adapter_rows, seed=settings.seed)
    seconds = time.perf_counter() - started
    update_meta(out, {"heldout_base": before, "heldout_adapter": after, "heldout_difference_95": intervals,
                      "heldout_judged": len(base_rows), "seconds": round(seconds, 1)})
    return JudgeTrainResult(Path(out), sha, before, after, intervals, seconds, train_s, losses, len(base_rows))


def update_meta(folder: str | Path, values: dict[str, Any]) -> None:
    """Add ``values`` to the adapter's metadata (the weights and their hash stay as saved)."""
    import json

    meta_file = Path(folder) / META_FILE
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    tmp = meta_file.with_name(META_FILE + ".tmp")
    tmp.write_text(json.dumps({**meta, **values}, indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(meta_file)


def comparison_rows(result: JudgeTrainResult) -> list[tuple[str | None, ...]]:
    """One row per held-out statistic (``COMPARISON_COLUMNS``), values to 3 decimals."""
    return compare.comparison_rows(result.base, result.adapter, result.intervals)
