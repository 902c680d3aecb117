from __future__ import annotations

import pytest

from uxlocal.engine.labelprobs import expand, expand_off_path, expand_on_path, max_label_tokens, start_walk

# a toy vocabulary: id -> bytes
VOCAB = [
    b"",
    b"good",
    b"g",
    b"b",
    b"bad",
    b"ad",
    b"ood",
    b"\xe5",
    b"\xa5\xbd",
    b"\xb7\xae",
    b"\xe5\xa5",
    b"\xbd",
    b"\xe5\xb7",
    b"\xae",
    b"x",
]
EOS = {0}


def test_distinct_first_tokens_assign_prefix_mass_to_their_label() -> None:
    walk, root = start_walk(("good", "bad"))
    # P(b) + P(bad) all go to "bad" even though "b" is only a prefix
    expand(walk, root, {1: 0.2, 2: 0.1, 3: 0.5, 4: 0.2}, VOCAB, EOS, masked=True)
    assert walk.pending == []
    assert walk.result() == pytest.approx({"good": 0.3, "bad": 0.7})


def test_shared_lead_byte_is_expanded_before_assignment() -> None:
    walk, root = start_walk(("好", "差"))
    # 0.9 on the lead byte shared by both characters, 0.1 on the two-byte prefix of 差
    expand(walk, root, {7: 0.9, 12: 0.1}, VOCAB, EOS, masked=True)
    assert len(walk.pending) == 1 and walk.pending[0].mass == pytest.approx(0.9)
    node = walk.pending.pop()
    expand(walk, node, {8: 0.25, 9: 0.75}, VOCAB, EOS, masked=True)
    assert walk.result() == pytest.approx({"好": 0.9 * 0.25, "差": 0.1 + 0.9 * 0.75})


def test_unmasked_distribution_is_renormalised_over_consistent_tokens() -> None:
    walk, root = start_walk(("好", "差"))
    expand(walk, root, {7: 1.0}, VOCAB, EOS, masked=True)
    node = walk.pending.pop()
    # "x" is not consistent with either label and is dropped before renormalising
    expand(walk, node, {8: 0.1, 9: 0.1, 14: 0.8}, VOCAB, EOS, masked=False)
    assert walk.result() == pytest.approx({"好": 0.5, "差": 0.5})


def test_label_that_prefixes_another_is_closed_by_the_end_token() -> None:
    walk, root = start_walk(("good", "goodood"))
    expand(walk, root, {1: 1.0}, VOCAB, EOS, masked=True)
    node = walk.pending.pop()
    expand(walk, node, {0: 0.4, 6: 0.6}, VOCAB, EOS, masked=True)
    assert walk.result() == pytest.approx({"good": 0.4, "goodood": 0.6})


def test_masked_mass_outside_top_k_is_reported_as_lost() -> None:
    walk, root = start_walk(("good", "bad"))
    expand(walk, root, {1: 0.5, 4: 0.3}, VOCAB, EOS, masked=True)
    assert walk.lost_mass == pytest.approx(0.2)
    assert sum(walk.result().values()) == pytest.approx(1.0)


def test_no_consistent_token_gives_no_distribution() -> None:
    walk, root = start_walk(("good", "bad"))
    expand(walk, root, {14: 1.0}, VOCAB, EOS, masked=False)
    assert walk.result() is None


def test_max_label_tokens_counts_bytes_plus_end() -> None:
    assert max_label_tokens(("good", "好")) == 5


def test_expand_on_path_uses_captured_steps_and_returns_nodes_off_the_path() -> None:
    # "好" and "差" share the lead byte (id 7); generated path: 7 then 8 ("好")
    walk, root = start_walk(("好", "差"))
    walk.pending.append(root)
    captured = [{7: 1.0}, {8: 0.6, 9: 0.4}]
    assert expand_on_path(walk, [7, 8], captured, VOCAB, EOS) == []  # root: on the path
    assert expand_on_path(walk, [7, 8], captured, VOCAB, EOS) == []  # node b"\xe5": on the path
    assert walk.result() == pytest.approx({"好": 0.6, "差": 0.4})
    walk, root = start_walk(("好", "差"))
    walk.pending.append(root)
    expand_on_path(walk, [12, 13], [{7: 0.5, 12: 0.5}], VOCAB, EOS)  # generated "差" through id 12
    off = expand_on_path(walk, [12, 13], [{7: 0.5, 12: 0.5}], VOCAB, EOS)
    assert [node.prefix_ids for node in off] == [(7,)]  # the b"\xe5" node needs a read of its own
    expand_off_path(walk, off, [{8: 0.3, 9: 0.1, 14: 0.6}], VOCAB, EOS)  # unconstrained read: renormalised
    assert walk.result() == pytest.approx({"好": 0.375, "差": 0.625})


def test_expand_off_path_settles_a_node_no_read_could_reach() -> None:
    walk, root = start_walk(("好", "差"))
    expand(walk, root, {7: 0.8, 12: 0.2}, VOCAB, EOS, masked=True)
    off = [node for node in walk.pending if node.prefix_ids == (7,)]
    walk.pending = []
    expand_off_path(walk, off, [None], VOCAB, EOS)  # only "差" has mass so far: it takes the node's 0.8
    assert walk.result() == pytest.approx({"好": 0.0, "差": 1.0})


def test_hf_backend_reads_each_off_path_node_once_and_walks_like_the_others() -> None:
    from types import SimpleNamespace

    from uxlocal.engine.base import GenResult
    from uxlocal.engine.hf import HfEngine
    from uxlocal.grammar import Choice
    from uxlocal.models import resolve_spec

    reads: list[list[int]] = []

    class Hf(HfEngine):
        eos_id = 0  # no tokenizer to load

        def _next_dist(self, ids: list[int]) -> dict[int, float]:
            reads.append(ids)
            return {8: 0.3, 9: 0.1, 14: 0.6}  # one unconstrained forward pass after the prefix

    engine = Hf(resolve_spec("fake"), SimpleNamespace(token_bytes=lambda: VOCAB, eos_ids=EOS))
    prepared = SimpleNamespace(request=SimpleNamespace(constraint=Choice(("好", "差"))), prompt_ids=[1, 2])
    result = GenResult("差", "stop")
    result.__dict__["_walk_input"] = ([12, 13], [{7: 0.5, 12: 0.5}, {13: 1.0}])  # generated "差" via id 12
    engine._finish_walks([prepared], [result])  # type: ignore[list-item]
    assert reads == [[1, 2, 7]]  # the shared lead byte b"\xe5" (id 7) is off the generated path
    assert result.label_probs == pytest.approx({"好": 0.375, "差": 0.625})


def test_vllm_backend_walk_expands_on_path_steps_and_asks_for_the_rest() -> None:
    import math
    from types import SimpleNamespace

    from uxlocal.engine.base import GenResult
    from uxlocal.engine.vllm_requests import PendingWalk

    def logprobs(dist: dict[int, float]) -> dict[int, SimpleNamespace]:  # vLLM's {token_id: Logprob}
        return {tid: SimpleNamespace(logprob=math.log(p)) for tid, p in dist.items()}

    walk, root = start_walk(("好", "差"))
    expand(walk, root, {7: 0.5, 12: 0.5}, VOCAB, EOS, masked=True)
    steps = [logprobs({7: 0.5, 12: 0.5}), logprobs({13: 1.0})]
    state = PendingWalk(GenResult("差", "stop"), walk, [12, 13], steps)
    off = state.round(VOCAB, EOS)
    assert [node.prefix_ids for node in off] == [(7,)] and state.rounds == 1  # one engine read to enqueue
    expand_off_path(walk, off, [{8: 0.3, 9: 0.1, 14: 0.6}], VOCAB, EOS)
    assert state.round(VOCAB, EOS) == [] and walk.result() == pytest.approx({"好": 0.375, "差": 0.625})
