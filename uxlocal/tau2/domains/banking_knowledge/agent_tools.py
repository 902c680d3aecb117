"""banking_knowledge agent tools (spec tau2-telecom-banking.md §B.2) and the domain itself.

Fourteen tools are always offered: look-ups, an e-mail change, the identity-verification log, the
transfer, and the four doors to the discoverable tools (``doors.py``), plus ``KB_search``.

As upstream's, the tools take their arguments as sent (``DomainSpec.upstream_calls``): a missing or
unknown argument is Python's ``TypeError`` and any exception is the call's error text; refusals
are ordinary answers (``Error: …`` or ``Failed to …`` with no error flag). Answers are upstream's
text formats (``records.py``): a look-up lists its rows as ``field: value`` lines.

Grading (``db.grading``, set for every environment by ``_prepare``): each discoverable call through
the door leaves a row in ``agent_discoverable_tools`` keyed by the tool's name. At the pinned
8ebb749 every such call does, reads included; at 1.0.1 only write tools or the task's gold read
tools (``read_log_allowlist``) leave a row, and JSON numbers are parsed as floats.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from ...registry import Domain, DomainSpec
from ...tasks import Task
from ...toolkit import arg
from . import bank_accounts, credit_cards, debit_cards, service  # noqa: F401  (import registers the 44 tools)
from .db import NOW, BankingDB, BankingGrading
from .discoverable import DISCOVERABLE_AGENT, DISCOVERABLE_USER, DiscoverableWords
from .doors import AGENT
from .records import add_row, rows_where
from .retrieval import DEFAULT_RETRIEVAL_VARIANT, register_retrieval, retrieval_info
from .user_tools import USER

TransferReason = Literal[
    "fraud_or_security_concern",
    "account_closure_request",
    "deceased_account_holder",
    "legal_or_regulatory_matter",
    "account_ownership_dispute",
    "complex_billing_dispute",
    "abusive_customer_behavior",
    "third_party_inquiry",
    "technical_system_error",
    "unconfirmed_external_communication",
    "customer_demands_after_unavailable_offer_refusal",
    "kb_search_unsuccessful_customer_requests_transfer",
    "specialized_department_required",
    "accessibility_or_special_needs",
    "customer_frustrated_demands_human",
    "supervisor_request_service_complaint",
    "customer_requests_human_no_specific_reason",
    "request_completed_customer_wants_human_followup",
    "other",
]
"""The bank's transfer reason codes; the knowledge base says which one applies when."""

UserId = Annotated[str, arg("The customer's user id, e.g. '123' or 'lj82d4f1a9'.")]


@AGENT.tool(
    "generic",
    "Hand the customer over to a human agent. Search the knowledge base first for the "
    "reason code that applies; the summary tells the human what happened so far.",
)
def transfer_to_human_agents(
    db: BankingDB,
    summary: Annotated[str, arg("What the customer wants and what was tried before the transfer.")],
    reason: Annotated[
        TransferReason, arg("The transfer's reason code, as the knowledge base names it.")
    ] = "other",
) -> str:
    """No state change; ACTION tasks check the call and its ``reason``."""
    valid = list(get_args(TransferReason))
    if reason not in valid:
        return f"Error: Invalid transfer reason '{reason}'. Must be one of: {', '.join(valid)}"
    return f"Transfer successful (reason: {reason}). A human agent will assist you shortly."


@AGENT.tool("read", "Return the current date and time, e.g. for the time_verified field of log_verification.")
def get_current_time(db: BankingDB) -> str:
    """Answer the frozen clock, so every episode and replay sees the same time."""
    return f"The current time is {NOW:%Y-%m-%d %H:%M:%S} EST."


@AGENT.tool("read", "Find a customer by user id; returns name, address, email, phone and date of birth.")
def get_user_information_by_id(db: BankingDB, user_id: UserId) -> str:
    """Exact match on the stored ``user_id``."""
    return rows_where(db, "users", "user_id", user_id)


@AGENT.tool("read", "Find customers by full name (exact and case-sensitive); returns their profile.")
def get_user_information_by_name(
    db: BankingDB, customer_name: Annotated[str, arg("The customer's full name, e.g. 'Mia Smith'.")]
) -> str:
    """Exact match on ``name``."""
    return rows_where(db, "users", "name", customer_name)


@AGENT.tool("read", "Find a customer by email address (exact match); returns their profile.")
def get_user_information_by_email(
    db: BankingDB, email: Annotated[str, arg("The email address on file.")]
) -> str:
    """Exact match on ``email``."""
    return rows_where(db, "users", "email", email)


@AGENT.tool("write", "Replace a customer's email address.")
def change_user_email(
    db: BankingDB, user_id: UserId, new_email: Annotated[str, arg("The new email address.")]
) -> str:
    """Users are keyed by their id in ``db.json``."""
    if not db.has_row("users", user_id):
        return f"Error: User with ID '{user_id}' not found."
    db.users.edit(user_id)["email"] = new_email
    return f"Email updated successfully.\n  - User ID: {user_id}\n  - New Email: {new_email}"


@AGENT.tool("read", "List the referrals a customer has made (the customer is the referrer).")
def get_referrals_by_user(db: BankingDB, user_id: UserId) -> str:
    """Referrals whose ``referrer_id`` is the user."""
    return rows_where(db, "referrals", "referrer_id", user_id)


@AGENT.tool("read", "List a customer's credit card transactions.")
def get_credit_card_transactions_by_user(db: BankingDB, user_id: UserId) -> str:
    """Every row of the transaction history with this ``user_id``, in stored order."""
    return rows_where(db, "credit_card_transaction_history", "user_id", user_id)


@AGENT.tool("read", "List a customer's credit card accounts: card type, opening date, balance, points.")
def get_credit_card_accounts_by_user(db: BankingDB, user_id: UserId) -> str:
    """Every credit card account with this ``user_id``."""
    return rows_where(db, "credit_card_accounts", "user_id", user_id)


@AGENT.tool(
    "write",
    "Record that you verified the customer's identity (after confirming two of: date of "
    "birth, email, phone number, address). Pass the details exactly as they are on file.",
)
def log_verification(
    db: BankingDB,
    name: Annotated[str, arg("The customer's full name.")],
    user_id: UserId,
    address: Annotated[str, arg("The address on file.")],
    email: Annotated[str, arg("The email on file.")],
    phone_number: Annotated[str, arg("The phone number on file.")],
    date_of_birth: Annotated[str, arg("The date of birth on file, MM/DD/YYYY.")],
    time_verified: Annotated[
        str, arg("When you verified, as get_current_time gives it, e.g. '2025-11-14 03:40:00 EST'.")
    ],
) -> str:
    """Store the strings verbatim under ``<user_id>_<time without spaces, colons, dashes>``.

    So the DB check compares exactly what the agent wrote; a second log at the same time is refused.
    """
    key = f"{user_id}_" + time_verified.replace(" ", "_").replace(":", "").replace("-", "")
    row = {
        "name": name,
        "user_id": user_id,
        "address": address,
        "email": email,
        "phone_number": phone_number,
        "date_of_birth": date_of_birth,
        "time_verified": time_verified,
    }
    if not add_row(db, "verification_history", key, row):
        return "Failed to log verification: Record may already exist."
    return (
        f"Verification logged successfully.\n  - User: {name} (ID: {user_id})\n"
        f"  - Verified at: {time_verified}"
    )


# --- the domain ----------------------------------------------------------------------------------


def read_log_allowlist(task: Task | None) -> frozenset[str]:
    """Return the discoverable tools the task's gold calls (at 1.0.1 their reads stay logged)."""
    actions = (task.evaluation_criteria.actions or []) if task and task.evaluation_criteria else []
    return frozenset(
        str(a.arguments.get("agent_tool_name"))
        for a in actions
        if a.name == "call_discoverable_agent_tool" and a.arguments.get("agent_tool_name")
    )


def _prepare(db: object, domain: Domain, task: Task | None) -> None:
    """Every environment grades as the run's version, with the task's allowlist and the domain's words."""
    assert isinstance(db, BankingDB)
    db.grading = BankingGrading(domain.tau2_version, read_log_allowlist(task))
    db.words = DiscoverableWords(domain.tool_words)


register_retrieval(AGENT)

DOMAIN = DomainSpec(
    name="banking_knowledge",
    agent_db=BankingDB,
    agent_tools=AGENT,
    db_file="db.json",
    user_tools=USER,
    shared_db=True,
    policy_file="prompts/classic_rag_bm25_no_grep.md",
    policy_components="prompts/components",
    task_glob="tasks/task_*.json",
    prepare_db=_prepare,
    unknown_user_tools_mean_none=True,
    tool_errors_count=False,
    action_match_as_upstream=True,
    unlisted_tools={"assistant": DISCOVERABLE_AGENT, "user": DISCOVERABLE_USER},
    episode_info=retrieval_info(DEFAULT_RETRIEVAL_VARIANT),
)
