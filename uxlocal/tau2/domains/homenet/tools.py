"""Homenet tools: 7 agent tools + transfer, 2 user tools (router), and setup/assertion helpers.

Tools check what a real back end would (ids exist, an outage was in the customer's area, one
credit per outage, one open visit per customer) and leave judgement calls to the policy (whether
to troubleshoot during an outage, how much credit, whether to transfer), so a careless agent can
still do damage the DB check sees. Tool descriptions are short because the demo runs this domain
on a model with a 2k-token window.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from ...registry import DomainSpec
from ...toolkit import ToolError, Toolkit, arg
from ...tools_common import register_common
from .db import (
    AppliedCredit,
    Customer,
    HomenetDB,
    HomenetUserDB,
    Light,
    Outage,
    Plan,
    Router,
    RouterFault,
    Visit,
)

AGENT = Toolkit("homenet")
USER = Toolkit("homenet-user")

CustomerId = Annotated[str, arg("e.g. 'cust_101'")]
ROUTER_ID = "home_router"
"""The one router every homenet customer has on the user side."""
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_LIGHT_MEANING = {"green": "connected to the internet", "red": "no internet connection"}


def _customer(db: HomenetDB, customer_id: str) -> Customer:
    customer = db.customers.get(customer_id)
    if customer is None:
        raise ToolError(f"customer {customer_id} not found")
    return customer


@AGENT.tool("read", "Find an account by its email.")
def find_customer(db: HomenetDB, email: Annotated[str, arg("The account's email.")]) -> Customer:
    """Emails compare case-insensitively, as people type them."""
    wanted = email.strip().lower()
    for customer in db.customers.values():
        if customer.email.lower() == wanted:
            return customer
    raise ToolError(f"no account with email {email}")


@AGENT.tool("read", "List the plans with speed and monthly price.")
def list_plans(db: HomenetDB) -> list[Plan]:
    """All plans, in file order (slowest first)."""
    return list(db.plans.values())


@AGENT.tool("write", "Move a customer to another plan, effective now.")
def change_plan(
    db: HomenetDB, customer_id: CustomerId, plan_id: Annotated[str, arg("e.g. 'fiber_300'")]
) -> Customer:
    """Unknown plans and a change to the current plan are refused; price rules are the policy's."""
    current = _customer(db, customer_id)
    if plan_id not in db.plans:
        raise ToolError(f"plan {plan_id} not found")
    if current.plan_id == plan_id:
        raise ToolError(f"customer {customer_id} is already on {plan_id}")
    customer = db.customers.edit(customer_id)
    customer.plan_id = plan_id
    return customer


@AGENT.tool("read", "List ongoing and past outages in a postcode.")
def check_outages(db: HomenetDB, postcode: Annotated[str, arg("e.g. '40121'")]) -> list[Outage]:
    """An empty list means no outage was ever recorded there."""
    return [o for o in db.outages.values() if o.postcode == postcode.strip()]


@AGENT.tool("write", "Credit an account for a resolved outage.")
def apply_outage_credit(
    db: HomenetDB,
    customer_id: CustomerId,
    outage_id: Annotated[str, arg("e.g. 'out_7'")],
    amount: Annotated[float, arg("e.g. 10.0")],
) -> Customer:
    """The amount comes from the policy (per full day, capped); the tool only blocks the impossible."""
    current = _customer(db, customer_id)
    if amount <= 0:
        raise ToolError("the amount must be above 0")
    outage = db.outages.get(outage_id)
    if outage is None or outage.postcode != current.postcode:
        raise ToolError(f"outage {outage_id} not found in postcode {current.postcode}")
    if outage.status != "resolved":
        raise ToolError(f"outage {outage_id} is still ongoing")
    if any(c.outage_id == outage_id for c in current.credits):
        raise ToolError(f"customer {customer_id} was already credited for {outage_id}")
    customer = db.customers.edit(customer_id)
    customer.credits.append(AppliedCredit(outage_id=outage_id, amount=round(amount, 2)))
    customer.balance_due = round(customer.balance_due - amount, 2)
    return customer


@AGENT.tool("read", "Test a customer's line: 'ok' or 'fault'.")
def run_line_test(db: HomenetDB, customer_id: CustomerId) -> dict[str, str]:
    """What the exchange sees, which the customer's router light cannot tell apart from a frozen router."""
    return {"customer_id": customer_id, "line": _customer(db, customer_id).line_status}


@AGENT.tool("write", "Book a technician visit.")
def book_technician(
    db: HomenetDB, customer_id: CustomerId, date: Annotated[str, arg("YYYY-MM-DD")]
) -> Visit:
    """Visit ids count up (``visit_1``, …) so replays of the same calls give the same ids."""
    _customer(db, customer_id)
    if not _DATE.match(date):
        raise ToolError(f"date {date!r} is not in the form YYYY-MM-DD")
    if any(v.customer_id == customer_id for v in db.visits.values()):
        raise ToolError(f"customer {customer_id} already has a technician visit booked")
    visit = Visit(visit_id=f"visit_{len(db.visits) + 1}", customer_id=customer_id, date=date)
    db.visits.add(visit.visit_id, visit)
    return visit


register_common(AGENT, with_calculate=False)


@AGENT.helper("Whether a customer is on the expected plan.")
def assert_plan(db: HomenetDB, customer_id: str, expected_plan_id: str) -> bool:
    """Env assertion; an unknown customer fails it."""
    customer = db.customers.get(customer_id)
    return customer is not None and customer.plan_id == expected_plan_id


# --- the customer's side --------------------------------------------------------------------------


def _router_view(router: Router) -> dict[str, Any]:
    """What the customer can see: the light and what it means, never the hidden fault."""
    return {"status_light": router.light, "meaning": _LIGHT_MEANING[router.light],
            "restarts_today": router.restarts}


def _router(db: HomenetUserDB) -> Router:
    router = db.routers.get(ROUTER_ID)
    if router is None:
        raise ToolError("no router found")
    return router


@USER.tool("read", "Look at your router's status light.")
def check_router(db: HomenetUserDB) -> dict[str, Any]:
    """Reading the light changes nothing."""
    return _router_view(_router(db))


@USER.tool("write", "Turn your router off and on again.")
def restart_router(db: HomenetUserDB) -> dict[str, Any]:
    """A restart clears a frozen router; a line fault outside the home stays."""
    _router(db)
    router = db.routers.edit(ROUTER_ID)
    router.restarts += 1
    if router.fault == "frozen":
        router.fault = "none"
    router.light = "green" if router.fault == "none" else "red"
    return _router_view(router)


@USER.helper("Give the router a fault, which turns its light red (setup only).")
def set_router_fault(db: HomenetUserDB, fault: RouterFault) -> dict[str, Any]:
    """Tasks start from a healthy router file and break it here, so the file stays one state."""
    _router(db)
    router = db.routers.edit(ROUTER_ID)
    router.fault = fault
    router.light = "green" if fault == "none" else "red"
    return _router_view(router)


@USER.helper("Whether the router's light shows the expected colour.")
def assert_router_light(db: HomenetUserDB, expected_light: Light) -> bool:
    """Env assertion on the user side."""
    router = db.routers.get(ROUTER_ID)
    return router is not None and router.light == expected_light


DOMAIN = DomainSpec(
    name="homenet",
    agent_db=HomenetDB,
    agent_tools=AGENT,
    db_file="db.toml",
    user_db=HomenetUserDB,
    user_tools=USER,
    user_db_file="user_db.json",
)
