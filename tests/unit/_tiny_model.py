"""A tiny random-weight Llama folder for training tests: real loading code, seconds not minutes.

The folder looks like a converted model: ``config.json`` + safetensors weights, a byte-level BPE
``tokenizer.json`` trained in-process (so every text encodes), and ``tokenizer_config.json`` with
a ChatML chat template, so ``TemplateRenderer`` and ``uxlocal.train.lora.load_base`` both read it
(shared/notes/cpu-stack.md, "tiny random Llama").
"""

from __future__ import annotations

import json
from pathlib import Path

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = ["liked disliked unclear thumbs up down user assistant conversation question answer reply",
          "The quick brown fox jumps over the lazy dog. 0123456789 A B tie 1 2 3 4 5",
          "Put yourself in the user's place. Would they be satisfied with the assistant's last reply?"]


def tiny_model_folder(folder: Path, *, seed: int = 0) -> Path:
    """Write the tiny model into ``folder`` (created) and return it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "chat_template": CHATML,
        "eos_token": "<|im_end|>",
        "bos_token": None,
        "pad_token": "<|endoftext|>",
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True, initializer_range=0.2,
        eos_token_id=tokenizer.token_to_id("<|im_end|>"), bos_token_id=None, pad_token_id=0))
    model.save_pretrained(str(folder))
    return folder
