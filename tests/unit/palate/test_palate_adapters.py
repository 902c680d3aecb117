"""Finding and attaching per-user LoRA simulators (no torch: fake adapter folders)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel
from uxlocal.suites.base import get_suite
from uxlocal.suites.palate.adapters import META_FILE, adapter_key, attach_adapters, find_adapter
from uxlocal.suites.palate.options import PalateConfig
from uxlocal.suites.palate.users import UserData, load_users


def _model(name: str, identity: str) -> ResolvedModel:
    return ResolvedModel(
        name=name, path="/m", backend="vllm", dtype="bfloat16", max_model_len=2048, identity=identity
    )


def _fake_adapter(
    root: Path, user: UserData, base: ResolvedModel, created: str, train: str | None = None
) -> Path:
    folder = (
        root / f"{user.user_id}-{adapter_key(base.identity, train or user.train_sha256(), {'c': created})}"
    )
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    (folder / META_FILE).write_text(
        json.dumps(
            {
                "base_identity": base.identity,
                "created_at": created,
                "train_sha256": train or user.train_sha256(),
            }
        )
    )
    return folder


def test_find_adapter_picks_the_newest_for_this_base_and_data(tmp_path: Path) -> None:
    user, base = load_users("u2")[0], _model("embedded", "b" * 64)
    _fake_adapter(tmp_path, user, base, "2026-01-01")
    newest = _fake_adapter(tmp_path, user, base, "2026-02-01")
    _fake_adapter(tmp_path, user, _model("other", "c" * 64), "2026-03-01")  # another base
    _fake_adapter(tmp_path, user, base, "2026-04-01", train="0" * 64)  # trained on older data
    assert find_adapter(user, base, tmp_path) == newest


def test_missing_adapter_says_how_to_train_one(tmp_path: Path) -> None:
    user = load_users("u1")[0]
    with pytest.raises(InputError, match="uxlocal palate train-simulator --user u1 --base embedded"):
        find_adapter(user, _model("embedded", "b" * 64), tmp_path)


def test_adapters_go_on_every_role_that_shares_the_user_model() -> None:
    shared, other = _model("embedded", "b" * 64), _model("big", "d" * 64)
    models = attach_adapters({"judge": shared, "user": shared, "candidate:x": other}, {"u1": Path("/a/u1-1")})
    assert models["judge"].lora == models["user"].lora == {"palate-u1": "/a/u1-1"}
    assert models["candidate:x"].lora == {}


def test_lora_run_attaches_each_users_adapter_to_the_user_seat(tmp_path: Path) -> None:
    users, base = load_users("u1,u2"), _model("embedded", "b" * 64)
    folders = {u.user_id: _fake_adapter(tmp_path, u, base, "2026-01-01") for u in users}
    config = PalateConfig(
        candidates="embedded", users="u1,u2", simulator="prompted,lora", adapters_dir=str(tmp_path)
    )
    models = get_suite("palate").adapt_models(config, {"user": base, "judge": base})
    assert models["user"].lora == {f"palate-{u}": str(f) for u, f in folders.items()}
