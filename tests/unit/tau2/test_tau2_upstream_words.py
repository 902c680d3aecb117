"""``Tau2Words`` on a toy checkout written by the test (our words), and the scenario rendering.

The real checkout and the recorded requests: ``tests/conformance/test_tau2_episode_words.py``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from uxlocal.tau2.tasks import StructuredInstructions, UserScenario
from uxlocal.tau2.upstream_source import CheckoutError
from uxlocal.tau2.upstream_words import NotComparable, Tau2Words, scenario_text


def test_scenario_text_tabs_every_nonblank_line_and_keeps_placeholders() -> None:
    scenario = UserScenario(persona="Calm.\n\nPatient.", instructions=StructuredInstructions(
        domain="shop", reason_for_call="Lost order.\nTwice.", known_info=None, unknown_info=".",
        task_instructions="Ask."))
    assert scenario_text(scenario) == (
        "Persona:\n\tCalm.\n\n\tPatient.\nInstructions:\n\tDomain: shop\n"
        "\tReason for call:\n\t\tLost order.\n\t\tTwice.\n\tUnknown info:\n\t\t.\n"
        "\tTask instructions:\n\t\tAsk.")
    assert scenario_text(UserScenario(instructions="Free text.")) == "Instructions:\n\tFree text."


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    _write(root, "data/tau2/domains/airline/tasks.json", "[]")
    _write(root, "data/tau2/user_simulator/plain.md", "Be a user.")
    _write(root, "data/tau2/user_simulator/tools.md", "Be a user with tools.<PERSONA_GUIDELINES>")
    _write(root, "src/tau2/domains/airline/tools.py", '''
        class AirlineTools:
            @is_tool()
            def ping(self, n: int = 1) -> str:
                """Ping it.

                Args:
                    n: How often.
                """
        ''')
    _write(root, "src/tau2/agent/llm_agent.py", '''
        RULES = """
        Be kind.
        """.strip()
        TEMPLATE = "<r>{rules}</r>|{policy}"

        class LLMAgent:
            @property
            def system_prompt(self):
                return TEMPLATE.format(policy=self.domain_policy, rules=RULES)
        ''')
    _write(root, "src/tau2/user/user_simulator.py", '''
        GLOBAL_USER_SIM_GUIDELINES_PATH = DIR / "plain.md"
        GLOBAL_USER_SIM_GUIDELINES_PATH_TOOLS = DIR / "tools.md"
        PROMPT = "{guide}\\n<s>\\n{scene}\\n</s>"

        class UserSimulator:
            @property
            def system_prompt(self):
                guide = self.guidelines
                return PROMPT.format(guide=guide, scene=self.instructions)
        ''')
    _write(root, "src/tau2/evaluator/evaluator_nl_assertions.py", '''
        class NLAssertionsEvaluator:
            def evaluate_nl_assertions(cls, trajectory, nl_assertions):
                trajectory_str = " / ".join([f"{m.role}={m.content}" for m in trajectory])
                system_prompt = "Judge."
                user_prompt = f"T: {trajectory_str} A: {nl_assertions}"
        ''')
    return root


def test_words_follow_the_checkouts_templates(toy: Path) -> None:
    words = Tau2Words.load(toy, "airline")
    assert words.comparable
    assert words.agent_system_prompt("P") == "<r>Be kind.</r>|P"
    scenario = UserScenario(instructions="Go.")
    plain = words.user_system_prompt(scenario, has_tools=False)
    assert plain == "Be a user.\n<s>\nInstructions:\n\tGo.\n</s>"
    assert words.user_system_prompt(scenario, has_tools=True).startswith("Be a user with tools.\n<s>")
    trajectory = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]
    assert words.judge_messages(trajectory, ["x"]) == [
        {"role": "system", "content": "Judge."},
        {"role": "user", "content": "T: user=hi / assistant=None A: ['x']"}]
    assert [t["function"]["name"] for t in words.tool_schemas("assistant") or []] == ["ping"]
    assert words.tool_schemas("user") is None and words.tool_schemas("assistant", ["nope"]) is None


def test_words_hash_changes_when_a_read_file_changes(toy: Path) -> None:
    before = Tau2Words.load(toy, "airline").source
    (toy / "data/tau2/user_simulator/plain.md").write_text("Be another user.", encoding="utf-8")
    after = Tau2Words.load(toy, "airline").source
    assert before is not None and after is not None and before.sha256 != after.sha256


def test_words_refuse_a_checkout_whose_agent_prompt_is_shaped_otherwise(toy: Path) -> None:
    _write(toy, "src/tau2/agent/llm_agent.py", "class LLMAgent:\n    pass\n")
    with pytest.raises(CheckoutError, match=r"llm_agent.py.*no function LLMAgent.system_prompt.*8ebb749"):
        Tau2Words.load(toy, "airline")


def test_words_of_a_bare_folder_are_not_comparable_and_refuse_prompts(toy: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    _write(bare, "domains/airline/tasks.json", "[]")
    words = Tau2Words.load(bare, "airline")
    assert not words.comparable and words.source is None
    with pytest.raises(NotComparable, match="tau2-bench checkout"):
        words.agent_system_prompt("P")
    assert not Tau2Words.load(toy, "homenet").comparable
