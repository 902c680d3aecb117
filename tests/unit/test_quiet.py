"""``quiet_libraries``: library output at any level lands in the log, uxlocal's own lines on the terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import os, sys, warnings
from pathlib import Path
from uxlocal.quiet import quiet_libraries, terminal

print("before", flush=True)
with quiet_libraries(Path(sys.argv[1]), title="probe") as screen:
    assert terminal() is screen
    os.write(1, b"c-level stdout note\\n")
    os.write(2, b"c-level stderr note\\n")
    print("python print from a library")
    warnings.warn("a library warning")
    print("ours", file=screen)
assert terminal() is None
print("after", flush=True)
"""


def test_quiet_libraries_sends_fd_output_to_the_log_and_keeps_ours_on_screen(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "demo.log"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["before", "ours", "after"] and done.stderr == ""
    text = log.read_text()
    for line in ("=== probe ", "c-level stdout note", "c-level stderr note", "python print from a library",
                 "a library warning"):
        assert line in text, line
    assert "ours" not in text
