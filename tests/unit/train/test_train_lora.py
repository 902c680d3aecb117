"""The shared LoRA trainer on a tiny random Llama: batching, masking, the schedule, seeding, hashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")

from _tiny_model import tiny_model_folder  # noqa: E402

from uxlocal.train import lora  # noqa: E402
from uxlocal.train.adapter import save_adapter, weights_sha256  # noqa: E402
from uxlocal.train.examples import IGNORE, Example, completion_example, loss_span, pad_batch  # noqa: E402

SETTINGS = lora.TrainSettings(steps=12, batch_size=2, lr=5e-2, warmup=2, rank=4, alpha=8, dropout=0.0, seed=3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_folder(tmp_path_factory.mktemp("tiny"))


def _examples() -> list[Example]:
    # four prompts of different lengths, each followed by a two-token target
    return [completion_example(list(range(5, 5 + n)), [40 + n, 41]) for n in (3, 7, 4, 9)]


def test_pad_batch_pads_left_with_positions_from_zero() -> None:
    batch = pad_batch([Example([7, 8], [IGNORE, 8]), Example([1, 2, 3], [IGNORE, 2, 3])], pad_id=0)
    assert batch["input_ids"].tolist() == [[0, 7, 8], [1, 2, 3]]
    assert batch["attention_mask"].tolist() == [[0, 1, 1], [1, 1, 1]]
    assert batch["position_ids"].tolist() == [[0, 0, 1], [0, 1, 2]]
    assert batch["labels"].tolist() == [[IGNORE, IGNORE, 8], [IGNORE, 2, 3]]


def test_loss_span_reaches_one_column_before_the_earliest_label() -> None:
    assert loss_span([Example([1, 2, 3, 4], [IGNORE, IGNORE, 3, 4])]) == 3
    assert loss_span([Example([1, 2, 3, 4], [IGNORE, IGNORE, 3, 4]), Example([1, 2], [IGNORE, 2])]) == 3
    assert loss_span([Example([1, 2, 3], [IGNORE, 2, IGNORE])]) == 3  # capped at the width


def test_token_logits_keeps_exactly_the_labelled_targets(tiny: Path) -> None:
    model, where = lora.load_base(str(tiny))
    examples = _examples()
    _logits, labels = lora.token_logits(model, examples, lora.pad_id(model), where)
    assert [t for t in labels.tolist() if t != IGNORE] == [t for e in examples for t in e.target_ids()]


def test_token_loss_of_a_padded_batch_equals_the_sum_of_single_examples(tiny: Path) -> None:
    model, where = lora.load_base(str(tiny))
    pad = lora.pad_id(model)
    examples = _examples()
    batch_loss, count = lora.token_loss(model, examples, pad, where)
    singles = [lora.token_loss(model, [e], pad, where) for e in examples]
    assert count == sum(n for _, n in singles) == 8
    assert float(batch_loss.detach()) == pytest.approx(sum(float(s.detach()) for s, _ in singles), rel=2e-2)


def test_lr_factor_warms_up_then_decays_to_zero() -> None:
    factors = [lora.lr_factor(s, SETTINGS) for s in range(SETTINGS.steps)]
    assert factors[:2] == [0.5, 1.0]
    assert factors[2] == 1.0 and factors[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(factors[1:], factors[2:], strict=False))


def test_batches_visit_every_example_once_per_pass() -> None:
    plan = lora.batches(4, SETTINGS)
    assert len(plan) == SETTINGS.steps and all(len(b) == 2 for b in plan)
    flat = [i for b in plan for i in b]
    assert all(sorted(flat[k:k + 4]) == [0, 1, 2, 3] for k in range(0, len(flat), 4))
    assert plan != lora.batches(4, lora.TrainSettings(steps=12, batch_size=2, seed=4))


def _train(tiny: Path, folder: Path, settings: lora.TrainSettings) -> tuple[list[float], str, Any]:
    model, where = lora.load_base(str(tiny))
    pad = lora.pad_id(model)
    model = lora.with_lora(model, settings)
    reports: list[lora.StepReport] = []
    losses = lora.train_loop(model, _examples(), settings, pad, where, on_step=reports.append)
    assert [r.step for r in reports] == list(range(1, settings.steps + 1)) and reports[-1].eta_s == 0
    return losses, save_adapter(model, folder, "meta.json", {"note": "test"}), model


def test_train_loop_lowers_the_loss_and_moves_the_adapter(tiny: Path, tmp_path: Path) -> None:
    losses, sha, model = _train(tiny, tmp_path / "a", SETTINGS)
    assert len(losses) == SETTINGS.steps
    assert sum(losses[-3:]) < 0.7 * sum(losses[:3])
    lora_b = [p for name, p in model.named_parameters() if "lora_B" in name]
    assert lora_b and any(float(p.detach().abs().sum()) > 0 for p in lora_b)  # B starts at zero
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta == {"note": "test", "weights_sha256": sha} and weights_sha256(tmp_path / "a") == sha


def test_training_twice_with_one_seed_gives_one_adapter_hash(tiny: Path, tmp_path: Path) -> None:
    _, first, _ = _train(tiny, tmp_path / "a", SETTINGS)
    _, again, _ = _train(tiny, tmp_path / "b", SETTINGS)
    _, other, _ = _train(tiny, tmp_path / "c", lora.TrainSettings(**{**SETTINGS.as_dict(), "seed": 4,
                                                                   "target_modules": ("q_proj", "v_proj")}))
    assert first == again
    assert other != first


def test_train_loop_refuses_examples_without_targets(tiny: Path) -> None:
    from uxlocal.errors import UxlocalError

    model, where = lora.load_base(str(tiny))
    with pytest.raises(UxlocalError, match="no example has a labelled token"):
        lora.train_loop(
            lora.with_lora(model, SETTINGS), [Example([1, 2], [IGNORE, IGNORE])], SETTINGS, 0, where
        )


def test_completion_logprobs_equal_scoring_each_full_sequence(tiny: Path) -> None:
    model, where = lora.load_base(str(tiny))
    prompt, completions = [5, 9, 12, 30, 31], [[40], [41, 42, 43], [44, 45]]
    cached = lora.completion_logprobs(model, prompt, completions, where)
    for completion, value in zip(completions, cached, strict=True):
        loss, _ = lora.token_loss(model, [completion_example(prompt, completion)], lora.pad_id(model), where)
        assert value == pytest.approx(-float(loss.detach()), abs=2e-2)
    assert cached[1] < cached[0]  # three tokens of about -6 each cost more than one


def test_top_layers_adapts_only_the_last_layers_and_keeps_old_addresses(tiny: Path) -> None:
    model, _ = lora.load_base(str(tiny))
    wrapped = lora.with_lora(model, lora.TrainSettings(top_layers=1))
    adapted = {
        name.split(".layers.")[1].split(".")[0] for name, p in wrapped.named_parameters() if p.requires_grad
    }
    assert adapted == {"1"}  # the tiny model has layers 0 and 1
    assert (
        "top_layers" not in lora.TrainSettings().as_dict()
    )  # PALATE adapters trained before it keep their key
    assert lora.TrainSettings(top_layers=2).as_dict()["top_layers"] == 2


def test_frozen_prefix_gives_the_full_forwards_loss_and_gradients(tiny: Path) -> None:
    model, where = lora.load_base(str(tiny))
    pad, examples = lora.pad_id(model), _examples()
    settings = lora.TrainSettings(top_layers=1, rank=4, alpha=8, dropout=0.0, seed=3)
    start = lora.first_adapted_layer(model, settings)
    assert start == 1 and lora.first_adapted_layer(model, lora.TrainSettings()) == 0
    prefix = lora.frozen_prefix(model, examples, start, pad, where, batch_size=3)
    assert prefix is not None and [s.shape[0] for s in prefix.states] == [len(e.ids) for e in examples]
    wrapped = lora.with_lora(model, settings)
    for p in wrapped.parameters():  # move B off zero so the adapter changes the output
        if p.requires_grad:
            p.data.normal_(0, 0.5)
    grads = []
    for use in (None, prefix):
        wrapped.zero_grad()
        loss, count = lora.token_loss(wrapped, examples, pad, where, use)
        (loss / count).backward()
        grads.append([p.grad.clone() for p in wrapped.parameters() if p.requires_grad])
        grads[-1].append(loss.detach())
    for full, cached in zip(*grads, strict=True):
        assert cached.cpu().numpy() == pytest.approx(full.cpu().numpy(), rel=1e-4, abs=1e-6)
    assert len(wrapped.get_decoder().layers) == 2  # the window is put back


def test_frozen_prefix_is_skipped_without_top_layers_or_over_budget(tiny: Path) -> None:
    model, where = lora.load_base(str(tiny))
    pad, examples = lora.pad_id(model), _examples()
    assert lora.frozen_prefix(model, examples, 0, pad, where) is None
    assert lora.frozen_prefix(model, examples, 1, pad, where, budget_bytes=100) is None


def test_frozen_prefix_trains_under_gradient_checkpointing(tiny: Path) -> None:
    model, where = lora.load_base(str(tiny))
    pad, examples = lora.pad_id(model), _examples()
    model.gradient_checkpointing_enable()  # what load_base does on a GPU
    model.enable_input_require_grads()
    prefix = lora.frozen_prefix(model, examples, 1, pad, where)
    wrapped = lora.with_lora(model, lora.TrainSettings(top_layers=1, rank=4, alpha=8, dropout=0.0))
    wrapped.train()
    loss, count = lora.token_loss(wrapped, examples, pad, where, prefix)
    (loss / count).backward()
    lora_a = [p for name, p in wrapped.named_parameters() if "lora_A" in name]
    assert lora_a and all(p.grad is not None for p in lora_a)


def test_training_on_a_frozen_prefix_twice_with_one_seed_gives_one_adapter_hash(
    tiny: Path, tmp_path: Path
) -> None:
    settings = lora.TrainSettings(**{**SETTINGS.as_dict(), "target_modules": tuple(SETTINGS.target_modules),
                                     "top_layers": 1})
    hashes = []
    for name in ("a", "b"):
        model, where = lora.load_base(str(tiny))
        pad, examples = lora.pad_id(model), _examples()
        prefix = lora.frozen_prefix(model, examples, lora.first_adapted_layer(model, settings), pad, where)
        assert prefix is not None
        wrapped = lora.with_lora(model, settings)
        losses = lora.train_loop(wrapped, examples, settings, pad, where, prefix=prefix)
        assert sum(losses[-3:]) < sum(losses[:3])
        hashes.append(save_adapter(wrapped, tmp_path / name, "meta.json", {}))
    assert hashes[0] == hashes[1]
