"""CPU tuning (issue 19): which libraries the CLI preloads, the re-exec, benchmark arms, the stored record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from uxlocal import cpu_tuning, doctor

FAKE = {"tcmalloc": "/usr/local/lib/x/libtcmalloc_minimal.so.4", "iomp": "/usr/local/lib/x/libiomp5.so"}


@pytest.fixture
def fake_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_tuning, "find_library", FAKE.get)
    monkeypatch.setattr("uxlocal.settings.has_cuda_device", lambda: False)


def test_preload_wanted_lists_found_libraries_when_on_cpu(fake_libraries: None) -> None:
    wanted = cpu_tuning.preload_wanted({})
    assert wanted == [FAKE[k] for k in cpu_tuning.PRELOAD_KINDS]


@pytest.mark.parametrize("env", [
    {"UXLOCAL_NO_PRELOAD": "1"},  # the user turned it off
    {"UXLOCAL_PRELOAD_DONE": "1"},  # already re-executed once: never loop
])
def test_preload_wanted_is_empty_when_off_or_done(fake_libraries: None, env: dict[str, str]) -> None:
    assert cpu_tuning.preload_wanted(env) == []


def test_preload_wanted_is_empty_when_a_gpu_is_present(
    fake_libraries: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("uxlocal.settings.has_cuda_device", lambda: True)
    assert cpu_tuning.preload_wanted({}) == []


def test_preload_wanted_skips_a_library_already_preloaded(fake_libraries: None) -> None:
    wanted = cpu_tuning.preload_wanted({"LD_PRELOAD": "/usr/lib/libtcmalloc.so.4"})
    assert all("tcmalloc" not in path for path in wanted)


def test_with_preload_puts_paths_first_and_keeps_others_once() -> None:
    env = cpu_tuning.with_preload(
        {"LD_PRELOAD": "/a/liby.so:/usr/local/lib/x/libiomp5.so", "K": "v"}, ["/usr/local/lib/x/libiomp5.so"]
    )
    assert env == {"LD_PRELOAD": "/usr/local/lib/x/libiomp5.so:/a/liby.so", "K": "v"}


def test_reexec_execs_the_same_command_with_ld_preload(
    fake_libraries: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, list[str], dict[str, str]]] = []
    monkeypatch.setattr(os, "execve", lambda exe, argv, env: calls.append((exe, argv, env)))
    monkeypatch.setattr(sys, "orig_argv", ["python", "-m", "uxlocal.cli", "doctor"])
    monkeypatch.delenv("UXLOCAL_NO_PRELOAD", raising=False)
    monkeypatch.delenv("UXLOCAL_PRELOAD_DONE", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    cpu_tuning.reexec_with_preload()
    assert len(calls) == 1
    exe, argv, env = calls[0]
    assert exe == sys.executable and argv == [sys.executable, "-m", "uxlocal.cli", "doctor"]
    assert env["LD_PRELOAD"].split(":") == [FAKE[k] for k in cpu_tuning.PRELOAD_KINDS]
    assert env["UXLOCAL_PRELOAD_DONE"] == "1"


def test_reexec_does_nothing_when_opted_out(fake_libraries: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "execve", lambda *a: pytest.fail("must not re-exec"))
    monkeypatch.setenv("UXLOCAL_NO_PRELOAD", "1")
    cpu_tuning.reexec_with_preload()


def test_reexec_preloads_the_real_libraries_in_a_child_process(tmp_path: Path) -> None:
    if not cpu_tuning.preload_paths():
        pytest.skip(
            "neither tcmalloc nor Intel OpenMP is installed here (.ci/setup installs tcmalloc as root)"
        )
    code = ("from uxlocal.cpu_tuning import reexec_with_preload, preloaded_libraries; reexec_with_preload(); "
            "import json; print(json.dumps(preloaded_libraries()))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "UXLOCAL_NO_PRELOAD", "UXLOCAL_PRELOAD_DONE", "CUDA_VISIBLE_DEVICES")}
    env["PYTHONPATH"] = str(Path(cpu_tuning.__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    for kind in cpu_tuning.PRELOAD_KINDS:
        assert loaded[kind] == (cpu_tuning.find_library(kind) is not None)
    off = subprocess.run([sys.executable, "-c", code], env={**env, "UXLOCAL_NO_PRELOAD": "1"},
                         capture_output=True, text=True, timeout=60)
    assert json.loads(off.stdout.strip().splitlines()[-1]) == {k: False for k in cpu_tuning.LIBRARY_PATTERNS}


def test_arm_settings_before_is_the_pre_issue_baseline() -> None:
    env, args = cpu_tuning.arm_settings("before")
    assert env == {"VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_CPU_KVCACHE_SPACE": "1"}
    assert args == {"enforce_eager": True, "max_num_batched_tokens": 8192, "block_size": 128}


def test_arm_settings_combine_changes_on_top_of_before(fake_libraries: None) -> None:
    env, args = cpu_tuning.arm_settings("tcmalloc+compile+kv4")
    assert env["LD_PRELOAD"] == FAKE["tcmalloc"] and env["VLLM_CPU_KVCACHE_SPACE"] == "4"
    assert args["enforce_eager"] is False and args["max_num_batched_tokens"] == 8192
    assert cpu_tuning.arm_settings("block32")[1]["block_size"] == 32
    bind_env, _ = cpu_tuning.arm_settings("bind")
    assert bind_env["OMP_PROC_BIND"] == "close"
    assert bind_env["OMP_NUM_THREADS"] == str(len(os.sched_getaffinity(0)))


def test_thp_arm_asks_pytorch_for_huge_pages_and_arms_do_not_inherit_it() -> None:
    env, args = cpu_tuning.arm_settings("thp")
    assert env[cpu_tuning.THP_ENV] == "1" and args == cpu_tuning.arm_settings("before")[1]
    assert cpu_tuning.THP_ENV not in cpu_tuning.arm_settings("before")[0]
    assert cpu_tuning.THP_ENV in cpu_tuning.UNSET_FOR_ARMS


def test_openmp_spin_arms_set_intel_openmp_variables_only_when_asked() -> None:
    env, _ = cpu_tuning.arm_settings("blocktime5+notpause")
    assert env["KMP_BLOCKTIME"] == "5" and env["KMP_TPAUSE"] == "0"
    assert not {"KMP_BLOCKTIME", "KMP_TPAUSE"} & set(cpu_tuning.arm_settings("uxlocal")[0])
    assert {"KMP_BLOCKTIME", "KMP_TPAUSE"} <= set(cpu_tuning.UNSET_FOR_ARMS)
    with pytest.raises(ValueError, match="unknown arm change 'blocktime'"):
        cpu_tuning.arm_settings("blocktime")


def test_cppwrap_arm_turns_on_inductors_cpp_wrapper_on_top_of_compile() -> None:
    _, args = cpu_tuning.arm_settings("compile+cppwrap")
    assert args["enforce_eager"] is False
    assert args["compilation_config"] == {"inductor_compile_config": {"cpp_wrapper": True}}
    assert "compilation_config" not in cpu_tuning.arm_settings("compile")[1]


def test_huge_page_mib_reads_anon_huge_pages(tmp_path: Path) -> None:
    rollup = tmp_path / "smaps_rollup"
    rollup.write_text("Rss:              900000 kB\nAnonHugePages:    6144 kB\nShmemPmdMapped:        0 kB\n")
    assert cpu_tuning.huge_page_mib(rollup) == 6.0
    assert cpu_tuning.huge_page_mib(tmp_path / "missing") == 0.0
    assert cpu_tuning.huge_page_mib() >= 0.0  # this process, on any kernel


def test_arm_settings_raise_for_an_unknown_change() -> None:
    with pytest.raises(ValueError, match="unknown arm change 'turbo'"):
        cpu_tuning.arm_settings("tcmalloc+turbo")


def test_cpu_engine_args_hold_a_full_window_without_chunked_prefill() -> None:
    assert cpu_tuning.cpu_engine_args(2048)["max_num_batched_tokens"] == cpu_tuning.MIN_BATCHED_TOKENS
    big = cpu_tuning.cpu_engine_args(32768)
    assert big["max_num_batched_tokens"] == 32768 and big["enable_chunked_prefill"] is False
    assert big["block_size"] == cpu_tuning.KV_BLOCK_SIZE == 32  # prefix-cache granularity (judge hit rate)


def test_cpu_engine_args_compile_only_when_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UXLOCAL_CPU_COMPILE", raising=False)
    assert cpu_tuning.cpu_engine_args(2048)["enforce_eager"] is True
    monkeypatch.setenv("UXLOCAL_CPU_COMPILE", "1")
    assert cpu_tuning.cpu_engine_args(2048)["enforce_eager"] is False


@pytest.mark.parametrize(("argv", "expected"), [
    (["run", "uxbench", "--data", "x"], "1"), (["--debug", "judge", "chats.jsonl"], "1"),
    (["palate", "agreement"], "1"), (["demo"], "0"), (["--debug", "demo", "--db", "d.duckdb"], "0"),
])
def test_cli_compiles_by_default_except_the_demo(monkeypatch: pytest.MonkeyPatch, argv: list[str],
                                                  expected: str) -> None:
    monkeypatch.delenv("UXLOCAL_CPU_COMPILE", raising=False)
    cpu_tuning.set_cli_compile_default(argv)
    assert os.environ["UXLOCAL_CPU_COMPILE"] == expected
    assert cpu_tuning.cpu_engine_args(2048)["enforce_eager"] is (expected == "0")


def test_cli_compile_default_keeps_the_users_value_and_ignores_bare_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UXLOCAL_CPU_COMPILE", "0")
    cpu_tuning.set_cli_compile_default(["run", "uxbench"])
    assert os.environ["UXLOCAL_CPU_COMPILE"] == "0"
    monkeypatch.delenv("UXLOCAL_CPU_COMPILE")
    cpu_tuning.set_cli_compile_default(["--help"])
    assert "UXLOCAL_CPU_COMPILE" not in os.environ


def test_doctor_shows_whether_engines_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UXLOCAL_CPU_COMPILE", "1")
    assert "torch.compile" in doctor.cpu_settings_row()[2]
    monkeypatch.setenv("UXLOCAL_CPU_COMPILE", "0")
    assert "eager" in doctor.cpu_settings_row()[2] and "torch.compile" not in doctor.cpu_settings_row()[2]


def test_uxlocal_arm_runs_as_the_cli_does() -> None:
    env, args = cpu_tuning.arm_settings("uxlocal")
    assert env["UXLOCAL_CPU_COMPILE"] == "1" and args == {}
    assert cpu_tuning.uses_stack_room("uxlocal") and cpu_tuning.uses_stack_room("before+compile+pad")
    assert not cpu_tuning.uses_stack_room("before+compile")
    assert cpu_tuning.arm_settings("compile+pad") == cpu_tuning.arm_settings("compile")


def _summary() -> dict[str, Any]:
    arm = {"decode@32": {"tok_s": [600.0, 550.0, 640.0], "fraction": 0.41, "ratio": 1.6}}
    base = {"decode@32": {"tok_s": [375.0, 370.0, 380.0], "fraction": 0.26, "ratio": 1.0}}
    return {"goal_metric": "decode@32", "best_arm": "tcmalloc", "best_ratio": 1.6, "best_fraction": 0.41,
            "arms": {"before": base, "tcmalloc": arm}, "roof": {}}


def test_doctor_roofline_row_says_not_run_when_nothing_is_stored() -> None:
    assert doctor.roofline_row()[1] == "not run"


def test_doctor_roofline_row_shows_the_stored_figures() -> None:
    path = cpu_tuning.store_benchmark(_summary(), {"rounds": 3})
    assert path.is_file() and str(path).startswith(os.environ["UXLOCAL_HOME"])
    check, status, detail = doctor.roofline_row()
    assert (check, status) == ("engine roofline", "measured")
    assert (
        "before 375 tok/s (0.26 of bound)" in detail and "tcmalloc 600 tok/s" in detail and "1.60x" in detail
    )


def test_doctor_preload_rows_report_active_missing_and_opted_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_tuning, "PRELOAD_KINDS", ("tcmalloc", "iomp"))
    monkeypatch.setattr(cpu_tuning, "preloaded_libraries", lambda: {"tcmalloc": True, "iomp": False})
    monkeypatch.setattr(cpu_tuning, "find_library", {"tcmalloc": FAKE["tcmalloc"]}.get)
    rows = dict((r[0], r[1:]) for r in doctor.preload_rows())
    assert rows["preload tcmalloc"] == ("active", FAKE["tcmalloc"])
    assert rows["preload intel openmp"][0] == "missing"
    monkeypatch.setattr(cpu_tuning, "find_library", FAKE.get)
    monkeypatch.setenv("UXLOCAL_NO_PRELOAD", "1")
    rows = dict((r[0], r[1:]) for r in doctor.preload_rows())
    assert (
        rows["preload intel openmp"][0] == "inactive"
        and "UXLOCAL_NO_PRELOAD=1" in rows["preload intel openmp"][1]
    )
