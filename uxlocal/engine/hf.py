"""transformers backend: the portable fallback where vLLM does not run, and the training stack's twin.

Requests are grouped by sampling settings and run as left-padded ``generate`` batches. Each row
carries its own grammar matcher (xgrammar ``GrammarMatcher`` or an outlines_core ``Guide``), so
one batch mixes constraints. For ``Choice`` rows the masked next-token distribution of every step
is kept, which makes label-path probabilities exact (the full vocabulary, not a top-k).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from functools import cached_property
from typing import Any

from uxlocal import settings
from uxlocal.engine.base import Engine, GenResult, PreparedRequest, ResultSink, window_exceeded
from uxlocal.engine.labelprobs import expand_off_path, expand_on_path, max_label_tokens, start_walk
from uxlocal.errors import UxlocalError
from uxlocal.grammar import Choice, Constraint, JsonSchema, constraint_regex, parse_output
from uxlocal.models import ResolvedModel

CAPTURE_TOP = 256
"""Probabilities kept per captured step (a Choice has few valid tokens; the rest is ~0)."""


class XgrammarMatcher:
    """Per-row xgrammar state."""

    def __init__(self, compiled: Any, vocab_size: int) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        self.matcher = xgr.GrammarMatcher(compiled)
        self.bitmask = xgr.allocate_token_bitmask(1, vocab_size)

    @property
    def finished(self) -> bool:
        """The grammar accepted its end token; the row only pads from here."""
        return bool(self.matcher.is_terminated())

    def apply(self, logits: Any) -> None:
        """Mask forbidden tokens of one row (in place)."""
        self.matcher.fill_next_token_bitmask(self.bitmask)
        self._xgr.apply_token_bitmask_inplace(logits.unsqueeze(0), self.bitmask.to(logits.device))

    def accept(self, token_id: int) -> None:
        """Advance past a generated token."""
        if not self.matcher.is_terminated():
            self.matcher.accept_token(token_id)


class OutlinesMatcher:
    """Per-row outlines_core state."""

    def __init__(self, index: Any, eos_id: int) -> None:
        from outlines_core import Guide

        self.guide = Guide(index)
        self.eos_id = eos_id

    @property
    def finished(self) -> bool:
        """The guide reached a final state after the end token."""
        return False

    def apply(self, logits: Any) -> None:
        """Mask forbidden tokens of one row (in place)."""
        import torch

        allowed = torch.tensor(self.guide.get_tokens(), dtype=torch.long)
        keep = torch.full_like(logits, float("-inf"))
        keep[allowed[allowed < logits.shape[-1]]] = 0.0
        logits += keep

    def accept(self, token_id: int) -> None:
        """Advance past a generated token."""
        if not self.guide.is_finished() or self.guide.accepts_tokens([token_id]):
            self.guide.advance(token_id=token_id, return_tokens=False)


class HfEngine(Engine):
    """A transformers model in this process; built lazily on the first cache miss."""

    def __init__(self, model: ResolvedModel, renderer: Any, *, grammar: str = "xgrammar") -> None:
        self.model = model
        self.identity = model.identity
        self.max_model_len = model.max_model_len
        self.renderer = renderer
        self.grammar = grammar
        self.calls, self.busy_s = 0, 0.0
        self.masks = GrammarMasks(self)

    @cached_property
    def _hf(self) -> tuple[Any, Any]:
        return load_model(self.model)

    @property
    def eos_id(self) -> int:
        """The end-of-turn token the chat template closes assistant turns with."""
        tokenizer = self._hf[1]
        return int(tokenizer.eos_token_id)

    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        """Run the batch in groups of equal sampling settings; each group goes to ``sink`` as it ends.

        ``transformers.generate`` returns a left-padded batch only when its longest row is done,
        so this backend streams per group, not per request (``latency_ms`` is the group's end).
        """
        self.calls += 1
        started = time.perf_counter()
        results: dict[int, GenResult] = {}
        groups: dict[str, list[int]] = defaultdict(list)
        for i, prepared in enumerate(batch):
            if len(prepared.prompt_ids) >= self.max_model_len:
                results[i] = window_exceeded(prepared)
                if sink is not None:
                    sink.done(i, results[i])
                continue
            key = prepared.sampling.key() | {"seed": prepared.seed, "lora": prepared.request.lora}
            groups[json.dumps(key, sort_keys=True)].append(i)
        for indices in groups.values():
            for i, result in zip(indices, self._run_group([batch[i] for i in indices]), strict=True):
                result.latency_ms = (time.perf_counter() - started) * 1000
                results[i] = result
                if sink is not None:
                    sink.done(i, result)
        self.busy_s += time.perf_counter() - started
        return [results[i] for i in range(len(batch))]

    def _run_group(self, group: list[PreparedRequest]) -> list[GenResult]:
        """One group (same sampling, same adapter) under its adapter, or with adapters disabled."""
        model = self._hf[0]
        name = group[0].request.lora
        if not hasattr(model, "disable_adapter"):
            if name:
                raise UxlocalError(f"model {self.model.name} has no LoRA adapter named {name!r}")
            return self._generate_group(group)
        if name is None:
            with model.disable_adapter():
                return self._generate_group(group)
        if name not in self.model.lora:
            raise UxlocalError(f"model {self.model.name} has no LoRA adapter named {name!r}")
        model.set_adapter(name)
        return self._generate_group(group)

    def _generate_group(self, group: list[PreparedRequest]) -> list[GenResult]:
        """One left-padded ``generate`` for requests with identical sampling."""
        import torch
        from transformers import LogitsProcessorList

        model, tokenizer = self._hf
        sampling = group[0].sampling
        width = max(len(p.prompt_ids) for p in group)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        input_ids = torch.tensor([[pad] * (width - len(p.prompt_ids)) + p.prompt_ids for p in group])
        attention = torch.tensor([[0] * (width - len(p.prompt_ids)) + [1] * len(p.prompt_ids) for p in group])
        budget = max(_budget(p, self.max_model_len) for p in group)
        labels = {i for i, p in enumerate(group) if isinstance(p.request.constraint, Choice)}
        processor = _MaskProcessor([self.masks.matcher(p.request.constraint) for p in group], width, labels)
        if group[0].seed is not None:
            torch.manual_seed(group[0].seed)
        with torch.no_grad():
            out = model.generate(input_ids=input_ids, attention_mask=attention, max_new_tokens=budget,
                                 do_sample=sampling.temperature > 0,
                                 temperature=sampling.temperature if sampling.temperature > 0 else None,
                                 top_p=sampling.top_p if sampling.temperature > 0 else None,
                                 logits_processor=LogitsProcessorList([processor]),
                                 pad_token_id=pad, eos_token_id=sorted(self.renderer.eos_ids | {self.eos_id}))
        results = [self._result(p, out[i, width:].tolist(), processor.captured.get(i, []))
                   for i, p in enumerate(group)]
        self._finish_walks(group, results)
        return results

    def _result(self, prepared: PreparedRequest, ids: list[int],
                captured: list[dict[int, float]]) -> GenResult:
        eos = self.renderer.eos_ids | {self.eos_id}
        budget = _budget(prepared, self.max_model_len)
        ids = ids[:budget]
        stopped = next((k for k, t in enumerate(ids) if t in eos), None)
        finish = "stop" if stopped is not None else "length"
        body = ids if stopped is None else ids[:stopped]
        text = self._hf[1].decode(body, skip_special_tokens=True)
        for stop in prepared.sampling.stop:
            if stop in text:
                text, finish = text.split(stop, 1)[0], "stop"
        parsed = parse_output(prepared.request.constraint, text, finish)
        result = GenResult(text, finish, prompt_tokens=len(prepared.prompt_ids),
                           completion_tokens=len(body) + (1 if stopped is not None else 0),
                           valid=parsed.valid, parsed=parsed.value, error=parsed.error)
        result.__dict__["_walk_input"] = (body + ([ids[stopped]] if stopped is not None else []), captured)
        return result

    def _finish_walks(self, group: list[PreparedRequest], results: list[GenResult]) -> None:
        """Label probabilities: captured steps on the generated path, one forward pass off it."""
        token_bytes = self.renderer.token_bytes()
        eos = self.renderer.eos_ids | {self.eos_id}
        for prepared, result in zip(group, results, strict=True):
            path, captured = result.__dict__.pop("_walk_input")
            constraint = prepared.request.constraint
            if not isinstance(constraint, Choice) or not captured:
                continue
            walk, root = start_walk(constraint.labels)
            walk.pending.append(root)
            while walk.pending:
                off = expand_on_path(walk, path, captured, token_bytes, eos)
                reads = [self._next_dist(prepared.prompt_ids + list(node.prefix_ids)) for node in off]
                expand_off_path(walk, off, reads, token_bytes, eos)
            result.label_probs = walk.result()

    def _next_dist(self, ids: list[int]) -> dict[int, float]:
        import torch

        model = self._hf[0]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), logits_to_keep=1).logits[0, -1].float()
        probs = torch.softmax(logits, dim=-1)
        top = torch.topk(probs, CAPTURE_TOP)
        return {int(i): float(p) for p, i in zip(top.values, top.indices, strict=True)}

    def close(self) -> None:
        """Drop the model."""
        self.__dict__.pop("_hf", None)


class GrammarMasks:
    """One engine's compiled constraints (xgrammar, or outlines with ``grammar="outlines"``).

    Each constraint compiles once per loaded model; every request gets its own matcher over it.
    """

    def __init__(self, engine: "HfEngine") -> None:
        self.engine = engine
        self._compiled: dict[str, Any] = {}

    def matcher(self, constraint: Constraint | None) -> Any:
        """Return a fresh matcher for one request's ``constraint`` (None: unconstrained)."""
        if constraint is None:
            return None
        key = json.dumps(constraint.key(), sort_keys=True)
        if key not in self._compiled:
            self._compiled[key] = self._compile(constraint)
        vocab_size = self.engine._hf[0].config.vocab_size
        if self.engine.grammar == "outlines":
            return OutlinesMatcher(self._compiled[key], self.engine.eos_id)
        return XgrammarMatcher(self._compiled[key], vocab_size)

    def _compile(self, constraint: Constraint) -> Any:
        model, tokenizer = self.engine._hf
        if self.engine.grammar == "outlines":
            return self._outlines_index(constraint_regex(constraint))
        compiler = self._xgr_compiler
        if isinstance(constraint, JsonSchema):
            return compiler.compile_json_schema(json.dumps(constraint.schema), any_whitespace=False)
        pattern = constraint.to_regex() if isinstance(constraint, Choice) else constraint.pattern
        return compiler.compile_regex(pattern)

    @cached_property
    def _xgr_compiler(self) -> Any:
        import xgrammar as xgr

        model, tokenizer = self.engine._hf
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)
        return xgr.GrammarCompiler(info, max_threads=2)

    @cached_property
    def _outlines_vocab(self) -> Any:
        """outlines_core vocabulary keyed by each token's raw bytes.

        Built from bytes, not from ``convert_token_to_string``: byte-level tokens that hold part of
        a UTF-8 character (the lead byte of 好 and 差) have no string form, and outlines then
        rejects regexes with CJK characters.
        """
        from outlines_core import Vocabulary

        tokenizer = self.engine._hf[1]
        special = set(tokenizer.all_special_ids) | {self.engine.eos_id}
        table: dict[bytes, list[int]] = defaultdict(list)
        for token_id, raw in enumerate(self.engine.renderer.token_bytes()):
            if token_id not in special and raw:
                table[raw].append(token_id)
        return Vocabulary(self.engine.eos_id, dict(table))

    def _outlines_index(self, regex: str) -> Any:
        from outlines_core import Index

        return Index(regex, self._outlines_vocab)


def _budget(prepared: PreparedRequest, max_model_len: int) -> int:
    """Return the completion tokens one request may use: its own, the window's room, a label's longest."""
    room = max_model_len - len(prepared.prompt_ids)
    budget = min(prepared.sampling.max_tokens, room)
    constraint = prepared.request.constraint
    if isinstance(constraint, Choice):
        budget = min(budget, max_label_tokens(constraint.labels))
    return max(1, budget)


def load_model(resolved: ResolvedModel) -> tuple[Any, Any]:
    """Load the weights (with their LoRA adapters) and the tokenizer, in eval mode."""
    settings.apply_process_defaults()
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover
        raise UxlocalError(f"the hf backend needs torch and transformers: {exc}") from exc
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}.get(
        resolved.dtype, "auto")
    tokenizer = AutoTokenizer.from_pretrained(resolved.path)
    model = AutoModelForCausalLM.from_pretrained(resolved.path, dtype=dtype)
    if resolved.lora:
        model = _load_adapters(model, resolved.lora)
    model.eval()
    return model, tokenizer


def _load_adapters(model: Any, adapters: dict[str, str]) -> Any:
    """Wrap ``model`` with every named peft adapter; requests pick one by name (or none)."""
    try:
        from peft import PeftModel
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise UxlocalError("LoRA adapters on the hf backend need peft: pip install 'uxlocal[train]'") from exc
    names = list(adapters)
    wrapped = PeftModel.from_pretrained(model, adapters[names[0]], adapter_name=names[0])
    for name in names[1:]:
        wrapped.load_adapter(adapters[name], adapter_name=name)
    return wrapped


class _MaskProcessor:
    """Applies each row's grammar mask and records Choice rows' masked distributions."""

    def __init__(self, matchers: list[Any], prompt_width: int, capture_rows: set[int]) -> None:
        self.matchers = matchers
        self.prompt_width = prompt_width
        self.capture_rows = capture_rows
        self.captured: dict[int, list[dict[int, float]]] = defaultdict(list)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        step = input_ids.shape[1] - self.prompt_width
        for row, matcher in enumerate(self.matchers):
            if matcher is None:
                continue
            if step > 0:
                matcher.accept(int(input_ids[row, -1]))
            if matcher.finished:  # a finished row keeps emitting the end token until the batch ends
                end = int(input_ids[row, -1])
                scores[row].fill_(float("-inf"))
                scores[row, end] = 0.0
                continue
            matcher.apply(scores[row])
            if row in self.capture_rows:
                probs = torch.softmax(scores[row].float(), dim=-1)
                top = torch.topk(probs, min(CAPTURE_TOP, probs.shape[-1]))
                self.captured[row].append({int(i): float(p)
                                           for p, i in zip(top.values, top.indices, strict=True) if p > 0})
        return scores
