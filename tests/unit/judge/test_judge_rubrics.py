"""Rubrics as data: validation errors name the file, identity ignores formatting, built-ins load."""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlocal.errors import InputError
from uxlocal.suites.judge.episodes import pointwise_scores, reconcile, swap_pair
from uxlocal.suites.judge.rubrics import builtin_rubrics, load_rubric


def test_rubric_identity_ignores_key_order_and_comments(tmp_path: Path) -> None:
    a = tmp_path / "a.toml"
    b = tmp_path / "b.toml"
    a.write_text(
        'name = "r"\nkind = "label"\nquestion = "ok?"\n[[labels]]\nname = "yes"\n[[labels]]\nname = "no"\n'
    )
    b.write_text('# a comment\nquestion = "ok?"\nkind = "label"\nname = "r"\n[[labels]]\nname = "yes"\n'
                 '[[labels]]\nname = "no"\n')
    assert load_rubric(str(a)).sha256() == load_rubric(str(b)).sha256()
    b.write_text(b.read_text().replace('"ok?"', '"fine?"'))
    assert load_rubric(str(a)).sha256() != load_rubric(str(b)).sha256()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        # broken TOML names its line
        ('kind = "label"\nquestion = \n', "invalid TOML"),
        # likert without every anchor
        (
            'kind = "likert"\nquestion = "q"\nscale = 3\n[anchors]\n1 = "a"\n2 = "b"\n',
            "anchors must name exactly",
        ),
        # a label rubric with one label
        ('kind = "label"\nquestion = "q"\n[[labels]]\nname = "only"\n', "at least two"),
        # abstain repeating a label
        (
            'kind = "label"\nquestion = "q"\nabstain = "no"\n'
            '[[labels]]\nname = "yes"\n[[labels]]\nname = "no"\n',
            "labels must be distinct",
        ),
        # an unknown key (typo) is an error, not ignored
        ('kind = "label"\nquestoin = "q"\n', "bad rubric"),
    ],
)
def test_load_rubric_names_file_when_invalid(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_rubric(str(path))
    assert err.value.format_message().startswith(str(path)) and problem in err.value.format_message()


def test_builtin_rubrics_load_with_their_kinds() -> None:
    kinds = {name: load_rubric(name).kind for name in builtin_rubrics()}
    assert kinds == {"ux-liked": "label", "ux-liked-zh": "label", "helpfulness": "likert",
                     "preference": "pairwise", "palate-session": "likert"}
    assert [c.name for c in load_rubric("palate-session").criteria_list()][:2] == [
        "in_character",
        "coherence_memory",
    ]


def test_pointwise_scores_renormalize_over_answers_and_keep_abstain_argmax() -> None:
    rubric = load_rubric("ux-liked")
    label, score, confidence = pointwise_scores(rubric, {"liked": 0.2, "disliked": 0.2, "unclear": 0.6})
    assert (label, score, confidence) == ("unclear", 0.5, 0.6)
    label, score, confidence = pointwise_scores(rubric, {"liked": 0.6, "disliked": 0.2, "unclear": 0.2})
    assert label == "liked" and score == pytest.approx(0.75) and confidence == pytest.approx(0.75)


def test_reconcile_averages_orders_after_swapping_back() -> None:
    rubric = load_rubric("preference")
    first = {"A": 0.7, "B": 0.2, "tie": 0.1}
    second = {"A": 0.6, "B": 0.3, "tie": 0.1}  # B-first order: its A is the input's B
    probs = reconcile(rubric, first, swap_pair(second))
    assert probs == pytest.approx({"A": 0.5, "B": 0.4, "tie": 0.1})
