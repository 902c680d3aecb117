"""Retail agent tools (spec §B.4.4): 16 tools, their checks and their DB effects.

Every write tool checks everything first and mutates last, so a refused call leaves the DB as it
was. Two upstream behaviours are kept on purpose for score parity with tau2 (spec §B.5.2):

- ``modify_pending_order_items`` copies price and options of the *last* new variant onto every
  swapped item (the payment difference is still computed per item);
- ``cancel_pending_order`` refunds each ``payment`` entry of the order, gift cards at once.

Gold and predicted replays run this same code, so neither quirk can make a correct run fail.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from ...db_common import Address
from .db import GiftCard, Order, PaymentMethod, Product, RetailDB, Transaction, User, Variant
from ...registry import DomainSpec
from ...toolkit import ToolError, Toolkit, arg
from ...tools_common import register_common

AGENT = Toolkit("retail", qualifier="RetailTools")

CANCEL_REASONS = ("no longer needed", "ordered by mistake")

OrderId = Annotated[str, arg("The order id, with its leading '#', e.g. '#W0000000'.")]
UserId = Annotated[str, arg("The user id, e.g. 'sara_doe_496'.")]
ProductId = Annotated[str, arg("The product id, e.g. '6086499569'.")]
ItemId = Annotated[str, arg("The item (variant) id, e.g. '1008292230'.")]
ItemIds = Annotated[list[str], arg("Item ids from the order; list an id twice to act on two units of it.")]
NewItemIds = Annotated[
    list[str], arg("Replacement item ids, position by position; each must be a variant of the same product.")
]
PaymentMethodId = Annotated[
    str,
    arg("A payment method id from the user's profile, e.g. 'credit_card_0000000' or 'gift_card_0000000'."),
]
Address1 = Annotated[str, arg("First address line, e.g. '123 Main St'.")]
Address2 = Annotated[str, arg("Second address line, e.g. 'Apt 1'; an empty string if none.")]
City = Annotated[str, arg("City, e.g. 'San Francisco'.")]
State = Annotated[str, arg("State or region code, e.g. 'CA'.")]
Country = Annotated[str, arg("Country, e.g. 'USA'.")]
Zip = Annotated[str, arg("Postal code, e.g. '12345'.")]


# --- lookups shared by the tools ------------------------------------------------------------


def _order(db: RetailDB, order_id: str) -> Order:
    order = db.orders.get(order_id)
    if order is None:
        raise ToolError(f"order {order_id} not found")
    return order


def _user(db: RetailDB, user_id: str) -> User:
    user = db.users.get(user_id)
    if user is None:
        raise ToolError(f"user {user_id} not found")
    return user


def _payment_method(user: User, payment_method_id: str) -> PaymentMethod:
    method = user.payment_methods.get(payment_method_id)
    if method is None:
        raise ToolError(f"payment method {payment_method_id} not found in the user's profile")
    return method


def _require_status(
    order: Order, *, exact: str | None = None, contains: str | None = None, action: str
) -> None:
    """Status gates differ per tool: some need exactly 'pending', address/payment edits any 'pending…'."""
    if (exact is not None and order.status != exact) or (
        contains is not None and contains not in order.status
    ):
        raise ToolError(f"cannot {action}: order {order.order_id} is '{order.status}'")


def _require_items(order: Order, item_ids: list[str]) -> None:
    """Each id must occur in the order at least as often as it is listed."""
    if not item_ids:
        raise ToolError("no item ids given")
    in_order = [item.item_id for item in order.items]
    for item_id in set(item_ids):
        if item_ids.count(item_id) > in_order.count(item_id):
            raise ToolError(f"item {item_id} not found in order {order.order_id} (often enough)")


def _price_difference(
    db: RetailDB, order: Order, item_ids: list[str], new_item_ids: list[str], *, must_differ: bool
) -> tuple[float, Variant]:
    """Total new-minus-old price over the pairs, and the last new variant looked up."""
    if len(item_ids) != len(new_item_ids):
        raise ToolError("item_ids and new_item_ids must have the same length")
    difference, last = 0.0, None
    for old_id, new_id in zip(item_ids, new_item_ids, strict=True):
        if must_differ and old_id == new_id:
            raise ToolError(f"new item {new_id} is the same as the old one")
        old = next(item for item in order.items if item.item_id == old_id)
        product = db.products.get(old.product_id)
        variant = product.variants.get(new_id) if product else None
        if variant is None or not variant.available:
            raise ToolError(f"new item {new_id} is not an available variant of product {old.product_id}")
        difference += variant.price - old.price
        last = variant
    assert last is not None
    return round(difference, 2), last


def _move_gift_card(db: RetailDB, user_id: str, method_id: str, delta: float) -> None:
    """Add ``delta`` to a gift card's balance (negative to charge); other methods are untouched."""
    user = db.users.get(user_id)
    if user is None or not isinstance(user.payment_methods.get(method_id), GiftCard):
        return
    card = db.users.edit(user_id).payment_methods[method_id]
    assert isinstance(card, GiftCard)
    card.balance = round(card.balance + delta, 2)


def _require_gift_card_covers(method: PaymentMethod, amount: float) -> None:
    if isinstance(method, GiftCard) and method.balance < amount:
        raise ToolError(f"gift card {method.id} balance {method.balance} does not cover {amount}")


# --- read tools -------------------------------------------------------------------------------


@AGENT.tool("read", "Find a user's id from their first name, last name and zip code.")
def find_user_id_by_name_zip(
    db: RetailDB,
    first_name: Annotated[str, arg("First name, e.g. 'John'.")],
    last_name: Annotated[str, arg("Last name, e.g. 'Doe'.")],
    zip: Zip,  # noqa: A002 - the argument name is part of the tau2 tool interface
) -> str:
    """Names match case-insensitively, the zip exactly."""
    for user in db.users.values():
        if (user.name.first_name.lower(), user.name.last_name.lower(), user.address.zip) == (
            first_name.lower(),
            last_name.lower(),
            zip,
        ):
            return user.user_id
    raise ToolError("no user with that name and zip code")


@AGENT.tool("read", "Find a user's id from their email address.")
def find_user_id_by_email(db: RetailDB, email: Annotated[str, arg("Email, e.g. 'john@example.com'.")]) -> str:
    """Case-insensitive match."""
    for user in db.users.values():
        if user.email.lower() == email.lower():
            return user.user_id
    raise ToolError("no user with that email")


@AGENT.tool("read", "Show an order: items, status, address, fulfillments and payment history.")
def get_order_details(db: RetailDB, order_id: OrderId) -> Order:
    """Return the order record as stored."""
    return _order(db, order_id)


@AGENT.tool("read", "Show a product with all its variants (options, price, availability).")
def get_product_details(db: RetailDB, product_id: ProductId) -> Product:
    """Return the product record as stored."""
    product = db.products.get(product_id)
    if product is None:
        raise ToolError(f"product {product_id} not found")
    return product


@AGENT.tool("read", "Show one item (variant): its options, price and availability.")
def get_item_details(db: RetailDB, item_id: ItemId) -> Variant:
    """Search every product, since item ids are unique across the catalogue."""
    for product in db.products.values():
        if item_id in product.variants:
            return product.variants[item_id]
    raise ToolError(f"item {item_id} not found")


@AGENT.tool("read", "Show a user's profile: name, address, email, payment methods and order ids.")
def get_user_details(db: RetailDB, user_id: UserId) -> User:
    """Return the user record as stored."""
    return _user(db, user_id)


@AGENT.tool("read", "List every product type in the store with its product id.")
def list_all_product_types(db: RetailDB) -> str:
    """Name → product id, sorted by name, as one JSON object."""
    return json.dumps(dict(sorted((p.name, p.product_id) for p in db.products.values())))


# --- write tools ------------------------------------------------------------------------------


@AGENT.tool(
    "write",
    "Cancel a pending order. The reason must be 'no longer needed' or 'ordered by mistake'. "
    "Every payment is refunded to its method; gift cards are credited at once.",
)
def cancel_pending_order(
    db: RetailDB,
    order_id: OrderId,
    reason: Annotated[str, arg("Either 'no longer needed' or 'ordered by mistake'.")],
) -> Order:
    """Only orders exactly 'pending' can be cancelled (not after an item change)."""
    order = _order(db, order_id)
    _require_status(order, exact="pending", action="cancel")
    if reason not in CANCEL_REASONS:
        raise ToolError(f"reason must be one of: {', '.join(repr(r) for r in CANCEL_REASONS)}")
    payments = [p for p in order.payment_history if p.transaction_type == "payment"]
    for payment in payments:
        _move_gift_card(db, order.user_id, payment.payment_method_id, payment.amount)
    order = db.orders.edit(order_id)
    order.payment_history.extend(
        Transaction(transaction_type="refund", amount=p.amount, payment_method_id=p.payment_method_id)
        for p in payments
    )
    order.status = "cancelled"
    order.cancel_reason = reason
    return order


@AGENT.tool(
    "write",
    "Request an exchange of delivered items for other variants of the same products. Give every item "
    "in one call. The price difference is settled with the given payment method.",
)
def exchange_delivered_order_items(
    db: RetailDB,
    order_id: OrderId,
    item_ids: ItemIds,
    new_item_ids: NewItemIds,
    payment_method_id: PaymentMethodId,
) -> Order:
    """Record the request only; no money moves until the exchange is processed."""
    order = _order(db, order_id)
    _require_status(order, exact="delivered", action="exchange items")
    _require_items(order, item_ids)
    difference, _ = _price_difference(db, order, item_ids, new_item_ids, must_differ=False)
    method = _payment_method(_user(db, order.user_id), payment_method_id)
    _require_gift_card_covers(method, difference)
    order = db.orders.edit(order_id)
    order.status = "exchange requested"
    order.exchange_items = sorted(item_ids)
    order.exchange_new_items = sorted(new_item_ids)
    order.exchange_payment_method_id = payment_method_id
    order.exchange_price_difference = difference
    return order


@AGENT.tool("write", "Change the shipping address of a pending order.")
def modify_pending_order_address(
    db: RetailDB,
    order_id: OrderId,
    address1: Address1,
    address2: Address2,
    city: City,
    state: State,
    country: Country,
    zip: Zip,  # noqa: A002
) -> Order:
    """Allow the change while the status still says pending, even after an item change."""
    _require_status(_order(db, order_id), contains="pending", action="change the address")
    order = db.orders.edit(order_id)
    order.address = Address(
        address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
    )
    return order


@AGENT.tool(
    "write",
    "Swap items of a pending order for other variants of the same products. Can be done only once per "
    "order, so give every item in one call. The price difference is charged or refunded.",
)
def modify_pending_order_items(
    db: RetailDB,
    order_id: OrderId,
    item_ids: ItemIds,
    new_item_ids: NewItemIds,
    payment_method_id: PaymentMethodId,
) -> Order:
    """Leave the order 'pending (item modified)', which blocks further item changes and cancelling."""
    order = _order(db, order_id)
    _require_status(order, exact="pending", action="change items")
    _require_items(order, item_ids)
    difference, last_variant = _price_difference(db, order, item_ids, new_item_ids, must_differ=True)
    method = _payment_method(_user(db, order.user_id), payment_method_id)
    _require_gift_card_covers(method, difference)
    _move_gift_card(db, order.user_id, payment_method_id, -difference)
    order = db.orders.edit(order_id)
    kind: Literal["payment", "refund"] = "payment" if difference > 0 else "refund"
    order.payment_history.append(
        Transaction(transaction_type=kind, amount=abs(difference), payment_method_id=payment_method_id)
    )
    for old_id, new_id in zip(item_ids, new_item_ids, strict=True):
        item = next(i for i in order.items if i.item_id == old_id)
        item.item_id = new_id
        # tau2 parity: price and options come from the last variant looked up (module docstring)
        item.price = last_variant.price
        item.options = dict(last_variant.options)
    order.status = "pending (item modified)"
    return order


@AGENT.tool(
    "write",
    "Pay for a pending order with a different payment method; the old payment is refunded.",
)
def modify_pending_order_payment(
    db: RetailDB, order_id: OrderId, payment_method_id: PaymentMethodId
) -> Order:
    """Needs exactly one existing payment; a gift card must cover the whole amount."""
    order = _order(db, order_id)
    _require_status(order, contains="pending", action="change the payment method")
    method = _payment_method(_user(db, order.user_id), payment_method_id)
    history = order.payment_history
    if len(history) != 1 or history[0].transaction_type != "payment":
        raise ToolError("the order must have exactly one payment to change its payment method")
    old = history[0]
    if old.payment_method_id == payment_method_id:
        raise ToolError("the new payment method is the one already used")
    _require_gift_card_covers(method, old.amount)
    _move_gift_card(db, order.user_id, payment_method_id, -old.amount)
    _move_gift_card(db, order.user_id, old.payment_method_id, old.amount)
    order = db.orders.edit(order_id)
    order.payment_history.extend(
        [
            Transaction(transaction_type="payment", amount=old.amount, payment_method_id=payment_method_id),
            Transaction(
                transaction_type="refund", amount=old.amount, payment_method_id=old.payment_method_id
            ),
        ]
    )
    return order


@AGENT.tool("write", "Change a user's default address (existing orders keep theirs).")
def modify_user_address(
    db: RetailDB,
    user_id: UserId,
    address1: Address1,
    address2: Address2,
    city: City,
    state: State,
    country: Country,
    zip: Zip,  # noqa: A002
) -> User:
    """Orders are not touched; use modify_pending_order_address for those."""
    _user(db, user_id)
    user = db.users.edit(user_id)
    user.address = Address(
        address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
    )
    return user


@AGENT.tool(
    "write",
    "Request a return of delivered items. Give every item in one call. The refund goes to the original "
    "payment method or to one of the user's gift cards.",
)
def return_delivered_order_items(
    db: RetailDB, order_id: OrderId, item_ids: ItemIds, payment_method_id: PaymentMethodId
) -> Order:
    """Record the request only; the refund happens when the return is processed."""
    order = _order(db, order_id)
    _require_status(order, exact="delivered", action="return items")
    method = _payment_method(_user(db, order.user_id), payment_method_id)
    original = order.payment_history[0].payment_method_id if order.payment_history else None
    if not isinstance(method, GiftCard) and payment_method_id != original:
        raise ToolError("the refund must go to the original payment method or a gift card")
    _require_items(order, item_ids)
    order = db.orders.edit(order_id)
    order.status = "return requested"
    order.return_items = sorted(item_ids)
    order.return_payment_method_id = payment_method_id
    return order


register_common(AGENT)

DOMAIN = DomainSpec(name="retail", agent_db=RetailDB, agent_tools=AGENT)
