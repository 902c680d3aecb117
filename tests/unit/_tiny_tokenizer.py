"""A tokenizer-only model folder for tests that render or parse text but never load weights.

Byte-level BPE trained in-process, so every text encodes; the config's template is a placeholder
that tests replace with the template under test.
"""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = ["<tool_call> </tool_call> name arguments city Paris Lyon weather get_weather",
          "The quick brown fox jumps over the lazy dog. 0123456789 { } [ ] : , \" ' ?"]


def tiny_tokenizer_folder(folder: Path) -> Path:
    """Write ``tokenizer.json`` and ``tokenizer_config.json`` into ``folder`` (created) and return it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS, trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {"chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
              "eos_token": "<|im_end|>", "bos_token": None, "tokenizer_class": "PreTrainedTokenizerFast"}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder
