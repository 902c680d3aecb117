"""Token bytes for label walks straight from ``tokenizer.json`` (byte-level BPE), equal to the HF path."""

from __future__ import annotations

from pathlib import Path

import pytest
from _tiny_model import tiny_model_folder

from uxlocal.engine.render import HfChatRenderer, TemplateRenderer, byte_level_vocab


def test_byte_level_token_bytes_equal_the_hf_tokenizers(tmp_path: Path) -> None:
    pytest.importorskip("xgrammar")
    folder = tiny_model_folder(tmp_path / "tiny")
    fast = TemplateRenderer(folder).token_bytes()
    assert fast == HfChatRenderer(folder).token_bytes()
    assert b"<|im_end|>" in fast and any(b.startswith(b" ") for b in fast)  # added tokens, "Ġ" -> space


def test_other_vocabularies_are_left_to_the_hf_path() -> None:
    from tokenizers import Tokenizer, models

    assert byte_level_vocab(Tokenizer(models.WordLevel({"hi": 0, "[UNK]": 1}, unk_token="[UNK]"))) is None


def test_token_bytes_are_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uxlocal.engine.render as render

    renderer = TemplateRenderer(tiny_model_folder(tmp_path / "tiny"))
    calls: list[int] = []
    real = render.byte_level_vocab
    monkeypatch.setattr(render, "byte_level_vocab", lambda t: calls.append(1) or real(t))
    assert renderer.token_bytes() is renderer.token_bytes() and calls == [1]
