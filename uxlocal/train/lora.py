"""LoRA training on a causal LM: load the base, attach the adapter, run the seeded loop.

Layer contract: torch, transformers and peft only (``uxlocal[train]``); no store, no engine,
no files (saving is ``adapter.py``). Works on CPU and GPU with the same code.

The loop is plain torch: fp32 master weights under bf16 autocast where bf16 is fast (a GPU, or a
CPU with AMX tiles: about 2x faster, shared/notes/lora-cpu.md) and plain fp32 elsewhere (on a
CPU with only avx512_bf16, autocast made a 250-token forward of the 135M model 2.2x slower,
5.5 s against 2.5 s, measured 2026-12-04 on the 2-core dev box), AdamW with linear warm-up and decay,
gradient clipping at 1.0, and batches drawn by a seeded shuffle. The loss is the mean over
labelled tokens of the batch (token-averaged, not sequence-averaged), so a long example weighs
by its targets. The seed is set before the adapter is created (LoRA's A matrices start random),
so the same data, settings and seed give the same adapter on the same machine.

Frozen prefix: with ``top_layers`` set, the layers below the adapter never change, so their output
for a training example is the same at every step. ``frozen_prefix`` computes it once per example
(one no-grad pass) and every step runs only the adapted top layers on it: the same loss and
gradients as the full forward, at ``top_layers / num_layers`` of its cost. It is used when the
states fit ``PREFIX_BUDGET_BYTES`` (a 135M model's 480 judge prompts take ~280 MB); otherwise each
step runs the whole model, as without ``top_layers``.

Why not TRL: its trainers want ``datasets`` and render chat templates themselves, while our
examples must be exactly the tokens the serving path sends; its reward trainer learns a scalar
head that vLLM could not serve as a label distribution. The loop below is the part we need.
"""

from __future__ import annotations

import contextlib
import functools
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from uxlocal import settings
from uxlocal.errors import UxlocalError
from uxlocal.train.examples import IGNORE, Example, loss_span, pad_batch


@dataclass(frozen=True)
class TrainSettings:
    """How an adapter is trained (all of it is part of the adapter's content address)."""

    steps: int = 60
    """Optimizer steps."""
    batch_size: int = 4
    """Sequences per step."""
    lr: float = 1e-3
    """Peak learning rate (AdamW)."""
    warmup: int = 5
    """Linear warm-up steps, then linear decay to zero."""
    rank: int = 8
    """LoRA rank (vLLM serves up to rank 16 by default)."""
    alpha: int = 16
    dropout: float = 0.05
    target_modules: tuple[str, ...] = ("q_proj", "v_proj")
    max_length: int = 1024
    """Tokens per training sequence; longer ones are windowed or refused by the caller."""
    seed: int = 0
    top_layers: int = 0
    """Adapt only the top N decoder layers (0 = all). Backpropagation then stops at the lowest
    adapted layer, so a step costs less; the loss of a judge sits on the last tokens anyway."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (for the content address and the metadata file).

        Fields added after the first release are left out while at their default, so adapters
        trained before them keep their content address.
        """
        data = asdict(self)
        data["target_modules"] = list(self.target_modules)
        if not self.top_layers:
            del data["top_layers"]
        return data


@dataclass(frozen=True)
class StepReport:
    """What one optimizer step did (for progress bars and log lines)."""

    step: int
    """1-based."""
    steps: int
    loss: float
    elapsed_s: float

    @property
    def eta_s(self) -> float:
        """Seconds left at the mean pace so far."""
        return self.elapsed_s / self.step * (self.steps - self.step)


OnStep = Callable[[StepReport], None]

PREFIX_BUDGET_BYTES = 4 << 30
"""Largest frozen-prefix cache (fp32 hidden states of every example) kept in memory."""


def device() -> str:
    """``cuda`` when a GPU is visible, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=None)
def fast_bf16(where: str) -> bool:
    """Whether bf16 autocast speeds this device up (GPU, or CPU with AMX); see the module docstring."""
    import torch

    if where != "cpu":
        return True
    probe = getattr(torch.cpu, "_init_amx", None)
    return bool(probe()) if callable(probe) else False


def autocast(where: str) -> Any:
    """bf16 autocast on devices where it is fast, a no-op context elsewhere."""
    import torch

    return torch.autocast(device_type=where, dtype=torch.bfloat16, enabled=fast_bf16(where))


def load_base(path: str) -> tuple[Any, str]:
    """The base model in fp32 (master weights) on the best device, and that device.

    On a GPU gradient checkpointing is switched on (a 7B base then fits with long prompts); it
    recomputes activations and changes no result.
    """
    settings.apply_process_defaults()
    try:
        import torch
        from transformers import AutoModelForCausalLM
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise UxlocalError(f"training needs torch and transformers: {exc}") from exc
    where = device()
    model: Any = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(where)
    if where == "cuda":
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    return model, where


def pad_id(model: Any) -> int:
    """A token id to pad with (never attended to, never labelled)."""
    eos = model.config.eos_token_id
    eos = eos[0] if isinstance(eos, list) and eos else eos
    return int(eos if isinstance(eos, int) else 0)


def with_lora(model: Any, settings: TrainSettings) -> Any:
    """``model`` wrapped with a fresh LoRA adapter, initialized from ``settings.seed``."""
    try:
        import torch
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise UxlocalError("LoRA training needs peft: pip install 'uxlocal[train]'") from exc
    layers = None
    if settings.top_layers:
        count = int(model.config.num_hidden_layers)
        layers = list(range(max(0, count - settings.top_layers), count))
    config = LoraConfig(r=settings.rank, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                        target_modules=list(settings.target_modules), layers_to_transform=layers,
                        task_type="CAUSAL_LM")
    torch.manual_seed(settings.seed)
    return get_peft_model(model, config)


@dataclass
class FrozenPrefix:
    """Hidden states entering layer ``start`` of each example: what the frozen layers below it compute."""

    start: int
    states: list[Any]
    """Per example, in the examples' order: a ``(len(ids), hidden)`` tensor."""

    def take(self, indices: Sequence[int]) -> "FrozenPrefix":
        """The states of these examples, in this order."""
        return FrozenPrefix(self.start, [self.states[i] for i in indices])


@contextlib.contextmanager
def decoder_window(model: Any, start: int, stop: int | None = None, *, final_norm: bool = True) -> Iterator[None]:
    """Let the model's forward run only decoder layers ``[start:stop]`` (and, optionally, no final norm).

    With ``start > 0`` the forward takes ``inputs_embeds``: the hidden states entering layer ``start``.
    """
    import torch

    inner = model.get_decoder()
    layers, norm = inner.layers, inner.norm
    inner.layers = torch.nn.ModuleList(list(layers)[start:stop])
    if not final_norm:
        inner.norm = torch.nn.Identity()
    try:
        yield
    finally:
        inner.layers, inner.norm = layers, norm


def first_adapted_layer(model: Any, settings: TrainSettings) -> int:
    """Index of the lowest layer the adapter changes (0 when it adapts all of them)."""
    if not settings.top_layers:
        return 0
    return max(0, int(model.config.num_hidden_layers) - settings.top_layers)


def frozen_prefix(model: Any, examples: Sequence[Example], start: int, pad: int, where: str, *,
                  batch_size: int = 8, budget_bytes: int = PREFIX_BUDGET_BYTES,
                  on_batch: Callable[[int, int], None] | None = None) -> FrozenPrefix | None:
    """The states entering layer ``start`` of every example, or None (nothing frozen, or over budget).

    Computed in left-padded batches with the model's own masking, so each example's states equal
    those of its own full forward. ``on_batch(done, total)`` reports examples done.
    """
    import torch

    tokens = sum(len(e.ids) for e in examples)
    if start <= 0 or tokens * int(model.config.hidden_size) * 4 > budget_bytes:
        return None
    states: list[Any] = []
    with torch.no_grad(), decoder_window(model, 0, start, final_norm=False):
        for first in range(0, len(examples), batch_size):
            part = examples[first:first + batch_size]
            batch = {k: v.to(where) for k, v in pad_batch(part, pad).items()}
            del batch["labels"]
            with autocast(where):
                hidden = model.get_decoder()(**batch, use_cache=False).last_hidden_state.float()
            states += [hidden[i, hidden.shape[1] - len(e.ids):].clone() for i, e in enumerate(part)]
            if on_batch is not None:
                on_batch(len(states), len(examples))
    return FrozenPrefix(start, states)


def _prefixed_logits(model: Any, examples: Sequence[Example], prefix: FrozenPrefix, batch: dict[str, Any],
                     keep: int) -> Any:
    """Logits of the last ``keep`` columns, running only the layers from ``prefix.start`` up."""
    import torch

    width, hidden = batch["input_ids"].shape[1], prefix.states[0].shape[-1]
    embeds = torch.zeros(len(examples), width, hidden, device=batch["input_ids"].device)
    for row, state in enumerate(prefix.states):
        embeds[row, width - state.shape[0]:] = state
    with decoder_window(model, prefix.start), autocast(embeds.device.type):
        return model(inputs_embeds=embeds, attention_mask=batch["attention_mask"],
                     position_ids=batch["position_ids"], logits_to_keep=keep, use_cache=False).logits


def token_logits(model: Any, examples: Sequence[Example], pad: int, where: str,
                 prefix: FrozenPrefix | None = None) -> tuple[Any, Any]:
    """(logits, labels) of the columns that predict labelled tokens, shifted and flattened.

    Row ``j`` of the logits predicts label ``j``; labels are ``IGNORE`` where there is no loss.
    With ``prefix`` (the examples' frozen states, in order) only the layers above it run.
    """
    batch = {k: v.to(where) for k, v in pad_batch(examples, pad).items()}
    labels = batch.pop("labels")
    keep = loss_span(examples)
    if prefix is not None:
        logits = _prefixed_logits(model, examples, prefix, batch, keep)
    else:
        with autocast(where):
            logits = model(**batch, logits_to_keep=keep).logits
    predicted = logits[:, :-1].float().reshape(-1, logits.shape[-1])
    return predicted, labels[:, labels.shape[1] - keep + 1:].reshape(-1)


def token_loss(model: Any, examples: Sequence[Example], pad: int, where: str,
               prefix: FrozenPrefix | None = None) -> tuple[Any, int]:
    """Sum of target-token losses and the number of target tokens (for exact token averaging)."""
    import torch

    logits, targets = token_logits(model, examples, pad, where, prefix)
    loss = torch.nn.functional.cross_entropy(logits, targets, ignore_index=IGNORE, reduction="sum")
    return loss, int((targets != IGNORE).sum())


def heldout_loss(model: Any, examples: Sequence[Example], pad: int, *, where: str = "cpu",
                 batch_size: int = 4, prefix: FrozenPrefix | None = None) -> float:
    """Mean loss per target token over ``examples`` (no gradients); ``prefix``: their frozen states."""
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            part = range(start, min(start + batch_size, len(examples)))
            loss, n = token_loss(model, [examples[i] for i in part], pad, where,
                                 prefix.take(part) if prefix is not None else None)
            total, count = total + float(loss), count + n
    return total / max(count, 1)


def lr_factor(step: int, settings: TrainSettings) -> float:
    """Learning-rate multiplier at ``step`` (0-based): linear warm-up, then linear decay to zero."""
    if step < settings.warmup:
        return (step + 1) / settings.warmup
    return max(0.0, (settings.steps - step) / max(1, settings.steps - settings.warmup))


def batches(count: int, settings: TrainSettings) -> list[list[int]]:
    """Example indices of every step: seeded shuffled passes over the data, cut into batches."""
    rng = random.Random(settings.seed)
    order: list[int] = []
    plan = []
    for _ in range(settings.steps):
        if len(order) < settings.batch_size:
            fresh = list(range(count))
            rng.shuffle(fresh)
            order += fresh
        plan.append(order[:settings.batch_size])
        del order[:settings.batch_size]
    return plan


def train_loop(model: Any, examples: Sequence[Example], settings: TrainSettings, pad: int, where: str, *,
               on_step: OnStep | None = None, prefix: FrozenPrefix | None = None) -> list[float]:
    """Train the adapter's parameters in place; returns the loss of every step.

    ``prefix``: the examples' frozen states (``frozen_prefix``), so each step runs only the layers above.
    """
    import torch

    if not examples or not any(e.targets for e in examples):
        raise UxlocalError("nothing to train on: no example has a labelled token")
    torch.manual_seed(settings.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, settings))
    losses: list[float] = []
    started = time.perf_counter()
    model.train()
    for step, indices in enumerate(batches(len(examples), settings), start=1):
        loss_sum, count = token_loss(model, [examples[i] for i in indices], pad, where,
                                     prefix.take(indices) if prefix is not None else None)
        loss = loss_sum / max(count, 1)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(StepReport(step, settings.steps, losses[-1], time.perf_counter() - started))
    model.eval()
    return losses


def completion_logprobs(model: Any, prompt_ids: Sequence[int], completions: Sequence[Sequence[int]],
                        where: str) -> list[float]:
    """Log-probability of each completion after one prompt, reading the prompt once.

    The prompt's keys and values are cached; each completion of more than one token is fed on top
    of the cache, which is then cut back to the prompt. Equal to scoring every ``prompt +
    completion`` sequence on its own, at the cost of one prompt instead of one per completion.
    """
    import torch

    logsoftmax = torch.nn.functional.log_softmax
    with torch.no_grad(), autocast(where):
        out = model(input_ids=torch.tensor([list(prompt_ids)], device=where), use_cache=True)
        first = logsoftmax(out.logits[0, -1].float(), dim=-1)
        cache = out.past_key_values
        totals = []
        for ids in completions:
            total = float(first[ids[0]])
            if len(ids) > 1:
                more = model(input_ids=torch.tensor([list(ids[:-1])], device=where), past_key_values=cache,
                             use_cache=True)
                steps = logsoftmax(more.logits[0].float(), dim=-1)
                total += sum(float(steps[j, ids[j + 1]]) for j in range(len(ids) - 1))
                cache.crop(-(len(ids) - 1))  # back to the prompt alone
            totals.append(total)
    return totals
