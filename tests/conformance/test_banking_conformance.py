"""banking_knowledge's discoverable tools have upstream's structure (issue 29).

``test_tau2_conformance.py`` replays the whole recorded suite and checks the listed tools'
schemas; the 48 discoverable tools are never listed to a model, so their structure is checked
here against the recording's ``discoverable`` lists with the tool-words checker. Skips, with the
reason, without ``../shared``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlocal.tau2 import load_domain
from uxlocal.tau2.domains.banking_knowledge.discoverable import DISCOVERABLE_AGENT, DISCOVERABLE_USER
from uxlocal.tau2.tool_words import structure

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
RECORDING = SHARED / "conformance" / "tau2"
DATA = SHARED / "data" / "tau2"

pytestmark = pytest.mark.skipif(
    not (RECORDING / "banking_knowledge" / "tools_agent.json").is_file()
    or not (DATA / "domains" / "banking_knowledge").is_dir(),
    reason="needs ../shared (the recorded tau2 conformance suite and the tau2 data)",
)

OPTIONAL_ARGUMENT_SCHEMAS = {"file_credit_card_transaction_dispute_4829", "order_debit_card_5739"}
"""Tools with an optional number: upstream writes ``anyOf [number, null]``, our shared schema
builder (``uxlocal/tau2/schemas.py``) plain ``number`` that is not required; same validation."""


@pytest.mark.parametrize("seat", ["assistant", "user"])  # each seat's discoverable tools
def test_discoverable_tools_have_upstreams_structure(seat: str) -> None:
    domain = load_domain(DATA, "banking_knowledge", tools_dir=RECORDING)
    assert domain.tool_words is not None
    theirs = domain.tool_words.seats[seat].discoverable
    ours = {s.name: s for s in (DISCOVERABLE_AGENT if seat == "assistant" else DISCOVERABLE_USER).tools()}
    assert sorted(ours) == sorted(theirs)
    differ = sorted(name for name, spec in ours.items()
                    if structure(spec.openai_schema()) != structure(theirs[name]))
    assert set(differ) <= OPTIONAL_ARGUMENT_SCHEMAS, differ


def test_tool_cards_use_upstreams_words_when_the_domain_has_them() -> None:
    from uxlocal.tau2 import Environment

    env = Environment(load_domain(DATA, "banking_knowledge", tools_dir=RECORDING))
    card = env.call("unlock_discoverable_agent_tool", {"agent_tool_name": "update_transaction_rewards_3847"})
    assert card.ok and card.content.startswith(
        "Tool unlocked: update_transaction_rewards_3847\n"
        "Description: Update the rewards_earned field on a credit card transaction.\n\n"
    )
    assert (
        "  - new_rewards_earned: string (required) - The corrected rewards value (e.g., '6300 points')"
        in (card.content)
    )
