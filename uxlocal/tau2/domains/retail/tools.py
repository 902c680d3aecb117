"""Retail agent tools (spec §B.4.4): 16 tools, their checks and their DB effects.

The checks run in tau2's order and refuse in its words ("Order not found", "Non-pending order
cannot be modified"), and amounts are computed as tau2 computes them, so a model sees what it
would see upstream (``tests/conformance``). Upstream behaviours kept on purpose for parity
(spec §B.5.2), since gold and predicted replays run this same code:

- ``modify_pending_order_items`` copies price and options of the *last* new variant onto every
  swapped item, and records the unrounded price difference (``36.12999999999999``);
- ``cancel_pending_order`` refunds every entry of the payment history, gift cards at once;
- a check that fails after an earlier step changed something leaves that change (tau2 writes as
  it goes; our copy-on-write records do the same).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from ...db_common import Address
from ...registry import DomainSpec
from ...toolkit import ToolError, Toolkit, arg
from ...tools_common import register_common
from .db import GiftCard, Order, PaymentMethod, Product, RetailDB, Transaction, User, Variant

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


# --- lookups shared by the tools (arguments may be raw JSON values of any type) ----------------


def _order(db: RetailDB, order_id: Any) -> Order:
    if order_id not in db.orders:
        raise ToolError("Order not found")
    return db.orders.edit(order_id)


def _user(db: RetailDB, user_id: Any) -> User:
    if user_id not in db.users:
        raise ToolError("User not found")
    return db.users.edit(user_id)


def _product(db: RetailDB, product_id: Any) -> Product:
    if product_id not in db.products:
        raise ToolError("Product not found")
    product = db.products.get(product_id)
    assert product is not None
    return product


def _variant(db: RetailDB, product_id: str, variant_id: Any) -> Variant:
    product = _product(db, product_id)
    if variant_id not in product.variants:
        raise ToolError("Variant not found")
    return product.variants[variant_id]


def _payment_method(db: RetailDB, user_id: str, payment_method_id: Any) -> PaymentMethod:
    user = _user(db, user_id)
    if payment_method_id not in user.payment_methods:
        raise ToolError("Payment method not found")
    return user.payment_methods[payment_method_id]


def _credit_gift_card(method: PaymentMethod, amount: float) -> None:
    """Add ``amount`` to a gift card (negative to charge), rounded to cents; other methods: no-op."""
    if isinstance(method, GiftCard):
        method.balance = round(method.balance + amount, 2)


def _check_counts(order: Order, item_ids: Sequence[Any], message: str) -> None:
    """Each id must occur in the order at least as often as it is listed (``{item}`` in ``message``)."""
    in_order = [item.item_id for item in order.items]
    for item_id in item_ids:
        if item_ids.count(item_id) > in_order.count(item_id):
            raise ToolError(message.format(item=item_id))


def _price_difference(db: RetailDB, order: Order, item_ids: Sequence[Any], new_item_ids: Sequence[Any], *,
                      must_differ: bool) -> tuple[float, Variant | None]:
    """New-minus-old price summed pair by pair (unrounded), and the last new variant looked up."""
    difference: float = 0
    variant = None
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        if must_differ and item_id == new_item_id:
            raise ToolError("The new item id should be different from the old item id")
        item = next((i for i in order.items if i.item_id == item_id), None)
        if item is None:
            raise ToolError(f"Item {item_id} not found")
        variant = _variant(db, item.product_id, new_item_id)
        if not variant.available:
            raise ToolError(f"New item {new_item_id} not found or available")
        difference += variant.price - item.price
    return difference, variant


@dataclass(frozen=True)
class _Swap:
    """How one item-swapping tool checks its call, in tau2's words (they differ per tool)."""

    status: str
    wrong_status: str
    count: str
    lengths: str
    must_differ: bool
    rounded: bool
    short_gift_card: str


EXCHANGE = _Swap("delivered", "Non-delivered order cannot be exchanged", "Number of {item} not found.",
                 "The number of items to be exchanged should match.", False, True,
                 "Insufficient gift card balance to pay for the price difference")
MODIFY = _Swap("pending", "Non-pending order cannot be modified", "{item} not found",
               "The number of items to be exchanged should match", True, False,
               "Insufficient gift card balance to pay for the new item")


def _checked_swap(db: RetailDB, order_id: Any, item_ids: Sequence[Any], new_item_ids: Sequence[Any],
                  payment_method_id: Any, swap: _Swap) -> tuple[Order, float, Variant | None, PaymentMethod]:
    """The order, price difference, last new variant and payment method of a valid swap."""
    order = _order(db, order_id)
    if order.status != swap.status:
        raise ToolError(swap.wrong_status)
    _check_counts(order, item_ids, swap.count)
    if len(item_ids) != len(new_item_ids):
        raise ToolError(swap.lengths)
    difference, variant = _price_difference(db, order, item_ids, new_item_ids, must_differ=swap.must_differ)
    if swap.rounded:
        difference = round(difference, 2)
    method = _payment_method(db, order.user_id, payment_method_id)
    if isinstance(method, GiftCard) and method.balance < difference:
        raise ToolError(swap.short_gift_card)
    return order, difference, variant, method


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
    raise ToolError("User not found")


@AGENT.tool("read", "Find a user's id from their email address.")
def find_user_id_by_email(db: RetailDB, email: Annotated[str, arg("Email, e.g. 'john@example.com'.")]) -> str:
    """Case-insensitive match."""
    for user in db.users.values():
        if user.email.lower() == email.lower():
            return user.user_id
    raise ToolError("User not found")


@AGENT.tool("read", "Show an order: items, status, address, fulfillments and payment history.")
def get_order_details(db: RetailDB, order_id: OrderId) -> Order:
    """Return the order record as stored."""
    if order_id not in db.orders:
        raise ToolError("Order not found")
    return db.orders.get(order_id)  # type: ignore[return-value]


@AGENT.tool("read", "Show a product with all its variants (options, price, availability).")
def get_product_details(db: RetailDB, product_id: ProductId) -> Product:
    """Return the product record as stored."""
    return _product(db, product_id)


@AGENT.tool("read", "Show one item (variant): its options, price and availability.")
def get_item_details(db: RetailDB, item_id: ItemId) -> Variant:
    """Search every product, since item ids are unique across the catalogue."""
    for product in db.products.values():
        if item_id in product.variants:
            return product.variants[item_id]
    raise ToolError("Item not found")


@AGENT.tool("read", "Show a user's profile: name, address, email, payment methods and order ids.")
def get_user_details(db: RetailDB, user_id: UserId) -> User:
    """Return the user record as stored."""
    if user_id not in db.users:
        raise ToolError("User not found")
    return db.users.get(user_id)  # type: ignore[return-value]


@AGENT.tool("read", "List every product type in the store with its product id.")
def list_all_product_types(db: RetailDB) -> str:
    """Name → product id, sorted by name, as one JSON object."""
    return json.dumps({p.name: p.product_id for p in db.products.values()}, sort_keys=True)


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
    if order.status != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolError("Invalid reason")
    refunds = []
    for payment in order.payment_history:
        refunds.append(Transaction(transaction_type="refund", amount=payment.amount,
                                   payment_method_id=payment.payment_method_id))
        _credit_gift_card(_payment_method(db, order.user_id, payment.payment_method_id), payment.amount)
    order.status = "cancelled"
    order.cancel_reason = reason
    order.payment_history.extend(refunds)
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
    order, difference, _, _ = _checked_swap(db, order_id, item_ids, new_item_ids, payment_method_id, EXCHANGE)
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
    order = _order(db, order_id)
    if "pending" not in order.status:
        raise ToolError("Non-pending order cannot be modified")
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
    order, difference, variant, method = _checked_swap(db, order_id, item_ids, new_item_ids, payment_method_id,
                                                       MODIFY)
    order.payment_history.append(Transaction(
        transaction_type="payment" if difference > 0 else "refund", amount=abs(difference),
        payment_method_id=payment_method_id))
    _credit_gift_card(method, -difference)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = next(i for i in order.items if i.item_id == item_id)
        item.item_id = new_item_id
        # tau2 parity: price and options come from the last variant looked up (module docstring)
        assert variant is not None
        item.price = variant.price
        item.options = dict(variant.options)
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
    if "pending" not in order.status:
        raise ToolError("Non-pending order cannot be modified")
    method = _payment_method(db, order.user_id, payment_method_id)
    history = order.payment_history
    if len(history) != 1 or history[0].transaction_type != "payment":
        raise ToolError("There should be exactly one payment for a pending order")
    if history[0].payment_method_id == payment_method_id:
        raise ToolError("The new payment method should be different from the current one")
    amount, old_method_id = history[0].amount, history[0].payment_method_id
    if isinstance(method, GiftCard) and method.balance < amount:
        raise ToolError("Insufficient gift card balance to pay for the order")
    history.extend([
        Transaction(transaction_type="payment", amount=amount, payment_method_id=payment_method_id),
        Transaction(transaction_type="refund", amount=amount, payment_method_id=old_method_id),
    ])
    _credit_gift_card(method, -amount)
    _credit_gift_card(_payment_method(db, order.user_id, old_method_id), amount)
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
    user = _user(db, user_id)
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
    if order.status != "delivered":
        raise ToolError("Non-delivered order cannot be returned")
    method = _payment_method(db, order.user_id, payment_method_id)
    if not isinstance(method, GiftCard) and payment_method_id != order.payment_history[0].payment_method_id:
        raise ToolError("Payment method should be the original payment method")
    _check_counts(order, item_ids, "Some item not found")
    order.status = "return requested"
    order.return_items = sorted(item_ids)
    order.return_payment_method_id = payment_method_id
    return order


register_common(AGENT)

DOMAIN = DomainSpec(name="retail", agent_db=RetailDB, agent_tools=AGENT)
