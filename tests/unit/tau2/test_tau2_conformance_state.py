"""The conformance replay's canonical state (``uxlocal/tau2/conformance/state.py``).

Its hash must be exactly the recording's: SHA-256 of the whole canonical state, sorted keys,
compact separators. The fast path (row texts cached, unchanged tables and states reused) is
checked here against that plain computation on the bundled homenet domain, before and after
writes, in every clone.
"""

from __future__ import annotations

from typing import Any

from uxlocal.tau2 import Environment, load_domain
from uxlocal.tau2.conformance.state import (
    RandomIds,
    StateCanon,
    canonical,
    key_records,
    normalise_text,
    serialise,
    sha16,
    state_delta,
)
from uxlocal.tau2.layout import SAMPLE_DATA


def _plain_hash(env: Environment) -> str:
    dump = {"db": env.agent_db.dump(), "user_db": env.user_db.dump() if env.user_db is not None else None}
    return sha16(serialise({"db": canonical(dump["db"]), "user_db": canonical(dump["user_db"])}))


def test_canonical_drops_nulls_and_writes_integral_floats_as_integers() -> None:
    assert canonical({"a": 1.0, "b": None, "c": [2.5, 1e-9, 3.1234567]}) == {
        "a": 1,
        "c": [2.5, 0.0, 3.123457],
    }
    assert serialise({"b": "é", "a": 1}) == '{"a":1,"b":"é"}'
    rows = [{"bill_id": "B2", "x": 1}, {"bill_id": "B1", "x": 2}]
    assert key_records(rows) == {"B2": rows[0], "B1": rows[1]}
    assert key_records([{"x": 1}]) == [{"x": 1}]  # no *_id field: left a list


def test_fast_state_hash_equals_the_plain_one_before_and_after_writes() -> None:
    env = Environment(load_domain(SAMPLE_DATA, "homenet"))
    canon = StateCanon()
    before, digest = canon.state(env.agent_db, env.user_db)
    assert digest == _plain_hash(env)
    user_tool = next(s for s in env.tool_specs("user") if s.kind == "write")
    assert canon.state(env.agent_db, env.user_db)[1] == digest  # unchanged: the same hash again
    env.invoke("user", "set_router_fault", {"fault": "frozen"})
    changed = env.call(user_tool.name, {}, "user")
    after, new_digest = canon.state(env.agent_db, env.user_db)
    assert changed.ok and new_digest == _plain_hash(env) != digest
    assert state_delta(before, after)  # the write shows as a change


def test_random_ids_are_renamed_in_order_in_states_and_texts() -> None:
    ids = RandomIds("telecom", {"db": {"bills": {"B1": {}}}})
    state: dict[str, Any] = {"db": {"bills": {"B1": {}, "Bx9": {"bill_id": "Bx9"}, "Ba1": {}}}}
    ids.observe(state)
    assert ids.names == {"Ba1": "NEW_BILL_1", "Bx9": "NEW_BILL_2"}
    assert ids.rename(state)["db"]["bills"] == {
        "B1": {},
        "NEW_BILL_2": {"bill_id": "NEW_BILL_2"},
        "NEW_BILL_1": {},
    }
    assert (
        normalise_text("paid Bx9, not Bx99 [Timing: retrieval=2ms]", ids)
        == "paid NEW_BILL_2, not Bx99 [Timing: N]"
    )
