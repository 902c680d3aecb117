"""Copy-on-write DBs: isolation between episodes, the fast hash equal to the reference, patches."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from uxlocal.errors import InputError
from uxlocal.tau2 import Domain, Environment
from uxlocal.tau2.db import Database, Record, Table, deep_merge, hash_of_dump
from uxlocal.tau2.domains.airline.db import GiftCard


def test_fresh_environment_hash_equals_reference_hash(retail: Domain, airline: Domain, mock: Domain) -> None:
    for domain in (retail, airline, mock):
        env = Environment(domain)
        assert env.db_hash() == hash_of_dump(env.agent_db.dump())
        assert env.db_hash() == domain.agent_snapshot.fingerprint()


def test_hash_stays_exact_after_edits_and_additions(airline: Domain) -> None:
    env = Environment(airline)
    result = env.call(
        "book_reservation",
        {
            "user_id": "emma_kim_9957",
            "origin": "PHL",
            "destination": "LGA",
            "flight_type": "one_way",
            "cabin": "economy",
            "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}],
            "passengers": [{"first_name": "Emma", "last_name": "Kim", "dob": "1977-09-23"}],
            "payment_methods": [{"payment_id": "credit_card_5832574", "amount": 137}],
            "total_baggages": 0,
            "nonfree_baggages": 0,
            "insurance": "no",
        },
    )
    assert result.ok, result.error
    assert env.db_hash() == hash_of_dump(env.agent_db.dump())
    assert env.db_hash() != Environment(airline).db_hash()


def test_edit_copies_record_and_leaves_other_episodes_alone(retail: Domain) -> None:
    first, second = Environment(retail), Environment(retail)
    before = second.db_hash()
    first.agent_db.users.edit("yusuf_rossi_9620").email = "changed@example.com"  # type: ignore[attr-defined]
    assert first.agent_db.users.get("yusuf_rossi_9620").email == "changed@example.com"  # type: ignore[attr-defined]
    assert second.agent_db.users.get("yusuf_rossi_9620").email != "changed@example.com"  # type: ignore[attr-defined]
    assert second.db_hash() == before
    assert retail.agent_snapshot.fingerprint() == before


def test_assignment_is_type_canonical(airline: Domain) -> None:
    # an int written into a float field is stored as a float, so 100 and 100.0 paths hash alike
    env = Environment(airline)
    card = env.agent_db.users.edit("emma_kim_9957").payment_methods["gift_card_9562694"]  # type: ignore[attr-defined]
    assert isinstance(card, GiftCard)
    card.amount = 100
    assert isinstance(card.amount, float)
    loaded = airline.agent_snapshot.tables["users"]["emma_kim_9957"].model_dump()
    assert loaded["payment_methods"]["gift_card_9562694"]["amount"] == 103.0
    assert isinstance(loaded["payment_methods"]["gift_card_9562694"]["amount"], float)


def test_optional_fields_are_dumped_as_null(airline: Domain, retail: Domain) -> None:
    reservation = Environment(airline).agent_db.dump()["reservations"]["4WQ150"]
    assert "status" in reservation and reservation["status"] is None
    order = Environment(retail).agent_db.dump()["orders"]["#W6247578"]
    assert order["cancel_reason"] is None and order["return_items"] is None


def test_apply_patch_deep_merges_existing_and_adds_new_records(mock: Domain) -> None:
    env = Environment(mock)
    env.agent_db.apply_patch(
        {
            "tasks": {"task_2": {"task_id": "task_2", "title": "T", "status": "pending"}},
            "users": {"user_1": {"tasks": ["task_1", "task_2"]}},
        }
    )
    dump = env.agent_db.dump()
    assert dump["users"]["user_1"] == {
        "user_id": "user_1",
        "name": "Test User",
        "tasks": ["task_1", "task_2"],
    }
    assert dump["tasks"]["task_2"]["description"] is None
    assert env.db_hash() == hash_of_dump(dump)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"projects": {}}, "unknown DB field 'projects'"),  # not a table of the mock DB
        ({"tasks": ["task_1"]}, "must map keys to records"),  # a table needs a mapping
        ({"tasks": {"task_9": {"title": "no id"}}}, r"tasks\['task_9'\]"),  # a new record must be complete
    ],
)
def test_apply_patch_rejects_bad_patches(mock: Domain, patch: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Environment(mock).agent_db.apply_patch(patch)


def test_table_iterates_file_order_then_added_keys(mock: Domain) -> None:
    env = Environment(mock)
    assert env.call("create_task", {"user_id": "user_1", "title": "A"}).ok
    table = env.agent_db.tasks  # type: ignore[attr-defined]
    assert list(table.keys()) == ["task_1", "task_2"]
    assert len(table) == 2 and "task_2" in table and table.touched()
    with pytest.raises(KeyError):
        table.add("task_1", table.get("task_1"))


def test_deep_merge_replaces_lists_and_merges_mappings() -> None:
    assert deep_merge({"a": {"x": 1, "y": [1]}, "b": 2}, {"a": {"y": [2]}, "c": 3}) == {
        "a": {"x": 1, "y": [2]},
        "b": 2,
        "c": 3,
    }


class _Row(Record):
    value: float


class _Device(BaseModel):
    mode: str
    flags: list[str]


class _ToyData(BaseModel):
    rows: dict[str, _Row]
    device: _Device


class _ToyDB(Database):
    ROOT = _ToyData
    rows: Table[_Row]
    device: _Device


def test_non_table_fields_are_copied_per_episode_and_hashed(tmp_path: Path) -> None:
    # telecom's user DB holds single objects, not keyed tables; the DB layer must handle both
    path = tmp_path / "db.toml"
    path.write_text('[rows.a]\nvalue = 1\n\n[device]\nmode = "4g"\nflags = ["x"]\n')
    snapshot = _ToyDB.load(path)
    first, second = _ToyDB(snapshot), _ToyDB(snapshot)
    first.device.flags.append("y")
    assert second.device.flags == ["x"]
    assert first.hash() == hash_of_dump(first.dump()) != second.hash()
    first.apply_patch({"device": {"mode": "5g"}})
    assert first.device.mode == "5g" and first.device.flags == ["x", "y"]
    assert first.dump()["rows"]["a"]["value"] == 1.0


def test_load_reports_schema_mismatch_with_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "db.json"
    path.write_text('{"rows": {"a": {"value": "high"}}, "device": {"mode": "x", "flags": []}}')
    with pytest.raises(InputError, match=r"db.json: does not match the _ToyData schema: rows.a.value"):
        _ToyDB.load(path)
