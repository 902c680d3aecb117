from __future__ import annotations

from uxlocal.engine.base import Sampling, request_hash
from uxlocal.grammar import Choice


def _h(**overrides: object) -> str:
    args: dict[str, object] = {
        "model_identity": "m1",
        "prompt": "p",
        "sampling": Sampling(),
        "constraint": None,
        "lora": None,
    }
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
