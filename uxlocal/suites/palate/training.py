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

Loop, batching, seeding and saving are ``uxlocal.train`` (shared with ``uxlocal judge train``).
``heldout_loss`` is the mean loss per target token on the user's *held-out* sessions, so "the
adapter fits this user" is a measured claim: it is computed for the base model (adapter
disabled) and for the adapter, and both go into ``palate_adapter.json``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uxlocal.errors import UxlocalError
from uxlocal.models import ResolvedModel
from uxlocal.suites.palate.adapters import META_FILE, adapter_key, adapters_root
from uxlocal.suites.palate.render import lora_sim_messages, session_view
from uxlocal.suites.palate.users import Session, UserData
from uxlocal.train import lora
from uxlocal.train.adapter import save_adapter
from uxlocal.train.examples import IGNORE, Example
from uxlocal.train.lora import TrainSettings, heldout_loss

__all__ = ["IGNORE", "Example", "TrainResult", "TrainSettings", "heldout_loss", "load_base", "perplexity",
           "session_examples", "train_simulator", "user_examples"]


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
    """Return the chat as text with the model's template (the same Jinja the scheduler's renderer uses)."""
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


def load_base(base: ResolvedModel) -> tuple[Any, Any, str]:
    """Return the base model in fp32 (master weights), the run-time renderer, and the device."""
    from uxlocal.engine.render import TemplateRenderer

    model, where = lora.load_base(base.path)
    return model, TemplateRenderer(base.path), where


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
    pad = lora.pad_id(model)
    train = user_examples(renderer, user.train, max_length=settings.max_length)
    heldout = user_examples(renderer, user.heldout, max_length=settings.max_length)
    base_loss = heldout_loss(model, heldout, pad, where=device)
    model = lora.with_lora(model, settings)
    losses = lora.train_loop(model, train, settings, pad, device)
    adapted_loss = heldout_loss(model, heldout, pad, where=device)
    seconds = time.perf_counter() - started
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
    save_adapter(model, folder, META_FILE, meta)
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
