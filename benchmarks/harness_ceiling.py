"""The harness ceiling: how fast uxlocal itself goes when the engine costs nothing (issue 32).

    .venv/bin/python -m benchmarks.harness_ceiling [--sizes 10000,100000,1000000]
        [--arms inproc,inproc8,http,http1,default,tau2] [--profile-size 20000] [--default-size 20000]

Every arm runs in its own child process (clean peak RSS, no warm caches shared between arms):

- ``inproc``: ``uxlocal judge`` (rubric ``ux-liked``, human column ``thumb``) of N synthetic
  two-message conversations through ``run_suite``, with an engine that answers every label
  request at once with label probabilities (``instant_judge``);
- ``inproc8``: the same with a label rubric of 8 criteria (8 verdicts per conversation);
- ``http``: the same as ``inproc`` through the openai-http backend against the tests' instant
  OpenAI-compatible server (``benchmarks/_openai_fake.py``), itself in a third process, with a
  local tokenizer folder (a small byte-level BPE, ``write_tokenizer``) so label requests go
  ``HTTP_BATCH`` token-id prompts per ``/completions`` request (``batch_prompts``);
- ``http1``: the same, one chat request per verdict (no local tokenizer: the default);
- ``default``: what a new user runs (issue 45): ``uxlocal judge`` of ``--default-size`` conversations
  (20,000) as a command in its own process, against the same server, with no local tokenizer and
  every option at its default (a bare ``URL#name`` model spec, the report with its 1,000 bootstrap
  resamples); timed from launch to exit, so start-up counts. Peak RSS and CPU seconds are the
  command's own (``wait4``);
- ``tau2``: retail and telecom tasks played by scripted seats (each gold action called on the live
  environment with a sync after it, then the reward), repeated to about N/10 agent steps: steps/s.

Printed per arm and size: throughput while judging (verdicts up to the last stored one) and end
to end (start, judging and the agreement report), peak RSS of the child, the store's size on
disk, the time to the first stored verdict (for ``http`` also the fake server's CPU seconds per
second of judging: near one, the server is the limit), then per arm the ratio of the largest
size's throughput to the smallest's (how cost grows with the job) and of their peak RSS, and the
top 10 functions by own time (cProfile) of the ``inproc`` arm at ``--profile-size`` (a separate
child: the profiler slows what it measures).
Goals (issue 32, this 2-core CPU): inproc >= 2,000 verdicts/s at 100k and 1M within 20 % of 10k;
peak RSS at 1M <= 1.5 GB and <= 1.2x the 100k arm's; http >= 1,000 verdicts/s; tau2 retail >= 500
steps/s; issue 45: default >= 1,000 verdicts/s end to end.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import REPO, cli_parser, module_command, report
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine, Scripted
from uxlocal.grammar import Choice

ARMS = ("inproc", "inproc8", "http", "http1", "default", "tau2")
HTTP_BATCH = 64
"""Label prompts per ``/completions`` request in the ``http`` arm (``HttpOptions.batch_prompts``)."""
SERVED = "fake-model"


def instant_answer(prepared: PreparedRequest) -> Scripted:
    """Answer as a judge that costs nothing: label probabilities from the request hash.

    A JSON request gets an empty object.
    """
    constraint = prepared.request.constraint
    if not isinstance(constraint, Choice):
        return "{}"
    p = 0.2 + 0.6 * (int(prepared.request_hash[:4], 16) / 0xFFFF)
    labels = constraint.labels
    probs = {label: (p if k == 0 else (1 - p) / max(1, len(labels) - 1)) for k, label in enumerate(labels)}
    return {"text": max(probs, key=probs.__getitem__), "label_probs": probs}


def instant_judge() -> FakeEngine:
    """Return the in-process arm's engine: ``instant_answer`` for every request, nothing recorded."""
    return FakeEngine(instant_answer, identity="instant-judge", record=False)


# ---------------------------------------------------------------- inputs


def write_conversations(path: Path, n: int) -> None:
    """N two-message conversations (about 0.3 KB a line) with a human thumb, written in 10k chunks."""
    with path.open("w", encoding="utf-8") as handle:
        for start in range(0, n, 10_000):
            lines = []
            for i in range(start, min(n, start + 10_000)):
                chat = [{"role": "user", "content": f"Question {i}: my order {i * 7 % 9973} has not arrived, "
                                                    "what can I do about it this week?"},
                        {"role": "assistant",
                         "content": f"Sorry about order {i * 7 % 9973}. I have asked the "
                                                         "courier and will write back within two days."}]
                lines.append(json.dumps({"id": f"c{i}", "conversation": chat,
                                         "thumb": "liked" if i % 3 else "disliked"}) + "\n")
            handle.write("".join(lines))


def write_tokenizer(folder: Path) -> Path:
    """Write a tokenizer folder without weights, as an openai-http preset's ``path``.

    A byte-level BPE trained on the synthetic conversations, ChatML template; the fake server reads
    the same file.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder.mkdir(parents=True, exist_ok=True)
    sample = folder / "sample.jsonl"
    write_conversations(sample, 2_000)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=4_000,
                                  special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(sample.read_text(encoding="utf-8").splitlines(), trainer)
    sample.unlink()
    tokenizer.save(str(folder / "tokenizer.json"))
    template = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
                "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    config = {"chat_template": template, "eos_token": "<|im_end|>", "bos_token": None,
              "pad_token": "<|endoftext|>", "tokenizer_class": "PreTrainedTokenizerFast"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    return folder


def write_rubric(path: Path, criteria: int) -> None:
    """Write a binary label rubric (liked/disliked) with ``criteria`` criteria."""
    lines = ['name = "bench-labels"', 'kind = "label"', 'question = "Did the user like the reply?"',
             'positive = "liked"', "[[labels]]", 'name = "liked"', 'description = "the reply helped"',
             "[[labels]]", 'name = "disliked"', 'description = "the reply did not help"']
    for c in range(criteria):
        lines += ["[[criteria]]", f'name = "c{c}"', f'question = "Aspect {c}: did the reply get this right?"']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- one arm (in the child)


def _watch_first_verdict() -> dict[str, float]:
    """Record when the store writer first and last commits a batch holding verdict rows."""
    from uxlocal.store.writer import StoreWriter

    seen: dict[str, float] = {}
    original = StoreWriter._commit

    def commit(self: StoreWriter, batch: list[tuple[str, Any, int, bool]], statements: list[Any]) -> None:
        original(self, batch, statements)
        if any(entry[0] == "verdicts" for entry in batch):
            seen.setdefault("first", time.perf_counter())
            seen["last"] = time.perf_counter()

    StoreWriter._commit = commit  # type: ignore[method-assign]
    return seen


def judge_arm(arm: str, size: int, folder: Path, url: str | None,
              tokenizer: str | None = None) -> dict[str, Any]:
    """Run one ``uxlocal judge`` job of ``size`` conversations; its figures."""
    from uxlocal.config import RunConfig
    from uxlocal.engine.pool import ModelPool
    from uxlocal.runner import run_suite

    source = folder / "chats.jsonl"
    write_conversations(source, size)
    rubric = "ux-liked"
    if arm == "inproc8":
        write_rubric(folder / "eight.toml", 8)
        rubric = str(folder / "eight.toml")
    options = {"input": str(source), "rubric": rubric, "human_col": "thumb", "bootstrap": 20}
    db = folder / "judge.duckdb"
    if url is None:
        pool = ModelPool.from_engines({"judge": instant_judge()})
        models: dict[str, str] = {}
    else:
        batched = (f'path = "{tokenizer}"\n[engine_args]\nbatch_prompts = {HTTP_BATCH}\n'
                   if arm == "http" else "")
        (folder / "srv.toml").write_text(f'name = "srv"\nbackend = "openai-http"\nendpoints = ["{url}"]\n'
                                         f'served_model = "{SERVED}"\n' + batched, encoding="utf-8")
        os.environ["UXLOCAL_PRESETS"] = str(folder)
        pool, models = None, {"judge": "srv"}
    seen = _watch_first_verdict()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    result = run_suite(RunConfig(suite="judge", suite_config=options, models=models, db=str(db),
                                 progress=False, max_batch=1024, max_live=4096), pool=pool)
    wall = time.perf_counter() - started
    verdicts = result.stats.requests
    judging = seen.get("last", started + wall) - started
    return {"wall_s": wall, "verdicts": verdicts, "rate": verdicts / judging, "end_to_end": verdicts / wall,
            "judging_s": judging, "unit": "verdicts/s",
            "failed": result.stats.episodes_failed, "store_mb": _size_mb(db),
            "first_s": seen.get("first", float("nan")) - started, "rss_before_mb": rss_before}


def tau2_arm(size: int) -> dict[str, Any]:
    """Scripted gold seats on retail and telecom tasks until about ``size / 10`` agent steps each."""
    from uxlocal.tau2.env import Environment
    from uxlocal.tau2.registry import load_domain
    from uxlocal.tau2.replay import scripted_trajectory
    from uxlocal.tau2.reward import score_episode
    from uxlocal.tau2.tasks import load_tasks
    from uxlocal.tau2.termination import USER_STOP

    data = REPO.parent / "shared" / "data" / "tau2"
    if not data.is_dir():
        return {"skipped": f"no tau2 data at {data}"}
    figures: dict[str, Any] = {"unit": "steps/s"}
    for name in ("retail", "telecom"):
        domain = load_domain(data, name)
        tasks = [t for t in load_tasks(data, name) if t.evaluation_criteria and t.evaluation_criteria.actions]
        steps, episodes, started = 0, 0, time.perf_counter()
        while steps < max(200, size // 10):
            task = tasks[episodes % len(tasks)]
            env = Environment.for_task(domain, task)
            messages = scripted_trajectory(env, task, "gold")
            score_episode(domain, task, messages, USER_STOP)
            steps += sum(1 for m in messages if m.role == "assistant")
            episodes += 1
        wall = time.perf_counter() - started
        figures[name] = {"steps": steps, "episodes": episodes, "wall_s": wall, "rate": steps / wall}
    figures["rate"] = figures["retail"]["rate"]
    figures["wall_s"] = figures["retail"]["wall_s"] + figures["telecom"]["wall_s"]
    return figures


def default_arm(size: int, url: str, server_pid: int) -> dict[str, Any]:
    """``uxlocal judge`` as a user types it, in its own process, timed from launch to exit."""
    import duckdb

    with tempfile.TemporaryDirectory() as tmp:
        source, db = Path(tmp) / "chats.jsonl", Path(tmp) / "judge.duckdb"
        write_conversations(source, size)
        command = module_command("uxlocal.cli", "judge", str(source), "--human-col", "thumb",
                                 "-m", f"judge={url}#{SERVED}", "--db", str(db))
        cpu_before = process_cpu_s(server_pid)
        started = time.perf_counter()
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        server_cpu = process_cpu_s(server_pid) - cpu_before
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            tail = proc.stderr.read()[-2000:] if proc.stderr else b""
            raise RuntimeError(f"uxlocal judge failed (exit {proc.returncode}):\n{tail!r}")
        with duckdb.connect(str(db), read_only=True) as con:
            (verdicts,) = con.execute("SELECT count(*) FROM verdicts").fetchone() or (0,)
        return {"wall_s": wall, "verdicts": verdicts, "end_to_end": verdicts / wall, "rate": verdicts / wall,
                "peak_rss_mb": usage.ru_maxrss / 1024, "client_cpu_s": usage.ru_utime + usage.ru_stime,
                "server_cpu_s": server_cpu, "unit": "verdicts/s", "store_mb": _size_mb(db)}


def _size_mb(db: Path) -> float:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 1e6


def child(args: argparse.Namespace) -> None:
    """Run one arm at one size in this process and write its figures as JSON (``--json``)."""
    with tempfile.TemporaryDirectory() as tmp:
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        if args.child == "tau2":
            figures = tau2_arm(args.size)
        else:
            figures = judge_arm(args.child, args.size, Path(tmp), args.url, args.tokenizer)
        if profiler:
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(10)
            figures["profile"] = out.getvalue()
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(args.json_out).write_text(json.dumps(figures, default=str), encoding="utf-8")


# ---------------------------------------------------------------- the parent


def run_child(arm: str, size: int, *, url: str | None = None, tokenizer: str | None = None,
              profile: bool = False) -> dict[str, Any]:
    """One arm at one size in a fresh child; its figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "arm.json"
        argv = ["--child", arm, "--size", str(size), "--json", str(out)] + (["--url", url] if url else [])
        argv += ["--tokenizer", tokenizer] if tokenizer else []
        argv += ["--profile"] if profile else []
        done = subprocess.run(module_command("benchmarks.harness_ceiling", *argv),
                              cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(f"arm {arm} at {size} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        return dict(json.loads(out.read_text(encoding="utf-8")))


def _measured(arm: str, size: int, server: subprocess.Popen[str] | None, url: str | None,
              tokenizer: str | None) -> dict[str, Any]:
    """One arm's figures; for the http arms also the CPU seconds the fake server used meanwhile."""
    if arm == "default" and server is not None and url is not None:
        return default_arm(size, url, server.pid)
    if not arm.startswith("http") or server is None:
        return run_child(arm, size)
    before = process_cpu_s(server.pid)
    figures = run_child(arm, size, url=url, tokenizer=tokenizer)
    figures["server_cpu_s"] = process_cpu_s(server.pid) - before
    return figures


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid``, threads that ended included (``/proc/PID/stat``).

    The fake server starts a thread per connection; per-thread counters vanish with the thread.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(tokenizer: str) -> tuple[subprocess.Popen[str], str]:
    """Start the instant OpenAI-compatible server in its own process; (process, base URL)."""
    proc = subprocess.Popen(module_command("benchmarks._openai_fake", "--no-record", "--served", SERVED,
                                           "--tokenizer", tokenizer),
                            cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model``, unused here, and ``--json``)."""
    p.add_argument("--sizes", default="10000,100000,1000000", help="conversations per judge arm (comma list)")
    p.add_argument("--arms", default=",".join(ARMS), help=f"which arms (comma list of {', '.join(ARMS)})")
    p.add_argument("--profile-size", type=int, default=20_000,
                   help="size of the profiled inproc run (0: none)")
    p.add_argument("--default-size", type=int, default=20_000, help="conversations of the default arm")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--url", default=None, help=argparse.SUPPRESS)
    p.add_argument("--tokenizer", default=None, help=argparse.SUPPRESS)
    p.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)


def _rows(arm: str, size: int, fig: dict[str, Any]) -> list[tuple[str, Any]]:
    if "skipped" in fig:
        return [(f"{arm} {size:,}: skipped", fig["skipped"])]
    if arm == "default":
        return [(f"default {size:,}: verdicts/s end to end (with start-up)", fig["end_to_end"]),
                (f"default {size:,}: wall (s)", fig["wall_s"]),
                (f"default {size:,}: peak RSS (MB)", fig["peak_rss_mb"]),
                (f"default {size:,}: uxlocal CPU (s)", fig["client_cpu_s"]),
                (f"default {size:,}: fake server CPU (s)", fig["server_cpu_s"])]
    if arm == "tau2":
        return [(f"tau2 retail: steps/s ({fig['retail']['steps']:,} steps)", fig["retail"]["rate"]),
                (f"tau2 telecom: steps/s ({fig['telecom']['steps']:,} steps)", fig["telecom"]["rate"]),
                ("tau2: peak RSS (MB)", fig["peak_rss_mb"])]
    rows = [(f"{arm} {size:,}: verdicts/s judging (to last stored)", fig["rate"]),
            (f"{arm} {size:,}: verdicts/s end to end (with report)", fig["end_to_end"]),
            (f"{arm} {size:,}: wall (s)", fig["wall_s"]),
            (f"{arm} {size:,}: peak RSS (MB)", fig["peak_rss_mb"]),
            (f"{arm} {size:,}: store (MB)", fig["store_mb"]),
            (f"{arm} {size:,}: first stored verdict (s)", fig["first_s"]),
            (f"{arm} {size:,}: failed episodes", fig["failed"])]
    if "server_cpu_s" in fig:
        rows.append((f"{arm} {size:,}: fake server CPU / judging wall",
                     fig["server_cpu_s"] / fig["judging_s"]))
    return rows


def main(args: argparse.Namespace) -> None:
    """Run the arms (or, with ``--child``, one arm in this process) and print the block."""
    if args.child:
        child(args)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    rows: list[tuple[str, Any]] = []
    load_at_start = os.getloadavg()[0]
    scratch = tempfile.TemporaryDirectory()
    tokenizer = str(write_tokenizer(Path(scratch.name) / "tokenizer"))
    server, url = (start_server(tokenizer) if any(a.startswith("http") or a == "default" for a in arms)
                   else (None, None))
    try:
        for arm in arms:
            own = {"tau2": sizes[-1:], "default": [args.default_size]}
            figures = {size: _measured(arm, size, server, url, tokenizer) for size in own.get(arm, sizes)}
            for size, fig in figures.items():
                rows += _rows(arm, size, fig)
            if len(figures) > 1:
                first, last = figures[sizes[0]], figures[sizes[-1]]
                rows.append((f"{arm}: rate {sizes[-1]:,} / {sizes[0]:,}", last["rate"] / first["rate"]))
                rows.append((f"{arm}: peak RSS {sizes[-1]:,} / {sizes[-2]:,}",
                             last["peak_rss_mb"] / figures[sizes[-2]]["peak_rss_mb"]))
    finally:
        if server is not None:
            server.kill()
            server.wait()
        scratch.cleanup()
    config = {"sizes": args.sizes, "arms": ",".join(arms), "cpus": os.cpu_count(),
              "load average at start / end": f"{load_at_start:.1f} / {os.getloadavg()[0]:.1f}"}
    report("uxlocal harness ceiling (instant engines)", config, rows, args.json_out)
    if args.profile_size and "inproc" in arms:
        profiled = run_child("inproc", args.profile_size, profile=True)
        print(f"top 10 functions by own time, inproc at {args.profile_size:,} conversations (cProfile):")
        print(profiled["profile"])


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
