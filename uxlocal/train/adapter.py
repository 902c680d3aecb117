"""Saving a trained adapter: peft's files plus a metadata file, written atomically, with a content hash.

Layer contract: writes one folder; no training, no store.

``weights_sha256`` hashes the adapter's tensors (names, dtypes, shapes and bytes, in name order),
not the file: two trainings that produce the same numbers have the same hash whatever the file
header says. It goes into the metadata file, and callers put it into cache keys and run
identities, so a retrained adapter is never mistaken for the old one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

WEIGHTS_FILE = "adapter_model.safetensors"


def weights_sha256(folder: str | Path) -> str:
    """Content hash of the adapter tensors in ``folder``."""
    import torch
    from safetensors import safe_open

    digest = hashlib.sha256()
    with safe_open(str(Path(folder) / WEIGHTS_FILE), framework="pt") as handle:
        for name in sorted(handle.keys()):
            tensor = handle.get_tensor(name).contiguous()
            digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}\n".encode())
            digest.update(tensor.view(-1).view(dtype=torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def save_adapter(model: Any, folder: str | Path, meta_file: str, meta: dict[str, Any]) -> str:
    """Write ``model``'s adapter and ``meta`` (plus ``weights_sha256``) to ``folder``; returns the hash.

    The folder appears complete or not at all: files go to ``<folder>.tmp`` first, which then
    replaces any older folder of that name.
    """
    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    sha = weights_sha256(tmp)
    text = json.dumps({**meta, "weights_sha256": sha}, indent=2, ensure_ascii=False)
    (tmp / meta_file).write_text(text, encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return sha
