from __future__ import annotations

from uxlocal.engine.base import Sampling, request_hash
from uxlocal.grammar import Choice


def _h(**overrides: object) -> str:
    args: dict[str, object] = {"model_identity": "m1", "prompt": "p", "sampling": Sampling(), "constraint": None,
                               "lora": None}
    args.update(overrides)
    return request_hash(**args)  # type: ignore[arg-type]


def test_request_hash_is_stable() -> None:
    assert _h() == _h()


def test_request_hash_changes_with_each_ingredient() -> None:
    base = _h()
    variants = [_h(model_identity="m2"), _h(prompt="q"), _h(sampling=Sampling(max_tokens=9)),
                _h(constraint=Choice(("a", "b"))), _h(lora="user-1"),
                _h(sampling=Sampling(temperature=0.7, seed=1))]
    assert len({base, *variants}) == len(variants) + 1


def test_seed_is_ignored_for_greedy_but_not_for_sampling() -> None:
    assert _h(sampling=Sampling(seed=1)) == _h(sampling=Sampling(seed=2))
    assert _h(sampling=Sampling(temperature=0.5, seed=1)) != _h(sampling=Sampling(temperature=0.5, seed=2))


def test_lora_weights_identity_is_part_of_the_key() -> None:
    assert _h(lora="u1", lora_identity="/a") != _h(lora="u1", lora_identity="/b")


def test_request_hash_of_a_request_without_tools_or_logprobs_is_the_key_stores_already_hold() -> None:
    # issue 45: the contract gained tools and log-probabilities; keys written before must still hit
    import hashlib
    import json

    payload = {"model": "m1", "prompt": "p", "constraint": None, "lora": None, "lora_identity": None,
               "sampling": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 256, "seed": None, "stop": []}}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert _h() == hashlib.sha256(blob.encode("utf-8")).hexdigest()


def test_tools_tool_choice_and_logprobs_are_part_of_the_key() -> None:
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}
    other = {"type": "function", "function": {"name": "g", "description": "d", "parameters": {}}}
    keys = {_h(), _h(tools=[tool]), _h(tools=[other]), _h(tools=[tool, other]), _h(tools=[other, tool]),
            _h(tools=[tool], tool_choice="auto"), _h(sampling=Sampling(logprobs=5))}
    assert len(keys) == 7
