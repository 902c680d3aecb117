"""Request preparation: an episode's ``GenRequest`` rendered for its role's model and keyed.

Rendering (the model's chat template, tools included), the seed of a sampled request, the LoRA
adapter's identity and the cache key are decided here, once per request, before the cache is asked.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from uxlocal.engine.base import GenRequest, PreparedRequest, request_hash
from uxlocal.engine.pool import ModelPool


def episode_seed(run_seed: int, episode_id: str, seq: int) -> int:
    """Return the seed of an episode's ``seq``-th sampled request.

    It is a function of the run's seed and the request's place only, so a rerun, a resume or another
    batch order samples the same; a request that names its own seed keeps it.
    """
    digest = hashlib.sha256(f"{run_seed}:{episode_id}:{seq}".encode()).hexdigest()
    return int(digest[:8], 16)


def prepare(pool: ModelPool, request: GenRequest, *, run_seed: int, episode_id: str,
            seq: int) -> PreparedRequest:
    """Render ``request`` for the model bound to its role and compute its cache key.

    A renderer that leaves token ids to its engine (``Renderer.ids_in_engine``) gives the key text
    only (``render_key``); the engine fills ``prompt_ids`` for a whole group later.
    """
    slot = pool.slot(request.role)
    renderer = slot.renderer
    render = renderer.render_key if renderer.ids_in_engine else renderer.render
    prompt, ids = render(list(request.messages), request.tools)
    seed = request.sampling.seed
    if seed is None and request.sampling.temperature > 0:
        seed = episode_seed(run_seed, episode_id, seq)
    sampling = request.sampling if seed == request.sampling.seed else replace(request.sampling, seed=seed)
    lora_id = None
    if request.lora:  # an identified adapter is keyed by its weights, else by its folder
        lora_id = slot.model.lora_ids.get(request.lora) or slot.model.lora.get(request.lora)
    key = request_hash(slot.model.identity, prompt, sampling, request.constraint, request.lora, lora_id,
                       tools=request.tools, tool_choice=request.tool_choice)
    return PreparedRequest(request, prompt, ids, key, seed=seed, extra={"seq": seq})
