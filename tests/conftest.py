"""Test isolation: every test gets its own UXLOCAL_HOME; the converted model cache is shared.

Integration tests share one in-process vLLM engine for the embedded model (loading costs ~10 s)
and skip with a reason when vLLM or the model cannot be had.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

_REAL_MODEL_CACHE = os.environ.get("UXLOCAL_MODEL_CACHE") or str(
    Path(os.environ.get("UXLOCAL_HOME") or Path.home() / ".cache" / "uxlocal") / "models")
TAU2_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau2"


@pytest.fixture
def network_guard(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make connecting anywhere but loopback raise, from here to the end of the test.

    Each attempt is recorded in ``network_guard.attempts`` (tests/netguard.py).
    """
    from netguard import guard_network

    return guard_network(monkeypatch)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UXLOCAL_HOME", str(tmp_path / "uxlocal-home"))
    monkeypatch.setenv("UXLOCAL_MODEL_CACHE", _REAL_MODEL_CACHE)


def _vllm_available() -> str | None:
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # pragma: no cover - environment dependent
        return f"vLLM not importable: {exc}"
    return None


@pytest.fixture(scope="session")
def embedded_model() -> Any:
    """Return the embedded SmolLM2 model, converted once into the shared cache."""
    os.environ.setdefault("UXLOCAL_MODEL_CACHE", _REAL_MODEL_CACHE)
    from uxlocal.engine.resolve import resolve

    try:
        return resolve("embedded")
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"embedded model unavailable: {exc}")


@pytest.fixture(scope="session")
def vllm_pool(embedded_model: Any) -> Any:
    """One vLLM engine for the embedded model, bound to every role."""
    reason = _vllm_available()
    if reason:
        pytest.skip(reason)
    from uxlocal.engine.pool import ModelPool

    pool = ModelPool.from_models({role: embedded_model for role in ("candidate", "user", "judge")})
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def palate_simulator(embedded_model: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Return ``train(user_id) -> (UserData, TrainResult)``, a bundled user's LoRA simulator.

    A bundled PALATE user's simulator on the embedded model, trained once per session (steps 8,
    batch 4, lr 2e-3; ~55 s on 2 cores) and shared by every test that needs it.
    """
    from uxlocal.suites.palate.training import TrainSettings, train_simulator
    from uxlocal.suites.palate.users import load_users

    folder = tmp_path_factory.mktemp("adapters")
    done: dict[str, tuple[Any, Any]] = {}

    def train(user_id: str) -> tuple[Any, Any]:
        if user_id not in done:
            user = load_users(user_id)[0]
            settings = TrainSettings(steps=8, batch_size=4, lr=2e-3)
            done[user_id] = (
                user,
                train_simulator(user, embedded_model, settings=settings, adapters_dir=folder),
            )
        return done[user_id]

    return train
