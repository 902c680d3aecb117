"""Per-user rated histories: the bundled users, and errors that name the file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from uxlocal.errors import InputError
from uxlocal.suites.palate.users import QUIT, bundled_users_dir, load_user, load_users


def test_bundled_users_have_train_and_heldout_sessions() -> None:
    users = load_users("all")
    assert [u.user_id for u in users] == ["u1", "u2", "u3", "u4", "u5"]
    assert {u.lang for u in users} == {"en", "zh"}
    for user in users:
        assert len(user.train) == 12 and len(user.heldout) == 4
        for session in user.heldout:
            assert len({t.rating for _, t in session.rated()}) >= 2  # pairs with different ratings exist


def test_users_by_id_list_keep_the_order_given() -> None:
    assert [u.user_id for u in load_users("u3,u1")] == ["u3", "u1"]


def test_unknown_user_lists_the_available_ones() -> None:
    with pytest.raises(InputError, match="unknown user.*u9.*available: u1, u2, u3, u4, u5"):
        load_users("u1,u9")


def _copy_user(tmp_path: Path, uid: str = "u2") -> Path:
    folder = tmp_path / "users" / uid
    shutil.copytree(bundled_users_dir() / uid, folder)
    return folder


def _rewrite_line(folder: Path, line: int, edit: object) -> None:
    file = folder / "sessions.jsonl"
    rows = file.read_text().splitlines()
    session = json.loads(rows[line - 1])
    edit(session)  # type: ignore[operator]
    rows[line - 1] = json.dumps(session, ensure_ascii=False)
    file.write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s["turns"][2].pop("rating"), "turns.2: character replies need a rating"),  # unrated reply
        (
            lambda s: s["turns"][2].update(rating=7),
            "turns.2.rating: Input should be less than or equal to 5",
        ),  # out of range
        (
            lambda s: s["turns"][2].update(reaction="sulk"),
            "turns.2.reaction: Input should be",
        ),  # unknown reaction
        (lambda s: s["turns"].pop(), f"must be the user's {QUIT}"),  # no [QUIT] at the end
        (
            lambda s: s["turns"].insert(
                1, {"role": "character", "text": "hi", "rating": 3, "reaction": "continue"}
            ),
            "turns.1: expected a user turn",
        ),  # roles do not alternate
        (lambda s: s.update(split="test"), "split: Input should be 'train' or 'heldout'"),  # unknown split
    ],
)
def test_bad_session_line_names_file_and_line(tmp_path: Path, edit: object, message: str) -> None:
    folder = _copy_user(tmp_path)
    _rewrite_line(folder, 5, edit)
    with pytest.raises(InputError) as info:
        load_user(folder)
    text = str(info.value)
    assert text.startswith(f"{folder / 'sessions.jsonl'}:5: ") and message in text


def test_broken_json_names_the_line(tmp_path: Path) -> None:
    folder = _copy_user(tmp_path)
    with (folder / "sessions.jsonl").open("a") as handle:
        handle.write("{not json\n")
    with pytest.raises(InputError, match=r"sessions.jsonl:17: not valid JSON"):
        load_user(folder)


def test_user_without_heldout_sessions_is_refused(tmp_path: Path) -> None:
    folder = _copy_user(tmp_path)
    file = folder / "sessions.jsonl"
    file.write_text("\n".join(r for r in file.read_text().splitlines() if '"heldout"' not in r) + "\n")
    with pytest.raises(InputError, match="no 'heldout' sessions"):
        load_user(folder)


def test_profile_id_must_match_its_folder(tmp_path: Path) -> None:
    folder = _copy_user(tmp_path)
    profile = json.loads((folder / "profile.json").read_text())
    profile["user_id"] = "someone"
    (folder / "profile.json").write_text(json.dumps(profile))
    with pytest.raises(InputError, match="differs from its folder name 'u2'"):
        load_users("u2", tmp_path / "users")
