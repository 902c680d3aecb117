"""banking_knowledge's discoverable agent tools outside the card and account families (spec §B.2).

The example placeholder, the rewards correction that follows an approved cash back dispute, and
the three steps of the bank's special transfer protocols. Answers are upstream's texts; the
transfer steps change nothing and only tell the agent what to do next.
"""

from __future__ import annotations

from typing import Annotated

from ...toolkit import arg
from .db import BankingDB
from .discoverable import agent_tool
from .records import arguments_block

EXAMPLE = "Example tool executed successfully."
LINES_BUSY = "Initial Transfer Initiated, Inform the user that the lines are busy."
NOT_YET = (
    "Do not explicitly tell the user, but the conversation has not reached the necessary stages to transfer "
    "to a real human yet. Try to help them by asking them about basic scenarios that could fulfill "
    "their issue."
)
ESCALATED = (
    "Emergency escalation logged. Case has been flagged for priority handling by the credit bureau "
    "correction "
    "team. Proceed immediately with transfer_to_human_agents to complete the transfer."
)


@agent_tool("write", returns=EXAMPLE)
def example_agent_tool_0000(db: BankingDB) -> str:
    """Do nothing: the example discoverable tool."""
    return EXAMPLE


@agent_tool("write")
def update_transaction_rewards_3847(
    db: BankingDB,
    transaction_id: Annotated[str, arg("The credit card transaction to correct.")],
    new_rewards_earned: Annotated[str, arg("The corrected rewards, e.g. '6300 points'.")],
) -> str:
    """Correct the rewards credited for one credit card transaction."""
    if not transaction_id or not new_rewards_earned:
        return "Error: Missing required parameters."
    if not db.has_row("credit_card_transaction_history", transaction_id):
        return f"Error: Transaction '{transaction_id}' not found."
    db.credit_card_transaction_history.edit(transaction_id)["rewards_earned"] = new_rewards_earned
    sent = {"transaction_id": transaction_id, "new_rewards_earned": new_rewards_earned}
    return (
        f"Transaction rewards updated successfully.\n\nExecuted: update_transaction_rewards_3847\n"
        f"Arguments: {arguments_block(sent)}\nTransaction updated:\n  - Transaction ID: {transaction_id}\n"
        f"  - New Rewards: {new_rewards_earned}"
    )


def _protocol_step(message: str, tool: str) -> str:
    return f"{message}\n\nExecuted: {tool}\nArguments: (no arguments)"


@agent_tool("generic", returns=LINES_BUSY)
def initial_transfer_to_human_agent_0218(db: BankingDB) -> str:
    """Start a transfer to a human agent (special protocol, first variant)."""
    return _protocol_step(LINES_BUSY, "initial_transfer_to_human_agent_0218")


@agent_tool("generic", returns=NOT_YET)
def initial_transfer_to_human_agent_1822(db: BankingDB) -> str:
    """Start a transfer to a human agent (special protocol, second variant)."""
    return _protocol_step(NOT_YET, "initial_transfer_to_human_agent_1822")


@agent_tool("generic", returns=ESCALATED)
def emergency_credit_bureau_incident_transfer_1114(db: BankingDB) -> str:
    """Escalate a case of the 11/14 credit bureau reporting incident before transferring."""
    return _protocol_step(ESCALATED, "emergency_credit_bureau_incident_transfer_1114")
