"""Where per-user LoRA simulators live and how a run finds and attaches them.

Layer contract: folder bookkeeping only (no torch, no engine). Training is ``training.py``.

Layout: ``<adapters_dir>/<user_id>-<key>/`` holds a peft adapter (``adapter_config.json``,
``adapter_model.safetensors``) and ``palate_adapter.json`` (what it was trained from and how).
``key`` is the first 12 hex of sha256 over (base model identity, the user's training data hash,
the training settings), so the folder name is a content address: a retrained adapter gets a new
folder, and the folder path, which the scheduler puts into every request hash, changes with it.
``adapters_dir`` defaults to ``$UXLOCAL_HOME/palate/adapters``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from uxlocal import paths
from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel
from uxlocal.suites.palate.users import UserData

META_FILE = "palate_adapter.json"


def adapters_root(folder: str | Path | None = None) -> Path:
    """Return the adapters folder (created on first use)."""
    root = Path(folder) if folder else paths.home() / "palate" / "adapters"
    root.mkdir(parents=True, exist_ok=True)
    return root


def adapter_name(user_id: str) -> str:
    """Return the LoRA name requests use for this user's simulator."""
    return f"palate-{user_id}"


def adapter_key(base_identity: str, train_sha256: str, settings: dict[str, Any]) -> str:
    """Content address of an adapter (see the module docstring)."""
    blob = json.dumps({"base": base_identity, "train": train_sha256, "settings": settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def read_meta(folder: Path) -> dict[str, Any]:
    """Return an adapter's ``palate_adapter.json``."""
    return dict(json.loads((folder / META_FILE).read_text(encoding="utf-8")))


def find_adapter(user: UserData, base: ResolvedModel, folder: str | Path | None = None) -> Path:
    """Return the newest adapter for ``user`` trained on ``base`` from the user's current training data."""
    root = adapters_root(folder)
    matches = []
    for candidate in sorted(root.glob(f"{user.user_id}-*")):
        if not (candidate / META_FILE).is_file() or not (candidate / "adapter_config.json").is_file():
            continue
        meta = read_meta(candidate)
        if meta.get("base_identity") == base.identity and meta.get("train_sha256") == user.train_sha256():
            matches.append((str(meta.get("created_at", "")), candidate))
    if not matches:
        raise InputError(
            f"no LoRA simulator for user {user.user_id} on base {base.name} trained from the current data",
            f"run: uxlocal palate train-simulator --user {user.user_id} --base {base.name}",
            path=root,
        )
    return max(matches)[1]


def attach_adapters(
    models: dict[str, ResolvedModel], adapters: dict[str, Path], *, role: str = "user"
) -> dict[str, ResolvedModel]:
    """Register adapters on the model serving ``role`` and on every role sharing that model.

    Roles bound to the same model share one engine, and the pool keeps the first role's model
    for it, so all of them must carry the adapters or a request could find them missing.
    """
    target = models[role].identity
    out = {}
    for name, model in models.items():
        if model.identity == target:
            loras = {**model.lora, **{adapter_name(uid): str(path) for uid, path in adapters.items()}}
            model = model.model_copy(update={"lora": loras})
        out[name] = model
    return out


def adapters_fingerprint(user_ids: list[str], folder: str | Path | None = None) -> str:
    """Hash of the adapter folder names present for these users (part of the run identity)."""
    root = adapters_root(folder)
    names = sorted(p.name for uid in user_ids for p in root.glob(f"{uid}-*"))
    return hashlib.sha256("\n".join(names).encode()).hexdigest()
