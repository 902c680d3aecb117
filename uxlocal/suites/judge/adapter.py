"""Serving a learned judge: find a ``uxlocal judge train`` adapter, check it fits, attach it to a judge role.

Layer contract: folder bookkeeping (reads ``judge_adapter.json``); no torch, no engine, no store.

``--judge-adapter`` takes ``DIR`` (for role ``judge``) or ``ROLE=DIR`` pairs separated by commas
(``judge2=DIR`` judges with the adapter beside a prompted ``judge``). ``DIR`` is an adapter folder
or the name of an adapter in the judge model's preset (``lora = { my-judge = "..." }``). Each
adapted role's requests name the LoRA ``<role>-adapter``; the adapter's weights sha256 (recorded
at training) is its identity in every cache key and in the run identity, so a retrained adapter
in the same folder is a new result. The adapter must have been trained on the judge model's
weights: the base's weights fingerprint is recorded at training and compared here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel, folder_fingerprint, with_adapter

META_FILE = "judge_adapter.json"


def parse_adapters(value: str | None) -> dict[str, str]:
    """``DIR`` -> {judge: DIR}; ``judge2=DIR,judge=DIR2`` -> one entry per role."""
    out: dict[str, str] = {}
    for part in (value or "").split(","):
        part = part.strip()
        if not part:
            continue
        role, sep, where = part.partition("=")
        role, where = (role.strip(), where.strip()) if sep else ("judge", part)
        if not (role == "judge" or (role.startswith("judge") and role[5:].isdigit())) or not where:
            raise InputError(f"--judge-adapter {part!r}: expected DIR or judgeN=DIR",
                             "e.g. --judge-adapter my-judge or --judge-adapter judge2=my-judge")
        out[role] = where
    return out


def adapter_name(role: str) -> str:
    """Return the LoRA name the requests of ``role`` use."""
    return f"{role}-adapter"


def read_meta(folder: Path) -> dict[str, Any]:
    """Return the adapter's ``judge_adapter.json``; an ``InputError`` when it is not a judge adapter."""
    meta_file = folder / META_FILE
    if not (folder / "adapter_config.json").is_file() or not meta_file.is_file():
        raise InputError(f"not a judge adapter (needs adapter_config.json and {META_FILE})",
                         "train one with: uxlocal judge train INPUT --rubric R --base MODEL --out DIR",
                         path=folder)
    try:
        return dict(json.loads(meta_file.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=meta_file, line=exc.lineno) from exc


def adapter_folder(where: str, model: ResolvedModel) -> Path:
    """Return a preset adapter's folder when ``where`` names one on ``model``, else ``where`` as a folder."""
    return Path(model.lora[where]) if where in model.lora else Path(where).expanduser()


def check_base(meta: dict[str, Any], model: ResolvedModel, folder: Path) -> None:
    """Check that the adapter was trained on ``model``'s weights (fingerprint), else raise a clear error."""
    trained = meta.get("base_weights")
    if trained is not None and model.path:
        same = trained == folder_fingerprint(Path(model.path))
    else:
        same = meta.get("base_identity") == model.identity
    if not same:
        raise InputError(f"the adapter was trained on base {meta.get('base_name')!r} "
            f"({meta.get('base_path')}), not on the judge model {model.name!r} ({model.path})",
                         f"judge with -m judge={meta.get('base_name')} or retrain on {model.name}",
                         path=folder / META_FILE)


def attach(value: str | None, models: dict[str, ResolvedModel]) -> dict[str, ResolvedModel]:
    """Attach each ``--judge-adapter`` entry to its role's model (checked, identified by weights)."""
    for role, where in parse_adapters(value).items():
        if role not in models:
            raise InputError(f"--judge-adapter names role {role!r}, which has no model",
                             f"bind it: --model {role}=BASE")
        model = models[role]
        if model.backend == "openai-http":
            raise InputError(f"--judge-adapter on {role}: a server applies its own adapters",
                             "serve the adapter with vLLM --lora-modules NAME=DIR and judge with URL#NAME")
        folder = adapter_folder(where, model)
        meta = read_meta(folder)
        check_base(meta, model, folder)
        models = with_adapter(
            models, role, adapter_name(role), str(folder.resolve()), str(meta["weights_sha256"])
        )
    return models


def role_loras(value: str | None) -> dict[str, str]:
    """Role -> the LoRA name its requests use."""
    return {role: adapter_name(role) for role in parse_adapters(value)}


def heldout_ids(folder: str | Path, input_sha256: str) -> list[str]:
    """Item ids the adapter's training held out, for the same input data only."""
    folder = Path(folder).expanduser()
    meta = read_meta(folder)
    if meta.get("data_sha256") != input_sha256:
        raise InputError("the adapter was trained on other data "
                         f"({meta.get('data_source')}); its held-out rows are unknown for this input",
                         "pass the file the adapter was trained on", path=folder / META_FILE)
    ids = meta.get("split", {}).get("heldout_ids")
    if not ids:
        raise InputError("records no held-out item ids (trained by an older uxlocal)", "retrain the adapter",
                         path=folder / META_FILE)
    return [str(i) for i in ids]


def ids_sha256(ids: list[str]) -> str:
    """Hash of a set of item ids (the held-out selection's part of the run identity)."""
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()
