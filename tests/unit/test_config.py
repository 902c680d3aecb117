from __future__ import annotations

from uxlocal.config import IDENTITY_EXEMPT_DISPLAY, NOT_IN_IDENTITY, RunConfig


def test_every_run_config_field_has_default_and_docstring() -> None:
    for name, field in RunConfig.model_fields.items():
        if name == "suite":
            continue
        assert not field.is_required(), name
        assert field.description, f"{name} lacks a docstring"


def test_every_field_is_either_hashed_or_excluded_with_a_reason() -> None:
    hashed = set(RunConfig(suite="x").identity_payload())
    excluded = set(NOT_IN_IDENTITY) | IDENTITY_EXEMPT_DISPLAY
    assert hashed | excluded == set(RunConfig.model_fields)
    assert not hashed & excluded


def test_identity_ignores_execution_knobs_but_not_results_knobs() -> None:
    base = RunConfig(suite="s", models={"judge": "abc"})
    assert base.identity() == base.model_copy(update={"db": "other.duckdb", "max_batch": 3}).identity()
    assert base.identity() != base.model_copy(update={"seed": 1}).identity()
    assert base.identity() != base.model_copy(update={"models": {"judge": "def"}}).identity()
    assert base.identity() != base.model_copy(update={"prompt_hashes": {"p": "1"}}).identity()


def test_run_id_names_the_suite() -> None:
    assert RunConfig(suite="uxbench").run_id().startswith("uxbench-")
