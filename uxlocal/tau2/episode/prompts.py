"""The seats' prompt files (``prompts/*.md``, written by us) and their hashes for the run identity."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from string import Template

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
PROMPT_FILES = ("agent.md", "user.md", "user_tools.md", "judge.md")


@cache
def prompt_text(name: str) -> str:
    """Read one prompt file."""
    return (PROMPTS_DIR / name).read_text(encoding="utf-8").strip()


def fill(name: str, **values: str) -> str:
    """Fill a prompt's ``$name`` slots; values may hold ``$`` and braces (policies do)."""
    return Template(prompt_text(name)).safe_substitute(values)


def prompt_hashes() -> dict[str, str]:
    """sha256 of every prompt file: a changed prompt is a different run."""
    return {
        f"tau2/{name}": hashlib.sha256((PROMPTS_DIR / name).read_bytes()).hexdigest() for name in PROMPT_FILES
    }
