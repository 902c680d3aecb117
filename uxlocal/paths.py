"""Where uxlocal keeps its files: the user home (cache, converted models) and the repo's data dirs."""

from __future__ import annotations

from pathlib import Path

from uxlocal import settings

_PACKAGE_DIR = Path(__file__).resolve().parent


def home() -> Path:
    """The uxlocal home (``UXLOCAL_HOME``, default ``~/.cache/uxlocal``); created on first use."""
    root = settings.current().home
    root.mkdir(parents=True, exist_ok=True)
    return root


def models_cache() -> Path:
    """Folder for converted model folders (``UXLOCAL_MODEL_CACHE`` overrides)."""
    root = settings.current().model_cache or home() / "models"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _resource_dir(name: str) -> Path:
    """A top-level resource folder (``db``, ``models``) in a checkout or inside an installed wheel."""
    bundled = _PACKAGE_DIR / "_bundled" / name
    if bundled.is_dir():
        return bundled
    checkout = _PACKAGE_DIR.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"uxlocal resource folder {name!r} not found next to the package")


def db_dir() -> Path:
    """``db/`` with ``migrations/`` and ``views/``."""
    return _resource_dir("db")


def presets_dir() -> Path:
    """``models/`` with the model presets (``*.toml``); ``UXLOCAL_PRESETS`` adds a user folder."""
    return _resource_dir("models")


def data_dir() -> Path:
    """Sample data shipped inside the package (written by us)."""
    return _PACKAGE_DIR / "data"
