"""Train a per-user LoRA simulator: predict this user's next message, or ``[QUIT]``, from the chat so far.

Layer contract: reads a user's training sessions and a base model folder, writes one adapter
folder (``adapters.py`` layout); no store, no engine. transformers + peft (``uxlocal[train]``).

Data: every training session becomes the adapted simulator's serving input (``render.
lora_sim_messages``: a one-line task, then the conversation with roles flipped so the user's
turns are the model's own), rendered with the base model's chat template exactly as the scheduler
renders it at run time. Loss falls only on the user's turns and their end-of-turn token, the
final ``[QUIT]`` included, so the adapter also learns when this user leaves. A session longer
than ``max_length`` tokens is cut into consecutive windows of whole exchanges, each with the
system line; every user turn is a target in exactly one window.

Loop: plain torch, fp32 master weights under bf16 autocast (about 2x faster on these CPUs,
shared/notes/lora-cpu.md), AdamW with linear warm-up and decay, gradient clipping at 1.0,
seeded batches. ``heldout_loss`` is the mean loss per target token on the user's *held-out*
sessions, so "the adapter fits this user" is a measured claim: it is computed for the base
model (adapter disabled) and for the adapter, and both go into ``palate_adapter.json``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from uxlocal.errors import UxlocalError
from uxlocal.models import ResolvedModel
from uxlocal.suites.palate.adapters import META_FILE, adapter_key, adapters_root
from uxlocal.suites.palate.render import lora_sim_messages, session_view
from uxlocal.suites.palate.users import Session, UserData

IGNORE = -100


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
    """Tokens per training sequence; longer sessions are windowed."""
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (for the content address and the metadata file)."""
        data = asdict(self)
        data["target_modules"] = list(self.target_modules)
        return data


@dataclass
class Example:
    """One training sequence: token ids and labels (``IGNORE`` outside the user's turns)."""

    ids: list[int]
    labels: list[int]

    @property
    def targets(self) -> int:
        """Number of labelled tokens."""
        return sum(label != IGNORE for label in self.labels)


@dataclass
class TrainResult:
    """What training produced and measured."""

    folder: Path
    user_id: str
    heldout_loss_base: float
    heldout_loss_adapter: float
    train_loss_first: float
    train_loss_last: float
    seconds: float
    examples: int
    reused: bool = False
    losses: list[float] = field(default_factory=list)


def _render_text(renderer: Any, messages: list[dict[str, str]], generation_prompt: bool) -> str:
    """The chat as text with the model's template (the same Jinja the scheduler's renderer uses)."""
    return str(
        renderer.template.render(
            messages=messages,
            add_generation_prompt=generation_prompt,
            **{k: v for k, v in renderer.special.items() if v is not None},
        )
    )


def session_examples(renderer: Any, session: Session, *, max_length: int = 1024) -> list[Example]:
    """Training sequences of one session (windowed when it is longer than ``max_length``)."""
    history: list[tuple[str, str]] = [(t.role, t.text) for t in session.turns]
    view = session_view(session)
    windows: list[list[tuple[str, str]]] = []
    start = 0
    while start < len(history):
        end = len(history)
        while True:
            example = _window_example(renderer, view, session.lang, history[start:end])
            if len(example.ids) <= max_length or end - start <= 2:
                break
            end -= 2  # drop the last (user, character) exchange and try again
        windows.append(history[start:end])
        start = end
    return [_window_example(renderer, view, session.lang, w) for w in windows]


def _window_example(renderer: Any, view: Any, lang: str, turns: list[tuple[str, str]]) -> Example:
    messages = lora_sim_messages(view, lang, turns)
    if messages[-1]["role"] != "assistant":
        messages = messages[:-1]  # a window ends on the user's turn (the model's own)
    full = _render_text(renderer, messages, generation_prompt=False).rstrip("\n")
    spans = []
    for k, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prefix = _render_text(renderer, messages[:k], generation_prompt=True)
        if not full.startswith(prefix):
            raise UxlocalError(
                "the base model's chat template is not prefix-stable; LoRA training needs "
                "the rendered prompt of each turn to be a prefix of the whole chat"
            )
        upto = _render_text(renderer, messages[: k + 1], generation_prompt=False).rstrip("\n")
        spans.append((len(prefix), len(upto)))
    encoding = renderer.tokenizer.encode(full, add_special_tokens=False)
    labels = [
        tid if any(a <= start < b for a, b in spans) else IGNORE
        for tid, (start, _end) in zip(encoding.ids, encoding.offsets, strict=True)
    ]
    return Example(list(encoding.ids), labels)


def user_examples(renderer: Any, sessions: list[Session], *, max_length: int = 1024) -> list[Example]:
    """Training sequences of several sessions."""
    return [e for s in sessions for e in session_examples(renderer, s, max_length=max_length)]


def _batch(examples: list[Example], pad_id: int) -> tuple[Any, Any, Any]:
    import torch

    width = max(len(e.ids) for e in examples)
    ids = torch.tensor([e.ids + [pad_id] * (width - len(e.ids)) for e in examples])
    labels = torch.tensor([e.labels + [IGNORE] * (width - len(e.labels)) for e in examples])
    mask = torch.tensor([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in examples])
    return ids, labels, mask


def _token_loss(model: Any, examples: list[Example], pad_id: int, device: str) -> tuple[Any, int]:
    """Sum of target-token losses and the number of target tokens (for exact token averaging)."""
    import torch

    ids, labels, mask = (t.to(device) for t in _batch(examples, pad_id))
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        logits = model(input_ids=ids, attention_mask=mask).logits
    shifted = logits[:, :-1].float().reshape(-1, logits.shape[-1])
    targets = labels[:, 1:].reshape(-1)
    loss = torch.nn.functional.cross_entropy(shifted, targets, ignore_index=IGNORE, reduction="sum")
    return loss, int((targets != IGNORE).sum())


def heldout_loss(
    model: Any, examples: list[Example], pad_id: int, *, device: str = "cpu", batch_size: int = 4
) -> float:
    """Mean loss per target token over ``examples`` (no gradients)."""
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            loss, n = _token_loss(model, examples[start : start + batch_size], pad_id, device)
            total, count = total + float(loss), count + n
    return total / max(count, 1)


def load_base(base: ResolvedModel) -> tuple[Any, Any, str]:
    """The base model in fp32 (master weights), the run-time renderer, and the device."""
    try:
        import torch
        from transformers import AutoModelForCausalLM
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise UxlocalError(f"training needs torch and transformers: {exc}") from exc
    from uxlocal.engine.render import TemplateRenderer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model: Any = AutoModelForCausalLM.from_pretrained(base.path, dtype=torch.float32)
    model = model.to(device)
    return model, TemplateRenderer(base.path), device


def _with_lora(model: Any, settings: TrainSettings) -> Any:
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:  # pragma: no cover - environment dependent
        raise UxlocalError("LoRA simulators need peft: pip install 'uxlocal[train]'") from exc
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def _schedule(step: int, settings: TrainSettings) -> float:
    if step < settings.warmup:
        return (step + 1) / settings.warmup
    return max(0.0, (settings.steps - step) / max(1, settings.steps - settings.warmup))


def _train_loop(
    model: Any, examples: list[Example], settings: TrainSettings, pad_id: int, device: str
) -> list[float]:
    import torch

    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _schedule(s, settings))
    order: list[int] = []
    losses = []
    model.train()
    for _step in range(settings.steps):
        if len(order) < settings.batch_size:
            fresh = list(range(len(examples)))
            rng.shuffle(fresh)
            order += fresh
        batch = [examples[i] for i in order[: settings.batch_size]]
        del order[: settings.batch_size]
        loss_sum, count = _token_loss(model, batch, pad_id, device)
        loss = loss_sum / max(count, 1)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def train_simulator(
    user: UserData,
    base: ResolvedModel,
    *,
    settings: TrainSettings | None = None,
    adapters_dir: str | Path | None = None,
    force: bool = False,
) -> TrainResult:
    """Train (or reuse) ``user``'s adapter on ``base`` and measure held-out loss before and after."""
    settings = settings or TrainSettings()
    key = adapter_key(base.identity, user.train_sha256(), settings.as_dict())
    folder = adapters_root(adapters_dir) / f"{user.user_id}-{key}"
    if (folder / META_FILE).is_file() and not force:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        return TrainResult(
            folder,
            user.user_id,
            meta["heldout_loss_base"],
            meta["heldout_loss_adapter"],
            meta["train_loss_first"],
            meta["train_loss_last"],
            meta["seconds"],
            meta["examples"],
            reused=True,
        )
    started = time.perf_counter()
    model, renderer, device = load_base(base)
    pad_id = int(model.config.eos_token_id if isinstance(model.config.eos_token_id, int) else 0)
    train = user_examples(renderer, user.train, max_length=settings.max_length)
    heldout = user_examples(renderer, user.heldout, max_length=settings.max_length)
    base_loss = heldout_loss(model, heldout, pad_id, device=device)
    model = _with_lora(model, settings)
    losses = _train_loop(model, train, settings, pad_id, device)
    adapted_loss = heldout_loss(model, heldout, pad_id, device=device)
    seconds = time.perf_counter() - started
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    meta = {
        "user_id": user.user_id,
        "base_name": base.name,
        "base_identity": base.identity,
        "base_path": base.path,
        "train_sha256": user.train_sha256(),
        "settings": settings.as_dict(),
        "heldout_loss_base": base_loss,
        "heldout_loss_adapter": adapted_loss,
        "train_loss_first": losses[0],
        "train_loss_last": losses[-1],
        "seconds": round(seconds, 1),
        "examples": len(train),
        "heldout_examples": len(heldout),
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
    }
    (tmp / META_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return TrainResult(
        folder,
        user.user_id,
        base_loss,
        adapted_loss,
        losses[0],
        losses[-1],
        seconds,
        len(train),
        losses=losses,
    )


def perplexity(loss: float) -> float:
    """exp(loss), for display."""
    return math.exp(min(loss, 50.0))
