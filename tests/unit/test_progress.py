"""Progress off a terminal: one line every N seconds with done/total, rate and time left."""

from __future__ import annotations

import io

from uxlocal.progress import Progress, progress_line


def test_progress_line_gives_share_rate_and_time_left() -> None:
    line = progress_line("judge", 1_200, 10_000, 3.0, requests=2_400)
    assert line == "judge: 1,200/10,000 (12.0%)  400.0/s  22s left  2,400 requests  3s elapsed"
    assert "total unknown" in progress_line("judge", 5, None, 1.0)
    assert "time left unknown" in progress_line("judge", 0, 10, 0.0)


def test_progress_writes_lines_not_a_bar_when_output_is_not_a_terminal() -> None:
    out = io.StringIO()
    with Progress(True, 100, "judge", stream=out, every_s=0.0) as bar:
        for done in (10, 20, 30):
            bar.update(done, done, 0, done / 10)
    lines = out.getvalue().splitlines()
    assert len(lines) == 4  # one per update (every_s 0) and the last figures at the end
    assert lines[0].startswith("judge: 10/100 (10.0%)  10.0/s  9s left")
    assert lines[-1].startswith("judge: 30/100 (30.0%)")
    assert "\r" not in out.getvalue()


def test_progress_waits_every_s_between_lines_and_is_silent_when_disabled() -> None:
    out = io.StringIO()
    with Progress(True, 100, "judge", stream=out, every_s=3600.0) as bar:
        for done in range(1, 50):
            bar.update(done, done, 0, 1.0)
    assert out.getvalue().splitlines() == [progress_line("judge", 49, 100, 1.0, 49)]
    silent = io.StringIO()
    with Progress(False, 100, "judge", stream=silent, every_s=0.0) as bar:
        bar.update(5, 5, 0, 1.0)
    assert silent.getvalue() == ""
