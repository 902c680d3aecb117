"""A tiny OpenAI-compatible server for unit tests and benchmarks (stdlib only, one thread per request).

    .venv/bin/python -m benchmarks._openai_fake [--port 8311] [--no-record]

Run as a module it serves until killed, in its own process, printing its URL first (the harness
ceiling benchmark measures uxlocal against it, so the server's CPU and memory are not counted
as uxlocal's); ``--no-record`` keeps no log of requests, so its memory stays flat.

It answers like vLLM's server: ``/v1/models`` (``owned_by: vllm``), ``/v1/chat/completions`` with
``structured_outputs`` (choice: the first label, with top logprobs over all labels; json: a minimal
instance of the schema) and ``/v1/completions`` (a list of prompts: one choice per prompt, as
vLLM answers; ``--tokenizer`` gives label token ids). Tests script failures (``fail_next``), slowness
(``delay_s``) and death (``stop``/``start`` on the same port) and read what it saw. With ``api_key``
it answers 401 to any request without ``Authorization: Bearer KEY``, as ``vllm serve --api-key``
does, and ``leak_key_in_errors=N`` makes its first N chat answers a 400 that echoes that header
(a careless gateway).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Hook = Callable[[str, dict[str, Any]], tuple[int, Any] | None]


def minimal_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """Return a small value valid for simple JSON schemas (objects, enums, bools, bounded ints, strings)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return minimal_instance(defs[schema["$ref"].split("/")[-1]], defs)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: minimal_instance(v, defs) for k, v in props.items()}
    if kind == "boolean":
        return True
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 0.5))
    if kind == "array":
        return []
    return "ok"


class _QuietServer(ThreadingHTTPServer):
    """The fake's threading server, for which a client that goes away is no error.

    Its settings live on this class, not on the stdlib's, which every other server in the process
    shares. Clients reset idle keep-alive connections when they close (and tests cancel requests on
    purpose). The stock server prints a traceback from its handler thread each time, and on
    Python 3.11 formatting a traceback calls ``ast.parse`` (to place the ``^^^`` marks): the
    AST converter's recursion counter is shared by all threads, so a test parsing code on the
    main thread at that moment failed with "AST constructor recursion depth mismatch".
    """

    allow_reuse_address = True
    request_queue_size = 1024  # as uvicorn: a burst of 64+ connects is not refused
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeOpenAI:
    """Start with ``FakeOpenAI().start()``; ``url`` is the base (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, served: str = "fake-model", *, port: int = 0,
                 choice_probs: tuple[float, ...] = (0.7, 0.3),
                 delay_s: float = 0.0, owned_by: str = "vllm", api_key: str | None = None,
                 leak_key_in_errors: int = 0, record: bool = True,
                 token_ids: Callable[[str], list[int]] | None = None) -> None:
        self.served = served
        self.port = port
        self.choice_probs = choice_probs
        self.delay_s = delay_s
        self.owned_by = owned_by
        self.api_key = api_key
        self.leak_key_in_errors = leak_key_in_errors
        self.record = record
        """Keep every request and ``Authorization`` header (tests read them); off for long benchmarks."""
        self.token_ids = token_ids
        """A label's token ids (the served model's tokenizer), for ``return_tokens_as_token_ids``."""
        self.authorizations: list[str | None] = []
        """The ``Authorization`` header of every request, in order."""
        self.hook: Hook | None = None
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._failures: list[int] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chats(self) -> list[dict[str, Any]]:
        return [body for path, body in self.requests if path.endswith("/chat/completions")]

    def fail_next(self, n: int, status: int = 500) -> None:
        """Make the next ``n`` POSTs answer ``status`` (``0`` = drop the connection without an answer)."""
        with self._lock:
            self._failures.extend([status] * n)

    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms ACK stall

            def log_message(self, *args: Any) -> None:
                pass

            def _refused(self) -> bool:
                """Answer 401 when a key is required and this request lacks it."""
                received = self.headers.get("authorization")
                with fake._lock:
                    if fake.record:
                        fake.authorizations.append(received)
                if fake.api_key is None or received == f"Bearer {fake.api_key}":
                    return False
                self._send(401, {"error": {"message": "Unauthorized"}})
                return True

            def _leaked(self) -> bool:
                """Answer 400 echoing the Authorization header, for the first ``leak_key_in_errors`` chats."""
                with fake._lock:
                    leak = fake.leak_key_in_errors > 0 and self.path.endswith("/chat/completions")
                    fake.leak_key_in_errors -= int(leak)
                if leak:
                    echoed = self.headers.get("authorization")
                    self._send(400, {"error": {"message": f"rejected request with Authorization: {echoed}"}})
                return leak

            def do_GET(self) -> None:  # noqa: N802
                if self._refused():
                    return
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": fake.served, "object": "model", "owned_by": fake.owned_by,
                         "max_model_len": 2048}]})
                else:
                    self._send(404, {"error": {"message": "no such route"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self._refused() or self._leaked():
                    return
                with fake._lock:
                    if fake.record:
                        fake.requests.append((self.path, body))
                    status = fake._failures.pop(0) if fake._failures else None
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if fake.delay_s:
                        time.sleep(fake.delay_s)
                    if status == 0:
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    if status is not None:
                        self._send(status, {"error": {"message": f"scripted {status}"}})
                        return
                    scripted = fake.hook(self.path, body) if fake.hook else None
                    self._send(*(scripted or fake.answer(self.path, body)))
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = _QuietServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer ``/v1/completions`` as vLLM does.

        A list of prompts (token-id lists or strings) gets one choice per prompt, in order, each
        with its ``index``; logprobs in the completions shape
        (``tokens``, ``token_logprobs``, ``top_logprobs`` as ``{token: logprob}``). With a choice
        constraint the text is the first label; otherwise one token ``x`` with no alternatives.
        """
        prompt = body.get("prompt")
        listed = isinstance(prompt, list) and prompt and isinstance(prompt[0], (list, str))
        prompts = prompt if listed else [prompt]
        labels = (body.get("structured_outputs") or {}).get("choice")
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        choices = [{"index": k, **self._completion_choice(labels, as_ids)} for k in range(len(prompts))]
        return {"object": "text_completion", "choices": choices,
                "usage": {"prompt_tokens": sum(len(p) for p in prompts), "completion_tokens": len(prompts)}}

    def _completion_choice(self, labels: list[str] | None, as_ids: bool) -> dict[str, Any]:
        if not labels:
            return {"text": "x", "finish_reason": "length", "logprobs": {"top_logprobs": [{}]}}
        tokens = [self._tokens(label, as_ids) for label in labels]
        probs = list(self.choice_probs) + [0.0] * len(labels)
        first = {t[0]: (math.log(p) if p > 0 else -9999.0) for t, p in zip(tokens, probs, strict=False)}
        path = tokens[0]
        tops = [first] + [{token: 0.0} for token in path[1:]]
        return {"text": labels[0], "finish_reason": "stop",
                "logprobs": {"tokens": path,
                             "token_logprobs": [top[t] for top, t in zip(tops, path, strict=False)],
                             "top_logprobs": tops}}

    def _tokens(self, label: str, as_ids: bool) -> list[str]:
        """Return a label's tokens as the client reads them.

        ``token_id:N`` from ``token_ids`` when asked for ids (the client's tokenizer must be the
        same), else the label as one token.
        """
        if as_ids and self.token_ids is not None:
            return [f"token_id:{i}" for i in self.token_ids(label)]
        return [label]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """Answer as a healthy vLLM server does by default."""
        if body.get("model") != self.served:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
        if path.endswith("/completions") and not path.endswith("/chat/completions"):
            return 200, self.completions(body)
        structured = body.get("structured_outputs") or {}
        last = str(body["messages"][-1].get("content", ""))
        logprobs = None
        if "choice" in structured:
            labels = structured["choice"]
            probs = list(self.choice_probs) + [0.0] * len(labels)
            alternatives = [{"token": lb, "logprob": math.log(p) if p > 0 else -9999.0,
                             "bytes": list(lb.encode())} for lb, p in zip(labels, probs, strict=False)]
            text = labels[0]
            logprobs = {"content": [{**alternatives[0], "top_logprobs": alternatives},
                                    {"token": "<|im_end|>", "logprob": 0.0, "bytes": list(b"<|im_end|>"),
                                     "top_logprobs": []}]}
        elif "json" in structured:
            text = json.dumps(minimal_instance(structured["json"]))
        else:
            text = f"reply to {last[:24]}"
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": "stop", "logprobs": logprobs}
        usage = {"prompt_tokens": len(last.split()) + 5, "completion_tokens": max(1, len(text.split()))}
        return 200, {"id": "x", "object": "chat.completion", "choices": [choice], "usage": usage}


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Where to listen and whether to keep a log of requests."""
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    p.add_argument("--served", default="fake-model", help="the served model name (default fake-model)")
    p.add_argument("--no-record", dest="record", action="store_false", help="keep no log of requests")
    p.add_argument("--tokenizer", default=None, help="a folder with tokenizer.json: label token ids for "
                   "/completions answers with return_tokens_as_token_ids")


def main(args: argparse.Namespace) -> None:
    """Serve until killed; the first line printed is the base URL."""
    token_ids = None
    if args.tokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(f"{args.tokenizer}/tokenizer.json")
        token_ids = lambda label: list(tokenizer.encode(label, add_special_tokens=False).ids)  # noqa: E731
    fake = FakeOpenAI(args.served, port=args.port, record=args.record, token_ids=token_ids).start()
    print(fake.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    from benchmarks._common import cli_parser

    main(cli_parser(__doc__, add_cli_args).parse_args())
