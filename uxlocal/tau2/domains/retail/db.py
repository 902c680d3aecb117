"""Retail DB models: products with variants, users with payment methods, orders.

Field sets follow ``domains/retail/db.json`` (spec §B.4.4, §B.5.2). Money is ``float``
everywhere, as in the file. The order fields written by tools (``cancel_reason``, ``exchange_*``,
``return_*``) default to ``None`` and are always dumped, so an untouched order and a gold order
hash alike.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from ...db import Database, Record, Table
from ...db_common import Address, PersonName


class Variant(Record):
    """One buyable item of a product (a colour/size combination)."""

    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(Record):
    """A product type and its variants keyed by item id."""

    name: str
    product_id: str
    variants: dict[str, Variant]


class CreditCard(Record):
    """A card on file."""

    source: Literal["credit_card"]
    id: str
    brand: str
    last_four: str


class Paypal(Record):
    """A PayPal account on file."""

    source: Literal["paypal"]
    id: str


class GiftCard(Record):
    """A gift card; its balance moves immediately on payments and refunds."""

    source: Literal["gift_card"]
    id: str
    balance: float


PaymentMethod = Annotated[CreditCard | Paypal | GiftCard, Field(discriminator="source")]


class User(Record):
    """A customer account."""

    user_id: str
    name: PersonName
    address: Address
    email: str
    payment_methods: dict[str, PaymentMethod]
    orders: list[str]


class OrderItem(Record):
    """One unit of an order (an item bought twice appears twice)."""

    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class Fulfillment(Record):
    """Shipment tracking for some of an order's items."""

    tracking_id: list[str]
    item_ids: list[str]


class Transaction(Record):
    """A payment or refund recorded on an order."""

    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(Record):
    """An order; ``status`` is free text since tools write states like 'pending (item modified)'."""

    order_id: str
    user_id: str
    address: Address
    items: list[OrderItem]
    status: str
    fulfillments: list[Fulfillment]
    payment_history: list[Transaction]
    cancel_reason: str | None = None
    exchange_items: list[str] | None = None
    exchange_new_items: list[str] | None = None
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = None
    return_items: list[str] | None = None
    return_payment_method_id: str | None = None


class RetailData(BaseModel):
    """The whole retail file."""

    products: dict[str, Product]
    users: dict[str, User]
    orders: dict[str, Order]


class RetailDB(Database):
    """Retail DB as one episode sees it."""

    ROOT = RetailData
    products: Table[Product]
    users: Table[User]
    orders: Table[Order]
