"""Property: no argument a model can send makes a tool raise or hit an internal error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uxlocal.tau2 import Action, Domain, Environment, Task

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _mutations(action: Action) -> st.SearchStrategy[dict[str, Any]]:
    """Gold arguments as they are, or with one key dropped, replaced by junk, or an unknown key added."""
    arguments = action.arguments
    keys = sorted(arguments)
    unchanged = st.just(dict(arguments))
    if not keys:
        return unchanged | st.builds(lambda v: {"extra": v}, JSON)
    dropped = st.sampled_from(keys).map(lambda k: {x: v for x, v in arguments.items() if x != k})
    junk = st.tuples(st.sampled_from(keys), JSON).map(lambda kv: {**arguments, kv[0]: kv[1]})
    extra = JSON.map(lambda v: {**arguments, "unexpected": v})
    return unchanged | dropped | junk | extra


@pytest.mark.parametrize("name", ["mock", "retail", "airline"])
def test_tools_never_raise_on_mutated_gold_arguments(
    request: pytest.FixtureRequest, tasks_of: Callable[[str], list[Task]], name: str
) -> None:
    domain: Domain = request.getfixturevalue(name)
    pairs = [
        (t, a) for t in tasks_of(name) if t.evaluation_criteria for a in t.evaluation_criteria.actions or []
    ]

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        task, action = data.draw(st.sampled_from(pairs))
        arguments = data.draw(_mutations(action))
        result = Environment.for_task(domain, task).call(action.name, arguments, action.requestor)
        assert not result.internal, result.error

    check()


@settings(max_examples=200, deadline=None)
@given(expression=st.text(alphabet="0123456789+-*/(). ", max_size=40))
def test_calculate_never_fails_internally(retail: Domain, expression: str) -> None:
    result = Environment(retail).call("calculate", {"expression": expression})
    assert not result.internal, result.error
