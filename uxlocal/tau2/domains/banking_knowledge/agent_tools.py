"""banking_knowledge agent tools (spec tau2-telecom-banking.md §B.2) and the domain itself.

Fourteen tools are always offered: look-ups, an e-mail change, the identity-verification log, the
transfer, and the four doors to the discoverable tools. The agent learns a discoverable tool's name
from the knowledge base, unlocks it (``unlock_discoverable_agent_tool``, which answers with the
tool's description and arguments) and calls it through ``call_discoverable_agent_tool`` with a JSON
string of arguments. It can also hand one of the user's discoverable tools to the user
(``give_discoverable_user_tool``), who then calls it on the same, shared DB.

Grading (``db.grading``, set for every environment by ``_prepare``): each discoverable call leaves
a row in ``agent_discoverable_tools`` keyed by the tool's name. At the pinned 8ebb749 every call
does, reads included, and numbers keep the type they were sent with; at 1.0.1 only write tools or
the task's gold read tools (``read_log_allowlist``) leave a row, and JSON numbers are parsed as
floats. A refusal by the discoverable tool still leaves the row (upstream logs any call that ran);
arguments that do not fit its signature do not.

Unlock state lives in ``db.unlocked_agent_tools`` (not hashed). Unlock and give are ``write`` tools
so that the reward's replay of the trajectory, which runs only writes, rebuilds that state.

Two seams for the other banking modules:

- the discoverable tool groups (``cards``: 24 credit-card tools,
  ``accounts``: 20 bank-account and debit-card tools) register into
  ``discoverable.DISCOVERABLE_AGENT`` when imported, which this module does;
- retrieval: ``retrieval.register_retrieval(AGENT)`` adds ``KB_search`` (BM25, the v1.0.0 ``bm25``
  variant; its tool finds ``documents/`` beside the DB file the snapshot came from), and every
  episode's info records the variant (``retrieval_info``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from . import accounts, cards  # noqa: F401  (import registers the 44 tools)
from .discoverable import (
    DISCOVERABLE_AGENT,
    DISCOVERABLE_USER,
    ArgumentsJson,
    parse_arguments_json,
    validated_kwargs,
)
from .db import NOW, BankingDB, BankingGrading, seed_of, seeded_id
from ...registry import Domain, DomainSpec
from .retrieval import DEFAULT_RETRIEVAL_VARIANT, register_retrieval, retrieval_info
from ...tasks import Task
from ...toolkit import ToolError, Toolkit, ToolSpec, arg
from .user_tools import USER

AGENT = Toolkit("banking_knowledge")


TransferReason = Literal[
    "fraud_or_security_concern", "account_closure_request", "deceased_account_holder",
    "legal_or_regulatory_matter", "account_ownership_dispute", "complex_billing_dispute",
    "abusive_customer_behavior", "third_party_inquiry", "technical_system_error",
    "unconfirmed_external_communication", "customer_demands_after_unavailable_offer_refusal",
    "kb_search_unsuccessful_customer_requests_transfer", "specialized_department_required",
    "accessibility_or_special_needs", "customer_frustrated_demands_human",
    "supervisor_request_service_complaint", "customer_requests_human_no_specific_reason",
    "request_completed_customer_wants_human_followup", "other",
]
"""The bank's transfer reason codes; the knowledge base says which one applies when."""

UserId = Annotated[str, arg("The customer's user id, e.g. '123' or 'lj82d4f1a9'.")]


def _rows(pairs: Iterable[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Rows as the agent reads them: the record id first, then the stored fields."""
    return [{"record_id": key, **row} for key, row in pairs]


def _matches(db: BankingDB, table: str, what: str, **equal: Any) -> list[dict[str, Any]] | str:
    found = db.table(table).find(**equal)
    return _rows(found) if found else f"No {what} found."


# --- always-listed look-ups and writes -------------------------------------------------------


@AGENT.tool("generic", "Hand the customer over to a human agent. Search the knowledge base first for the "
                       "reason code that applies; the summary tells the human what happened so far.")
def transfer_to_human_agents(
    db: BankingDB,
    summary: Annotated[str, arg("What the customer wants and what was tried before the transfer.")],
    reason: Annotated[TransferReason, arg("The transfer's reason code, as the knowledge base names it.")]
    = "other",
) -> str:
    """No state change; ACTION tasks check the call and its ``reason``."""
    return f"Transfer successful (reason: {reason}). A human agent will take over the conversation."


@AGENT.tool("read", "Return the current date and time, e.g. for the time_verified field of log_verification.")
def get_current_time(db: BankingDB) -> str:
    """Answer the frozen clock, so every episode and replay sees the same time."""
    return f"The current time is {NOW:%Y-%m-%d %H:%M:%S} EST."


@AGENT.tool("read", "Find a customer by user id; returns name, address, email, phone and date of birth.")
def get_user_information_by_id(db: BankingDB, user_id: UserId) -> list[dict[str, Any]] | str:
    """Exact match on the stored ``user_id``."""
    return _matches(db, "users", f"user with id {user_id!r}", user_id=user_id)


@AGENT.tool("read", "Find customers by full name (exact and case-sensitive); returns their profile.")
def get_user_information_by_name(
    db: BankingDB, customer_name: Annotated[str, arg("The customer's full name, e.g. 'Mia Smith'.")]
) -> list[dict[str, Any]] | str:
    """Exact match on ``name``, as upstream's query does."""
    return _matches(db, "users", f"user named {customer_name!r}", name=customer_name)


@AGENT.tool("read", "Find a customer by email address (exact match); returns their profile.")
def get_user_information_by_email(
    db: BankingDB, email: Annotated[str, arg("The email address on file.")]
) -> list[dict[str, Any]] | str:
    """Exact match on ``email``."""
    return _matches(db, "users", f"user with email {email!r}", email=email)


@AGENT.tool("write", "Replace a customer's email address.")
def change_user_email(
    db: BankingDB, user_id: UserId, new_email: Annotated[str, arg("The new email address.")]
) -> str:
    """Users are keyed by their id in ``db.json``."""
    if user_id not in db.users:
        raise ToolError(f"no user with id {user_id!r}")
    db.users.edit(user_id)["email"] = new_email
    return f"Email of user {user_id} changed to {new_email}."


@AGENT.tool("read", "List the referrals a customer has made (the customer is the referrer).")
def get_referrals_by_user(db: BankingDB, user_id: UserId) -> list[dict[str, Any]] | str:
    """Referrals whose ``referrer_id`` is the user."""
    return _matches(db, "referrals", f"referrals by user {user_id!r}", referrer_id=user_id)


@AGENT.tool("read", "List a customer's credit card transactions.")
def get_credit_card_transactions_by_user(db: BankingDB, user_id: UserId) -> list[dict[str, Any]] | str:
    """Every row of the transaction history with this ``user_id``, in stored order."""
    return _matches(db, "credit_card_transaction_history", f"credit card transactions for {user_id!r}",
                    user_id=user_id)


@AGENT.tool("read", "List a customer's credit card accounts: card type, opening date, balance, points.")
def get_credit_card_accounts_by_user(db: BankingDB, user_id: UserId) -> list[dict[str, Any]] | str:
    """Every credit card account with this ``user_id``."""
    return _matches(db, "credit_card_accounts", f"credit card accounts for {user_id!r}", user_id=user_id)


@AGENT.tool("write", "Record that you verified the customer's identity (after confirming two of: date of "
                     "birth, email, phone number, address). Pass the details exactly as they are on file.")
def log_verification(
    db: BankingDB,
    name: Annotated[str, arg("The customer's full name.")],
    user_id: UserId,
    address: Annotated[str, arg("The address on file.")],
    email: Annotated[str, arg("The email on file.")],
    phone_number: Annotated[str, arg("The phone number on file.")],
    date_of_birth: Annotated[str, arg("The date of birth on file, MM/DD/YYYY.")],
    time_verified: Annotated[str, arg("When you verified, as get_current_time gives it, e.g. "
                                      "'2025-11-14 03:40:00 EST'.")],
) -> str:
    """Store the strings verbatim under ``<user_id>_<time without spaces, colons, dashes>``.

    So the DB check compares exactly what the agent wrote.
    """
    key = f"{user_id}_" + time_verified.replace(" ", "_").replace(":", "").replace("-", "")
    if key in db.verification_history:
        raise ToolError(f"a verification for user {user_id} at {time_verified} is already logged")
    db.verification_history.add(key, {
        "name": name, "user_id": user_id, "address": address, "email": email,
        "phone_number": phone_number, "date_of_birth": date_of_birth, "time_verified": time_verified,
    })
    return f"Verification of {name} (user {user_id}) logged at {time_verified}."


# --- discoverable tools ------------------------------------------------------------------------


def describe_discoverable(spec: ToolSpec) -> str:
    """Describe a discoverable tool for the agent: its docstring, then one line per argument."""
    parameters = spec.openai_schema()["function"]["parameters"]
    required = set(parameters.get("required", []))
    lines = []
    for name, schema in parameters.get("properties", {}).items():
        kind = schema.get("type") or "/".join(o.get("type", "?") for o in schema.get("anyOf", [])) or "any"
        need = "required" if name in required else "optional"
        extra = f"; one of {', '.join(map(str, schema['enum']))}" if "enum" in schema else ""
        lines.append(f"  - {name} ({kind}, {need}{extra}): {schema.get('description', '')}".rstrip())
    args = "\n".join(lines) or "  (none)"
    return f"Tool: {spec.name}\nDescription: {spec.description}\nArguments:\n{args}"


def _unknown_agent_tool(name: str) -> ToolError:
    return ToolError(f"Unknown agent tool '{name}'. No such tool exists; check the name in the "
                     "knowledge base.")


@AGENT.tool("write", "Give the customer one of their discoverable tools named in the knowledge base, so "
                     "they can perform that action themselves (they call it with the same name).")
def give_discoverable_user_tool(
    db: BankingDB,
    discoverable_tool_name: Annotated[str, arg("The user tool's name, as the knowledge base writes it.")],
    arguments: ArgumentsJson = "{}",
) -> str:
    """Write a ``GIVEN`` row keyed by the tool's name only (giving it twice changes nothing)."""
    spec = DISCOVERABLE_USER.spec(discoverable_tool_name)
    if spec is None:
        raise ToolError(f"Unknown discoverable tool '{discoverable_tool_name}'.")
    given = parse_arguments_json(db, arguments)
    unexpected = sorted(set(given) - set(spec.args_model.model_fields))
    if unexpected:
        raise ToolError(f"{discoverable_tool_name} has no argument(s) {', '.join(unexpected)}")
    key = seeded_id(seed_of("user_discoverable_tool", discoverable_tool_name))
    if key not in db.user_discoverable_tools:
        db.user_discoverable_tools.add(key, {"tool_name": discoverable_tool_name, "status": "GIVEN"})
    shown = json.dumps(given) if given else "(the customer fills them in)"
    return (f"The customer can now use {discoverable_tool_name} (through call_discoverable_user_tool).\n"
            f"{describe_discoverable(spec)}\nSuggested arguments: {shown}")


@AGENT.tool("write", "Unlock an internal tool the knowledge base names for a procedure; the answer "
                     "describes the tool and its arguments. Then call it with call_discoverable_agent_tool.")
def unlock_discoverable_agent_tool(
    db: BankingDB, agent_tool_name: Annotated[str, arg("The tool's name as the knowledge base gives it, "
                                                       "e.g. 'get_all_user_accounts_by_user_id_3847'.")]
) -> str:
    """State in memory only (``db.unlocked_agent_tools``); the DB hash does not see it."""
    spec = DISCOVERABLE_AGENT.spec(agent_tool_name)
    if spec is None:
        raise _unknown_agent_tool(agent_tool_name)
    if agent_tool_name not in db.unlocked_agent_tools:
        db.unlocked_agent_tools.append(agent_tool_name)
    return (f"Unlocked {agent_tool_name}.\n{describe_discoverable(spec)}\n"
            f"Call it with call_discoverable_agent_tool(agent_tool_name='{agent_tool_name}', "
            f"arguments='<the arguments as a JSON object>').")


@AGENT.tool("write", "Call an internal tool you unlocked with unlock_discoverable_agent_tool.")
def call_discoverable_agent_tool(
    db: BankingDB,
    agent_tool_name: Annotated[str, arg("The unlocked tool's name.")],
    arguments: ArgumentsJson = "{}",
) -> object:
    """Validate, run, and log the call as the grading version says (module docstring)."""
    spec = DISCOVERABLE_AGENT.spec(agent_tool_name)
    if spec is None:
        raise _unknown_agent_tool(agent_tool_name)
    if agent_tool_name not in db.unlocked_agent_tools:
        raise ToolError(f"{agent_tool_name} is locked: call unlock_discoverable_agent_tool first.")
    kwargs = validated_kwargs(spec, parse_arguments_json(db, arguments))
    try:
        return spec.func(db, **kwargs)
    finally:
        _log_agent_call(db, spec)


def _log_agent_call(db: BankingDB, spec: ToolSpec) -> None:
    """One row per tool name; at 1.0.1 only writes and the task's gold reads are logged."""
    grading = db.grading
    if grading.later and spec.kind != "write" and spec.name not in grading.read_log_allowlist:
        return
    key = seeded_id(seed_of("agent_discoverable_tool", spec.name))
    if key not in db.agent_discoverable_tools:
        db.agent_discoverable_tools.add(key, {"tool_name": spec.name, "status": "CALLED"})


@AGENT.tool("read", "List the internal tools you unlocked in this conversation and those you have called.")
def list_discoverable_agent_tools(db: BankingDB) -> dict[str, list[str]]:
    """Read called tools from the DB log, so at 1.0.1 an unlogged read is not listed as called."""
    called = [row["tool_name"] for row in db.agent_discoverable_tools.values()]
    return {"unlocked": list(db.unlocked_agent_tools), "called": called}


# --- the domain ----------------------------------------------------------------------------------


def read_log_allowlist(task: Task | None) -> frozenset[str]:
    """Return the discoverable tools the task's gold calls (at 1.0.1 their reads stay logged)."""
    actions = (task.evaluation_criteria.actions or []) if task and task.evaluation_criteria else []
    return frozenset(str(a.arguments.get("agent_tool_name")) for a in actions
                     if a.name == "call_discoverable_agent_tool" and a.arguments.get("agent_tool_name"))


def _prepare(db: object, domain: Domain, task: Task | None) -> None:
    """Every environment (live, predicted, gold) grades as the run's version, with the task's allowlist."""
    assert isinstance(db, BankingDB)
    db.grading = BankingGrading(domain.tau2_version, read_log_allowlist(task))


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
    episode_info=retrieval_info(DEFAULT_RETRIEVAL_VARIANT),
)
