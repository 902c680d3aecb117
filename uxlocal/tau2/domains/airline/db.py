"""Airline DB models: flights with per-date status, users with payment methods, reservations.

Field sets follow ``domains/airline/db.json`` (spec §B.4.5, §B.5.2). Numeric types are the
canonical ones, whatever the file holds: gift-card and certificate ``amount`` are floats (the
file writes ``100``, tau2 dumps ``100.0``), reservation payments and fares are ints. A new
reservation's ``status`` is ``None`` and is dumped as ``null`` like the 2,000 in the file.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...db import Database, Record, Table
from ...db_common import Address, PersonName

Cabin = Literal["business", "economy", "basic_economy"]
FlightType = Literal["round_trip", "one_way"]
"""Both in tau2's order: its schemas list the values so, and its validation errors name them so."""
Insurance = Literal["yes", "no"]
Membership = Literal["regular", "silver", "gold"]


class SeatCounts(Record):
    """Seats left per cabin on one flight date."""

    basic_economy: int
    economy: int
    business: int


class CabinPrices(Record):
    """Fare per passenger per cabin on one flight date, in whole dollars."""

    basic_economy: int
    economy: int
    business: int


class AvailableDay(Record):
    """A bookable flight date."""

    status: Literal["available"]
    available_seats: SeatCounts
    prices: CabinPrices


class ScheduledDay(Record):
    """A flight date that has not left yet but is no longer for sale."""

    status: Literal["on time", "delayed"]
    estimated_departure_time_est: str
    estimated_arrival_time_est: str


class FlyingDay(Record):
    """A flight in the air."""

    status: Literal["flying"]
    actual_departure_time_est: str
    estimated_arrival_time_est: str


class LandedDay(Record):
    """A flight that has landed."""

    status: Literal["landed"]
    actual_departure_time_est: str
    actual_arrival_time_est: str


class CancelledDay(Record):
    """A flight the airline cancelled on that date."""

    status: Literal["cancelled"]


FlightDay = Annotated[
    AvailableDay | ScheduledDay | FlyingDay | LandedDay | CancelledDay, Field(discriminator="status")
]


class Flight(Record):
    """A flight number with its fixed route and schedule and its state on each date."""

    flight_number: str
    origin: str
    destination: str
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    """``HH:MM:SS``, with a ``+1`` suffix when the flight lands the next day."""
    dates: dict[str, FlightDay]


class Passenger(Record):
    """A traveller on a reservation or saved on a profile; as a tool argument, unknown keys are
    ignored (as tau2's model does).
    """  # noqa: D205 - the tool schema the model reads carries this text (pydantic)

    model_config = ConfigDict(extra="ignore")

    first_name: str
    last_name: str
    dob: str


class CreditCard(Record):
    """A card on file; charged without a balance check."""

    source: Literal["credit_card"]
    id: str
    brand: str
    last_four: str


class GiftCard(Record):
    """A gift card; debited at booking and when paying for changes."""

    source: Literal["gift_card"]
    id: str
    amount: float


class Certificate(Record):
    """A travel certificate; usable once, for bookings only, and removed when used."""

    source: Literal["certificate"]
    id: str
    amount: float


PaymentMethod = Annotated[CreditCard | GiftCard | Certificate, Field(discriminator="source")]


class User(Record):
    """A customer profile."""

    user_id: str
    name: PersonName
    address: Address
    email: str
    dob: str
    payment_methods: dict[str, PaymentMethod]
    saved_passengers: list[Passenger]
    membership: Membership
    reservations: list[str]


class Payment(Record):
    """A charge (positive) or refund (negative) on a reservation, in whole dollars; as a tool
    argument, unknown keys are ignored (as tau2's model does).
    """  # noqa: D205 - the tool schema the model reads carries this text (pydantic)

    model_config = ConfigDict(extra="ignore")

    payment_id: str
    amount: int


class ReservationFlight(Record):
    """One leg of a reservation with the fare paid per passenger."""

    flight_number: str
    origin: str
    destination: str
    date: str
    price: int


class Reservation(Record):
    """A booking; ``status`` is ``None`` until it is cancelled."""

    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: FlightType
    cabin: Cabin
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: Insurance
    status: Literal["cancelled"] | None = None


class AirlineData(BaseModel):
    """The whole airline file."""

    flights: dict[str, Flight]
    users: dict[str, User]
    reservations: dict[str, Reservation]


class AirlineDB(Database):
    """Airline DB as one episode sees it."""

    ROOT = AirlineData
    flights: Table[Flight]
    users: Table[User]
    reservations: Table[Reservation]
