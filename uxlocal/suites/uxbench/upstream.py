"""Read UXBench's own prompts and call settings from the user's checkout, at run time.

Layer contract: reads (never imports, never executes) five Python files of a UXBench checkout
with ``ast`` and returns their templates and settings; no prompts are built here (that is
``protocol.py``), nothing is written, nothing is copied into this project.

Why parse instead of import: upstream's modules open HTTP sessions and reconfigure stdout at
import time, and their licence is research-only (spec ``uxbench.md`` §8), so uxlocal ships none
of their text: a run that must ask a model upstream's exact words reads them from the checkout
the user supplies (``--upstream DIR`` or ``UXLOCAL_UXBENCH_SRC``).

What is read, and from where (the layout of mengze-hong/UXBench at commit ``UPSTREAM_COMMIT``):

- T1 template ``POINTWISE_GRM`` (``src/utils/prompts.py``) and its call settings: the defaults of
  ``call_llm`` (``src/utils/llm_client.py``), overridden by any keyword ``_judge_task1`` passes
  (``scripts/run_eval.py``).
- T2/T3 generation settings: the keywords of the ``call_llm`` call in ``_generate_task2`` and
  ``_generate_task3`` (``scripts/run_eval.py``).
- GRM template ``POINTWISE_GRM_TEMPLATE``, the request settings (the ``payload`` literal in
  ``call_pointwise_grm``) and the truncation ladder (``truncation_levels`` in ``judge_one``),
  separately from ``scripts/grm_judge/run_grm_judge_task2.py`` and ``..._task3.py``.

A file or a name that cannot be read is an ``UpstreamError`` naming the file, the line when
there is one, and what was expected.
"""

from __future__ import annotations

import ast
import hashlib
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uxlocal.errors import InputError

UPSTREAM_COMMIT = "51e31b6"
"""The mengze-hong/UXBench commit whose behaviour uxlocal reproduces (checked by the conformance tests)."""
ENV_VAR = "UXLOCAL_UXBENCH_SRC"
"""Environment variable naming a UXBench checkout when ``--upstream`` is not given."""

PROMPTS_FILE = "src/utils/prompts.py"
CLIENT_FILE = "src/utils/llm_client.py"
RUN_EVAL_FILE = "scripts/run_eval.py"
GRM_FILES = {"eval": "scripts/grm_judge/run_grm_judge_task2.py",
             "recovery": "scripts/grm_judge/run_grm_judge_task3.py"}
"""The GRM scorer per task (T2 eval, T3 recovery); each holds its own template and ladder."""

T1_FIELDS = frozenset({"context", "prompt", "response"})
GRM_FIELDS = frozenset({"context", "prompt", "response_a"})
_HINT = (f"point --upstream (or {ENV_VAR}) at a checkout of mengze-hong/UXBench; uxlocal reproduces "
         f"commit {UPSTREAM_COMMIT}")


class UpstreamError(InputError):
    """The checkout lacks a file or a name uxlocal reads; the message names both."""

    def __init__(self, path: Path, line: int | None, problem: str) -> None:
        super().__init__(problem, _HINT, path=path, line=line)


@dataclass(frozen=True)
class CallSettings:
    """Decoding settings of one upstream call site."""

    temperature: float
    max_tokens: int
    top_logprobs: int = 0
    """Alternatives per generated token (GRM scoring only; 0 = none requested)."""


@dataclass(frozen=True)
class UpstreamProtocol:
    """Everything uxlocal needs from a checkout to ask exactly what UXBench's harness asks."""

    root: Path
    t1_template: str
    t1_call: CallSettings
    generation: dict[str, CallSettings]
    """Candidate settings per task (``eval``, ``recovery``)."""
    grm_templates: dict[str, str]
    grm_call: dict[str, CallSettings]
    truncation: dict[str, tuple[tuple[int, ...], ...]]
    """Per task, the ladder of limits tried in order (0 = no limit): T2 (history messages,
    response chars), T3 (failed, complaint, response chars)."""
    file_hashes: dict[str, str] = field(default_factory=dict)
    """sha256 of every file read, by path inside the checkout (part of the run identity)."""

    def digest(self) -> str:
        """One sha256 over the files read: equal digests ask models the same words."""
        blob = "\n".join(f"{k}={v}" for k, v in sorted(self.file_hashes.items()))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- ast helpers


@dataclass(frozen=True)
class _Source:
    path: Path
    tree: ast.Module


def _parse(root: Path, rel: str, hashes: dict[str, str]) -> _Source:
    path = root / rel
    if not path.is_file():
        raise UpstreamError(path, None, "file not found in the UXBench checkout")
    raw = path.read_bytes()
    hashes[rel] = hashlib.sha256(raw).hexdigest()
    try:
        return _Source(path, ast.parse(raw, filename=str(path)))
    except SyntaxError as exc:
        raise UpstreamError(path, exc.lineno, f"not valid Python: {exc.msg}") from None


def _string_constant(src: _Source, name: str) -> str:
    """Return the module-level ``NAME = "..."`` string."""
    for node in src.tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        else:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = node.value  # type: ignore[union-attr]
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
            raise UpstreamError(src.path, node.lineno, f"{name} is not a plain string literal")
    raise UpstreamError(src.path, None, f"no module-level string {name}")


def _function(src: _Source, name: str) -> ast.FunctionDef:
    for node in src.tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise UpstreamError(src.path, None, f"no function {name}()")


def _literal(src: _Source, node: ast.AST, what: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        raise UpstreamError(src.path, getattr(node, "lineno", None), f"{what} is not a literal") from None


def _defaults(src: _Source, fn: ast.FunctionDef) -> dict[str, Any]:
    """Literal defaults of a function's parameters, by name (non-literal defaults are left out)."""
    positional = fn.args.posonlyargs + fn.args.args
    pairs = list(zip(positional[len(positional) - len(fn.args.defaults):], fn.args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is not None]
    out: dict[str, Any] = {}
    for arg, default in pairs:
        try:
            out[arg.arg] = ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError):
            continue
    return out


def _call_keywords(src: _Source, fn: ast.FunctionDef, callee: str) -> dict[str, Any]:
    """Literal keyword arguments of the first call to ``callee`` inside ``fn``."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == callee:
            wanted = [kw for kw in node.keywords if kw.arg in ("temperature", "max_tokens")]
            return {str(kw.arg): _literal(src, kw.value, f"{fn.name}(): {callee}(..., {kw.arg}=...)")
                    for kw in wanted}
    raise UpstreamError(src.path, fn.lineno, f"{fn.name}() never calls {callee}()")


def _assigned(src: _Source, fn: ast.FunctionDef, name: str) -> ast.expr:
    for node in ast.walk(fn):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.value  # type: ignore[union-attr]
    raise UpstreamError(src.path, fn.lineno, f"{fn.name}() assigns no {name}")


def _literal_dict_entries(src: _Source, node: ast.expr, what: str) -> dict[str, Any]:
    """Return the literal entries of a dict display (entries with computed values are skipped)."""
    if not isinstance(node, ast.Dict):
        raise UpstreamError(src.path, node.lineno, f"{what} is not a dict literal")
    out: dict[str, Any] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            try:
                out[key.value] = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError):
                continue
    return out


# ---------------------------------------------------------------- what is read


def _template(src: _Source, name: str, fields: frozenset[str]) -> str:
    text = _string_constant(src, name)
    try:
        found = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    except ValueError as exc:
        raise UpstreamError(src.path, None, f"{name} is not a str.format template: {exc}") from None
    if found != fields:
        raise UpstreamError(src.path, None, f"{name} has fields {sorted(found)}, expected {sorted(fields)}")
    return text


def _settings(src: _Source, values: dict[str, Any], what: str, *, logprobs: bool = False) -> CallSettings:
    try:
        temperature = float(values["temperature"])
        max_tokens = int(values["max_tokens"])
        top = int(values["top_logprobs"]) if logprobs else 0
    except (KeyError, TypeError, ValueError) as exc:
        raise UpstreamError(src.path, None, f"{what}: cannot read {exc}") from None
    return CallSettings(temperature, max_tokens, top)


def _ladder(src: _Source, fn: ast.FunctionDef, width: int) -> tuple[tuple[int, ...], ...]:
    node = _assigned(src, fn, "truncation_levels")
    levels = _literal(src, node, f"{fn.name}(): truncation_levels")
    ok = isinstance(levels, list | tuple) and levels and all(
        isinstance(lv, tuple) and len(lv) == width and all(isinstance(x, int) and x >= 0 for x in lv)
        for lv in levels)
    if not ok:
        raise UpstreamError(src.path, node.lineno,
                            f"truncation_levels must be a list of {width}-tuples of non-negative ints")
    return tuple(tuple(lv) for lv in levels)


def read_checkout(root: str | Path) -> UpstreamProtocol:
    """Parse a UXBench checkout; raises ``UpstreamError`` naming the first file/name it cannot read."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise UpstreamError(root, None, "no such folder")
    hashes: dict[str, str] = {}
    prompts = _parse(root, PROMPTS_FILE, hashes)
    client = _parse(root, CLIENT_FILE, hashes)
    run_eval = _parse(root, RUN_EVAL_FILE, hashes)
    defaults = _defaults(client, _function(client, "call_llm"))

    def call(fn_name: str) -> CallSettings:
        given = _call_keywords(run_eval, _function(run_eval, fn_name), "call_llm")
        return _settings(run_eval, {**defaults, **given}, f"{fn_name}() -> call_llm settings")

    grm_templates: dict[str, str] = {}
    grm_call: dict[str, CallSettings] = {}
    truncation: dict[str, tuple[tuple[int, ...], ...]] = {}
    for task, rel in GRM_FILES.items():
        src = _parse(root, rel, hashes)
        grm_templates[task] = _template(src, "POINTWISE_GRM_TEMPLATE", GRM_FIELDS)
        grm_fn = _function(src, "call_pointwise_grm")
        payload_node = _assigned(src, grm_fn, "payload")
        payload = _literal_dict_entries(src, payload_node, "call_pointwise_grm(): payload")
        grm_call[task] = _settings(src, payload, "call_pointwise_grm(): payload", logprobs=True)
        truncation[task] = _ladder(src, _function(src, "judge_one"), 2 if task == "eval" else 3)
    return UpstreamProtocol(
        root=root.resolve(), t1_template=_template(prompts, "POINTWISE_GRM", T1_FIELDS),
        t1_call=call("_judge_task1"),
        generation={"eval": call("_generate_task2"), "recovery": call("_generate_task3")},
        grm_templates=grm_templates, grm_call=grm_call, truncation=truncation, file_hashes=hashes)
