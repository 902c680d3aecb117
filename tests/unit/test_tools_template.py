"""The embedded model's tools-capable chat template and the preset fields that select it.

``uxlocal/data/templates/smollm2_tools.jinja`` renders tools, calls and tool results, and chats
without tools exactly as SmolLM2's own template does; the identity changes with template and parser.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from _tiny_tokenizer import tiny_tokenizer_folder

from uxlocal.engine.backends import VLLM
from uxlocal.engine.render import HfChatRenderer, TemplateRenderer
from uxlocal.errors import InputError
from uxlocal.models import (
    TEMPLATES_DIR,
    ModelPreset,
    _resolved,
    converted_folder,
    folder_fingerprint,
    load_presets,
    template_file,
)

TEMPLATE = TEMPLATES_DIR / "smollm2_tools.jinja"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Today's weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
BOOK = {"type": "function", "function": {
    "name": "book_table", "description": "Reserve a table",
    "parameters": {"type": "object", "properties": {"people": {"type": "integer"}}}}}
CALLS = [  # arguments as JSON text (OpenAI's shape) and as an object (some clients send that)
    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
    {"id": "c2", "type": "function", "function": {"name": "book_table", "arguments": {"people": 2}}}]
NO_TOOL_CHATS = [
    [{"role": "user", "content": "hi"}],  # the default system turn is added
    # its own system turn
    [{"role": "system", "content": "Judge tersely."}, {"role": "user", "content": "Good?"}],
    # several turns
    [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
     {"role": "user", "content": "c"}],
    # a system turn that is not first
    [{"role": "user", "content": "first"}, {"role": "system", "content": "a late system turn"}],
    # text that JSON or Jinja could mangle
    [{"role": "user", "content": "Unicode: 这条回复 ✓ and \"quotes\" {braces}\nnew line"}],
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_tokenizer_folder(tmp_path_factory.mktemp("tok"))


def _assistant_turn(prompt: str) -> str:
    return prompt.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]


def test_template_renders_chats_without_tools_exactly_as_smollm2s_own() -> None:
    smollm2 = converted_folder(load_presets()["embedded"])
    if not (smollm2 / "tokenizer.json").is_file():
        pytest.skip(f"embedded model not converted at {smollm2} (uxlocal models prepare embedded)")
    own, ours = TemplateRenderer(smollm2), TemplateRenderer(smollm2, TEMPLATE)
    for chat in NO_TOOL_CHATS:
        assert ours.render(chat) == own.render(chat)
    assert ours.identity != own.identity


def test_template_lists_tools_in_the_system_turn_in_the_given_order(folder: Path) -> None:
    prompt = TemplateRenderer(folder, TEMPLATE).template_text(NO_TOOL_CHATS[1], [BOOK, WEATHER])
    system = prompt.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nJudge tersely.\n\n")
    listed = system.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    assert [json.loads(line) for line in listed] == [BOOK, WEATHER]
    assert "<tool_call>" in system and prompt.endswith("<|im_start|>assistant\n")


def test_template_writes_calls_as_tool_call_blocks_and_results_as_tool_turns(folder: Path) -> None:
    chat = [NO_TOOL_CHATS[0][0], {"role": "assistant", "content": "On it.", "tool_calls": CALLS},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    prompt = TemplateRenderer(folder, TEMPLATE).template_text(chat, [WEATHER, BOOK])
    turn = _assistant_turn(prompt)
    assert turn.startswith("On it.\n<tool_call>\n")
    blocks = [b.split("</tool_call>")[0] for b in turn.split("<tool_call>")[1:]]
    assert [json.loads(b) for b in blocks] == [{"name": "get_weather", "arguments": {"city": "Paris"}},
                                               {"name": "book_table", "arguments": {"people": 2}}]
    assert "<|im_start|>tool\n<tool_response>\nsunny\n</tool_response><|im_end|>\n" in prompt


def test_template_renders_the_same_through_transformers(folder: Path) -> None:
    chat = [NO_TOOL_CHATS[0][0], {"role": "assistant", "content": None, "tool_calls": CALLS},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    fast, slow = TemplateRenderer(folder, TEMPLATE), HfChatRenderer(folder, TEMPLATE)
    assert fast.template_text(chat, [WEATHER]) == slow.render(chat, [WEATHER])[0]
    assert fast.identity == slow.identity == hashlib.sha256(TEMPLATE.read_bytes()).hexdigest()


def test_calls_the_template_writes_are_read_back_by_vllms_hermes_parser(folder: Path) -> None:
    pytest.importorskip("vllm.parser", reason="vLLM is not installed (pip install 'uxlocal[cpu]')")
    from transformers import AutoTokenizer

    from uxlocal.engine.base import GenRequest
    from uxlocal.engine.tool_calls import ToolCallParse

    chat = [NO_TOOL_CHATS[0][0], {"role": "assistant", "content": None, "tool_calls": CALLS}]
    written = _assistant_turn(TemplateRenderer(folder, TEMPLATE).template_text(chat, [WEATHER, BOOK]))
    request = GenRequest("candidate", chat[:1], tools=(WEATHER, BOOK))
    parse = ToolCallParse.start(AutoTokenizer.from_pretrained(str(folder)), "hermes", request)
    text, calls = parse.split(written, "h" * 64)
    assert text == "" and calls is not None
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == \
        [("get_weather", {"city": "Paris"}), ("book_table", {"people": 2})]


def test_embedded_presets_use_our_template_and_the_hermes_parser() -> None:
    presets = load_presets()
    for name in ("embedded", "embedded-8k"):
        assert presets[name].tool_call_parser == "hermes"
        assert template_file(presets[name]) == TEMPLATE.resolve()
    assert presets["qwen2.5-7b-instruct"].tool_call_parser == "hermes"
    assert presets["qwen3-32b"].tool_call_parser == "hermes"
    assert presets["llama-3.1-8b-instruct"].tool_call_parser == "llama3_json"


def test_identity_changes_with_parser_and_template_and_not_otherwise(folder: Path, tmp_path: Path) -> None:
    plain = ModelPreset(name="m", path=str(folder))
    before = json.dumps({"weights": folder_fingerprint(folder), "dtype": plain.dtype, "backend": "vllm",
                         "max_model_len": plain.max_model_len}, sort_keys=True)
    other = tmp_path / "other.jinja"
    other.write_text(TEMPLATE.read_text(encoding="utf-8") + "{# changed #}", encoding="utf-8")
    identities = [_resolved(p, folder, "vllm").identity for p in (
        plain, plain.model_copy(update={"tool_call_parser": "hermes"}),
        plain.model_copy(update={"chat_template": "smollm2_tools.jinja"}),
        plain.model_copy(update={"chat_template": str(other)}))]
    assert identities[0] == hashlib.sha256(before.encode()).hexdigest()  # stores keyed before stay valid
    assert len(set(identities)) == 4


def test_resolved_model_carries_the_template_to_its_renderer(folder: Path) -> None:
    preset = ModelPreset(name="m", path=str(folder), chat_template="smollm2_tools.jinja",
                         tool_call_parser="hermes")
    model = _resolved(preset, folder, "vllm")
    assert model.chat_template == str(TEMPLATE.resolve()) and model.tool_call_parser == "hermes"
    renderer: Any = VLLM.renderer(model)
    assert renderer.identity == hashlib.sha256(TEMPLATE.read_bytes()).hexdigest()


def test_missing_template_names_the_preset_and_the_file(folder: Path) -> None:
    preset = ModelPreset(name="m", path=str(folder), chat_template="no_such.jinja")
    with pytest.raises(InputError, match="no_such.jinja.*preset 'm': chat_template not found"):
        template_file(preset)
