"""Telecom agent tools (spec tau2-telecom-banking.md §A.1): 13 tools, 6 hidden helpers, the domain.

The carrier's side: look a customer up, read lines and bills, change a line's state, ask for a
payment, sell extra data, hand over. The agent never sees the phone; what it changes reaches the
phone through ``device.sync``, which the environment runs after every call. "Today" is
fixed at 2025-02-25 so a replay is the same on any day.
"""

from __future__ import annotations

from typing import Annotated

from .db import Bill, Customer, Line, LineItem, Plan, TelecomDB, TelecomUserDB
from ...registry import DomainSpec
from .device import sync
from ...toolkit import ToolError, Toolkit, arg
from ...tools_common import register_common
from .user_tools import USER

AGENT = Toolkit("telecom")

TODAY = "2025-02-25"
LAST_MONTH = ("2025-01-01", "2025-01-31")
"""The billing period before today's; the overdue bill of the suspension tasks is for it."""
DRAFT_PERIOD = ("2025-03-01", "2025-03-31", "2025-03-01", "2025-03-15")
"""Period, issue and due dates of a Draft bill created by a refuel (next month's bill)."""

CustomerId = Annotated[str, arg("The customer's id, e.g. 'C1001'.")]
LineId = Annotated[str, arg("The line's id, e.g. 'L1001'.")]
BillId = Annotated[str, arg("The bill's id, e.g. 'B1001'.")]


def _customer(db: TelecomDB, customer_id: str) -> Customer:
    customer = db.customers.get(customer_id)
    if customer is None:
        raise ToolError(f"customer {customer_id} not found")
    return customer


def _own_line(db: TelecomDB, customer_id: str, line_id: str) -> Line:
    """The line, checked to belong to the customer: a tool never acts on someone else's line."""
    customer = _customer(db, customer_id)
    line = db.lines.get(line_id)
    if line is None:
        raise ToolError(f"line {line_id} not found")
    if line_id not in customer.line_ids:
        raise ToolError(f"line {line_id} does not belong to customer {customer_id}")
    return line


def _plan(db: TelecomDB, plan_id: str) -> Plan:
    plan = db.plans.get(plan_id)
    if plan is None:
        raise ToolError(f"plan {plan_id} not found")
    return plan


@AGENT.tool("read", "Find the customer who owns a phone number (the account's own number or any line).")
def get_customer_by_phone(
    db: TelecomDB, phone_number: Annotated[str, arg("A phone number, e.g. '555-123-2002'.")]
) -> Customer:
    """The account's primary number wins over a line number, as the carrier looks it up."""
    for customer in db.customers.values():
        if customer.phone_number == phone_number:
            return customer
    for line in db.lines.values():
        if line.phone_number == phone_number:
            owner = next((c for c in db.customers.values() if line.line_id in c.line_ids), None)
            if owner is not None:
                return owner
    raise ToolError(f"no customer with phone number {phone_number}")


@AGENT.tool("read", "Return a customer's account: contact details, lines, bills and payment methods.")
def get_customer_by_id(db: TelecomDB, customer_id: CustomerId) -> Customer:
    """Plain lookup by id."""
    return _customer(db, customer_id)


@AGENT.tool("read", "Find customers by full name and date of birth; returns a list, possibly empty.")
def get_customer_by_name(
    db: TelecomDB,
    full_name: Annotated[str, arg("The customer's full name; case does not matter.")],
    dob: Annotated[str, arg("Date of birth as YYYY-MM-DD.")],
) -> list[Customer]:
    """Name and birth date together identify a caller who does not know their number."""
    wanted = full_name.strip().lower()
    return [c for c in db.customers.values() if c.full_name.lower() == wanted and c.date_of_birth == dob]


@AGENT.tool("read", "Return a record by id: line (L…), device (D…), bill (B…), customer (C…), plan (P…).")
def get_details_by_id(
    db: TelecomDB, id: Annotated[str, arg("A record id; its first letter says which kind it is.")]
) -> Line | Bill | Customer | Plan | object:
    """Dispatch on the id's prefix, so the agent needs one tool for every kind of record."""
    tables = {"L": db.lines, "D": db.devices, "B": db.bills, "C": db.customers, "P": db.plans}
    table = tables.get(id[:1].upper())
    record = table.get(id) if table is not None else None
    if record is None:
        raise ToolError(f"no record with id {id}")
    return record


@AGENT.tool("read", "List a customer's bills, newest issue date first.")
def get_bills_for_customer(
    db: TelecomDB,
    customer_id: CustomerId,
    limit: Annotated[int, arg("Most bills to return; default 12.")] = 12,
) -> list[Bill]:
    """Newest first, because callers ask about the current or the last bill."""
    customer = _customer(db, customer_id)
    bills = [b for b in (db.bills.get(i) for i in customer.bill_ids) if b is not None]
    bills.sort(key=lambda b: b.issue_date, reverse=True)
    return bills[: max(limit, 0)]


@AGENT.tool("read", "Show a line's data use this cycle: used, plan limit, extra data bought, cycle end.")
def get_data_usage(db: TelecomDB, customer_id: CustomerId, line_id: LineId) -> dict[str, object]:
    """Everything the agent needs to decide whether a refuel fixes a data problem."""
    line = _own_line(db, customer_id, line_id)
    plan = _plan(db, line.plan_id)
    return {
        "line_id": line_id,
        "data_used_gb": line.data_used_gb,
        "data_limit_gb": plan.data_limit_gb,
        "data_refueling_gb": line.data_refueling_gb,
        "cycle_end_date": DRAFT_PERIOD[0],
    }


@AGENT.tool("write", "Suspend an active line, with a reason.")
def suspend_line(
    db: TelecomDB,
    customer_id: CustomerId,
    line_id: LineId,
    reason: Annotated[str, arg("Why the line is suspended.")],
) -> Line:
    """Only an Active line can be suspended; the suspension starts today."""
    if _own_line(db, customer_id, line_id).status != "Active":
        raise ToolError(f"line {line_id} is not active")
    line = db.lines.edit(line_id)
    line.status = "Suspended"
    line.suspension_start_date = TODAY
    return line


@AGENT.tool("write", "Resume a suspended (or pending) line so it has service again.")
def resume_line(db: TelecomDB, customer_id: CustomerId, line_id: LineId) -> Line:
    """Deliberately checks neither the contract end nor unpaid bills: the policy is the agent's job."""
    if _own_line(db, customer_id, line_id).status not in ("Suspended", "Pending Activation"):
        raise ToolError(f"line {line_id} is neither suspended nor pending activation")
    line = db.lines.edit(line_id)
    line.status = "Active"
    line.suspension_start_date = None
    return line


def _set_roaming(db: TelecomDB, customer_id: str, line_id: str, enabled: bool) -> str:
    if _own_line(db, customer_id, line_id).roaming_enabled != enabled:
        db.lines.edit(line_id).roaming_enabled = enabled
    return f"Roaming {'enabled' if enabled else 'disabled'} on line {line_id}"


@AGENT.tool("write", "Allow roaming on a line (no change if it is already allowed).")
def enable_roaming(db: TelecomDB, customer_id: CustomerId, line_id: LineId) -> str:
    """Idempotent: enabling twice succeeds and changes nothing."""
    return _set_roaming(db, customer_id, line_id, True)


@AGENT.tool("write", "Stop roaming on a line (no change if it is already off).")
def disable_roaming(db: TelecomDB, customer_id: CustomerId, line_id: LineId) -> str:
    """Idempotent, like ``enable_roaming``."""
    return _set_roaming(db, customer_id, line_id, False)


@AGENT.tool("write", "Ask the customer to pay one of their bills; it appears on their phone to accept.")
def send_payment_request(db: TelecomDB, customer_id: CustomerId, bill_id: BillId) -> str:
    """One request at a time: refused while any of the customer's bills awaits payment."""
    customer = _customer(db, customer_id)
    if bill_id not in customer.bill_ids or bill_id not in db.bills:
        raise ToolError(f"bill {bill_id} is not a bill of customer {customer_id}")
    for other in customer.bill_ids:
        bill = db.bills.get(other)
        if bill is not None and bill.status == "Awaiting Payment":
            raise ToolError(f"bill {other} is already awaiting payment")
    db.bills.edit(bill_id).status = "Awaiting Payment"
    return f"Payment request sent to the customer for bill {bill_id}"


@AGENT.tool("write", "Add extra data to a line for this cycle; it is charged on the customer's draft bill.")
def refuel_data(
    db: TelecomDB,
    customer_id: CustomerId,
    line_id: LineId,
    gb_amount: Annotated[float, arg("Gigabytes to add, more than 0.")],
) -> dict[str, object]:
    """The charge is amount x the plan's refuel price on the Draft bill (created if missing)."""
    if gb_amount <= 0:
        raise ToolError("gb_amount must be more than 0")
    line = _own_line(db, customer_id, line_id)
    plan = _plan(db, line.plan_id)
    charge = round(gb_amount * plan.data_refueling_price_per_gb, 2)
    edited = db.lines.edit(line_id)
    edited.data_refueling_gb = edited.data_refueling_gb + gb_amount
    bill = _draft_bill(db, customer_id)
    bill.line_items.append(
        LineItem(
            description=f"Data refuel {gb_amount} GB - Line {line.phone_number}",
            amount=charge,
            date=TODAY,
            item_type="Data Refuel",
        )
    )
    bill.total_due = round(bill.total_due + charge, 2)
    return {"line_id": line_id, "new_data_refueling_gb": edited.data_refueling_gb, "charge": charge}


def _draft_bill(db: TelecomDB, customer_id: str) -> Bill:
    """The customer's Draft bill for editing; a new one gets the next free ``B<n>`` id, never a random one."""
    customer = db.customers.get(customer_id)
    assert customer is not None
    for bill_id in customer.bill_ids:
        bill = db.bills.get(bill_id)
        if bill is not None and bill.status == "Draft":
            return db.bills.edit(bill_id)
    number = 1 + max((int(k[1:]) for k in db.bills if k[1:].isdigit()), default=1000)
    bill_id = f"B{number}"
    start, end, issue, due = DRAFT_PERIOD
    new = Bill(
        bill_id=bill_id, customer_id=customer_id, period_start=start, period_end=end,
        issue_date=issue, total_due=0.0, due_date=due, status="Draft",
    )  # fmt: skip
    db.bills.add(bill_id, new)
    db.customers.edit(customer_id).bill_ids.append(bill_id)
    return db.bills.edit(bill_id)


register_common(AGENT, with_calculate=False)


# --- hidden: task setup and assertions ----------------------------------------------------------


@AGENT.helper("Set how much data a line has used this cycle (setup only).")
def set_data_usage(db: TelecomDB, customer_id: str, line_id: str, data_used_gb: float) -> Line:
    """Puts a line over (or under) its allowance."""
    _own_line(db, customer_id, line_id)
    line = db.lines.edit(line_id)
    line.data_used_gb = data_used_gb
    return line


@AGENT.helper("Add an overdue bill for last month and suspend the line for it (setup only).")
def suspend_line_for_overdue_bill(
    db: TelecomDB, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool
) -> Line:
    """The overdue amount is the line's monthly plan price; ``contract_ended`` also ends the contract."""
    line = _own_line(db, customer_id, line_id)
    plan = _plan(db, line.plan_id)
    start, end = LAST_MONTH
    item = LineItem(
        description=f"{plan.name} - Line {line.phone_number}", amount=plan.price_per_month,
        date=start, item_type="Plan Charge",
    )  # fmt: skip
    bill = Bill(
        bill_id=new_bill_id, customer_id=customer_id, period_start=start, period_end=end,
        issue_date=start, total_due=plan.price_per_month, due_date="2025-01-15",
        line_items=[item], status="Overdue",
    )  # fmt: skip
    db.bills.add(new_bill_id, bill)
    db.customers.edit(customer_id).bill_ids.append(new_bill_id)
    edited = db.lines.edit(line_id)
    edited.status = "Suspended"
    edited.suspension_start_date = TODAY
    if contract_ended:
        edited.contract_end_date = end
    return edited


@AGENT.helper("Whether a line's extra data totals the expected amount (to 1e-6 GB).")
def assert_data_refueling_amount(
    db: TelecomDB, customer_id: str, line_id: str, expected_amount: float
) -> bool:
    """Env assertion: refuels must add up to exactly the amount the task allows."""
    return abs(_own_line(db, customer_id, line_id).data_refueling_gb - expected_amount) < 1e-6


@AGENT.helper("Whether a line has the expected status.")
def assert_line_status(db: TelecomDB, customer_id: str, line_id: str, expected_status: str) -> bool:
    """Env assertion on the carrier side."""
    return _own_line(db, customer_id, line_id).status == expected_status


@AGENT.helper("Whether a bill exists and is overdue.")
def assert_overdue_bill_exists(db: TelecomDB, overdue_bill_id: str) -> bool:
    """Env assertion: the suspension's bill is still unpaid."""
    bill = db.bills.get(overdue_bill_id)
    return bill is not None and bill.status == "Overdue"


@AGENT.helper("Whether a bill is absent or paid.")
def assert_no_overdue_bill(db: TelecomDB, overdue_bill_id: str) -> bool:
    """Env assertion: true when the bill never existed, which is how fixable tasks without one pass."""
    bill = db.bills.get(overdue_bill_id)
    return bill is None or bill.status == "Paid"


def _sync(agent_db: object, user_db: object) -> None:
    assert isinstance(agent_db, TelecomDB) and isinstance(user_db, TelecomUserDB)
    sync(agent_db, user_db)


DOMAIN = DomainSpec(
    name="telecom",
    agent_db=TelecomDB,
    agent_tools=AGENT,
    db_file="db.toml",
    user_db=TelecomUserDB,
    user_tools=USER,
    user_db_file="user_db.toml",
    policy_sections=(("main_policy", "main_policy.md"), ("tech_support_policy", "tech_support_manual.md")),
    sync=_sync,
)
