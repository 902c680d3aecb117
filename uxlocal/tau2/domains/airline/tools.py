"""Airline agent tools (spec §B.4.5): 14 tools, their checks and their DB effects.

The clock is fixed at 2024-05-15 15:00 EST, so new reservations, reservation ids and certificate
ids are deterministic and a gold replay reproduces them exactly. As in tau2, the tools enforce
arithmetic and inventory, not policy: cancelling checks nothing, and neither cancelling nor
changing flights gives seats back; the candidate is supposed to apply the policy itself.

Checks run in tau2's order and refuse in its words, and values are stored as tau2 stores them
(unvalidated where tau2 assigns a field), so a model sees what it would see upstream
(``tests/conformance``). A check failing after an earlier step changed something keeps that
change, as in tau2. ``search_onestop_flight`` keeps tau2's unpadded next-day date
(``2024-05-6``) and its string comparison of times for parity (spec §B.5.2).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field

from ...registry import DomainSpec
from ...toolkit import ToolError, Toolkit, arg
from ...tools_common import register_common
from .db import (
    AirlineDB,
    AvailableDay,
    Cabin,
    Certificate,
    Flight,
    FlightType,
    GiftCard,
    Insurance,
    Passenger,
    Payment,
    Reservation,
    ReservationFlight,
    User,
)

AGENT = Toolkit("airline", qualifier="AirlineTools")

NOW = "2024-05-15T15:00:00"
"""The fixed current time of the airline domain (the policy says so too)."""
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
INSURANCE_PER_PASSENGER = 30
PRICE_PER_EXTRA_BAG = 50

AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
    ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"),
    ("MCO", "Orlando"), ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"),
    ("DTW", "Detroit"), ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)
"""The airports the domain serves, in the order (and with the city names) tau2 lists them."""


class FlightInfo(BaseModel):
    """One leg to book or keep (unknown keys ignored, as in tau2)."""

    flight_number: str = Field(description="Flight number, e.g. 'HAT001'.")
    date: str = Field(description="Departure date as YYYY-MM-DD, e.g. '2024-05-01'.")


UserId = Annotated[str, arg("The user id, e.g. 'sara_doe_496'.")]
ReservationId = Annotated[str, arg("The reservation id, e.g. 'ZFA04Y'.")]
Airport = Annotated[str, arg("IATA airport code, e.g. 'JFK'.")]
Date = Annotated[str, arg("Date as YYYY-MM-DD, e.g. '2024-05-01'.")]
PaymentId = Annotated[str, arg("A payment method id from the user's profile, e.g. 'gift_card_7815826'.")]
Flights = Annotated[list[FlightInfo | dict[str, Any]], arg("Every leg, in travel order.")]
Passengers = Annotated[list[Passenger | dict[str, Any]], arg("Every traveller on the reservation.")]
BagCount = Annotated[int, arg("A number of checked bags.")]


# --- lookups and helpers shared by the tools (arguments may be raw JSON values of any type) ----


def _user(db: AirlineDB, user_id: Any, *, edit: bool = False) -> User:
    if user_id not in db.users:
        raise ToolError(f"User {user_id} not found")
    return db.users.edit(user_id) if edit else db.users.get(user_id)  # type: ignore[return-value]


def _reservation(db: AirlineDB, reservation_id: Any, *, edit: bool = False) -> Reservation:
    if reservation_id not in db.reservations:
        raise ToolError(f"Reservation {reservation_id} not found")
    return db.reservations.edit(reservation_id) if edit else db.reservations.get(reservation_id)  # type: ignore[return-value]


def _flight(db: AirlineDB, flight_number: Any) -> Flight:
    if flight_number not in db.flights:
        raise ToolError(f"Flight {flight_number} not found")
    return db.flights.get(flight_number)  # type: ignore[return-value]


def _flight_day(db: AirlineDB, flight_number: Any, date: Any) -> Any:
    flight = _flight(db, flight_number)
    if date not in flight.dates:
        raise ToolError(f"Flight {flight_number} not found on date {date}")
    return flight.dates[date]


def _as_models(values: Any, model: type[BaseModel]) -> Any:
    """tau2's conversion: when every entry is an object, each becomes ``model``; else as given."""
    if all(isinstance(v, dict | model) for v in values):
        return [v if isinstance(v, model) else model(**v) for v in values]
    return values


def _store(record: BaseModel, **fields: Any) -> None:
    """Assign as tau2 does, without validation (a wrong value is stored as given)."""
    record.__dict__.update(fields)


def _seats(day: AvailableDay, cabin: Any) -> int:
    """Seats left in ``cabin``; an unknown cabin fails as a missing key, as in tau2."""
    return int(day.available_seats.model_dump()[cabin])


def _leg(flight: Flight, info: Any, day: AvailableDay, cabin: Any) -> ReservationFlight:
    return ReservationFlight(flight_number=info.flight_number, origin=flight.origin,
                             destination=flight.destination, date=info.date,
                             price=day.prices.model_dump()[cabin])


def _bookable(db: AirlineDB, info: Any, cabin: Any, travellers: int) -> tuple[Flight, AvailableDay]:
    flight = _flight(db, info.flight_number)
    day = _flight_day(db, info.flight_number, info.date)
    if not isinstance(day, AvailableDay):
        raise ToolError(f"Flight {info.flight_number} not available on date {info.date}")
    if _seats(day, cabin) < travellers:
        raise ToolError(f"Not enough seats on flight {info.flight_number}")
    return flight, day


def _payment_for_update(user: User, payment_id: Any, total: Any) -> Payment | None:
    """Charge a change: card or gift card (debited now), never a certificate."""
    if payment_id not in user.payment_methods:
        raise ToolError("Payment method not found")
    method = user.payment_methods[payment_id]
    if isinstance(method, Certificate):
        raise ToolError("Certificate cannot be used to update reservation")
    if isinstance(method, GiftCard) and method.amount < total:
        raise ToolError("Gift card balance is not enough")
    if isinstance(method, GiftCard):
        _store(method, amount=method.amount - total)
    return Payment(payment_id=payment_id, amount=total) if total != 0 else None


def _direct(db: AirlineDB, date: Any, origin: Any = None, destination: Any = None,
            leave_after: Any = None) -> list[dict[str, Any]]:
    """Flights for sale on ``date`` (the fields tau2 lists; ``date`` left null)."""
    found = []
    for flight in db.flights.values():
        if ((origin is None or flight.origin == origin)
                and (destination is None or flight.destination == destination)
                and date in flight.dates and flight.dates[date].status == "available"
                and (leave_after is None or flight.scheduled_departure_time_est >= leave_after)):
            day = flight.dates[date]
            assert isinstance(day, AvailableDay)
            found.append({
                "flight_number": flight.flight_number, "origin": flight.origin,
                "destination": flight.destination, "status": "available",
                "scheduled_departure_time_est": flight.scheduled_departure_time_est,
                "scheduled_arrival_time_est": flight.scheduled_arrival_time_est, "date": None,
                "available_seats": day.available_seats.model_dump(), "prices": day.prices.model_dump(),
            })
    return found


def _next_day_unpadded(date: str) -> str:
    """The next day as tau2 writes it: May 2024, day not zero-padded ('2024-05-6')."""
    return f"2024-05-{int(date[-2:]) + 1}"


# --- read tools -------------------------------------------------------------------------------


@AGENT.tool(
    "read",
    "Show a user's profile: name, contact, membership, payment methods, saved passengers "
    "and reservation ids.",
)
def get_user_details(db: AirlineDB, user_id: UserId) -> User:
    """Return the user record as stored."""
    return _user(db, user_id)


@AGENT.tool("read", "Show a reservation: flights, passengers, cabin, bags, insurance and payments.")
def get_reservation_details(db: AirlineDB, reservation_id: ReservationId) -> Reservation:
    """Return the reservation record as stored."""
    return _reservation(db, reservation_id)


@AGENT.tool("read", "List the airports served, with their cities.")
def list_all_airports(db: AirlineDB) -> list[dict[str, str]]:
    """Return a fixed list; the DB holds no airport table."""
    return [{"iata": code, "city": city} for code, city in AIRPORTS]


@AGENT.tool("read", "Find nonstop flights between two airports on a date that are open for booking.")
def search_direct_flight(
    db: AirlineDB, origin: Airport, destination: Airport, date: Date
) -> list[dict[str, Any]]:
    """Only dates with status 'available' are listed, with seats and fares."""
    return _direct(db, date, origin, destination)


@AGENT.tool(
    "read",
    "Find one-stop connections between two airports, first leg departing on a date; "
    "the second leg leaves after the first lands.",
)
def search_onestop_flight(
    db: AirlineDB, origin: Airport, destination: Airport, date: Date
) -> list[list[dict[str, Any]]]:
    """Pairs of legs; a first leg landing '+1' connects with flights of the next day."""
    pairs: list[list[dict[str, Any]]] = []
    for first in _direct(db, date, origin):
        first["date"] = date
        arrival = first["scheduled_arrival_time_est"]
        second_date = _next_day_unpadded(date) if "+1" in arrival else date
        for second in _direct(db, second_date, first["destination"], destination, leave_after=arrival):
            second["date"] = second_date
            pairs.append([first, second])
    return pairs


@AGENT.tool(
    "read", "Show the status of a flight on a date (available, on time, delayed, flying, landed, cancelled)."
)
def get_flight_status(
    db: AirlineDB, flight_number: Annotated[str, arg("Flight number, e.g. 'HAT001'.")], date: Date
) -> str:
    """Return the status word only."""
    return str(_flight_day(db, flight_number, date).status)


# --- write tools ------------------------------------------------------------------------------


@AGENT.tool(
    "write",
    "Book a new reservation for a user. The payments must add up exactly to the total: fares for every "
    "passenger and leg, plus $30 per passenger with insurance, plus $50 per non-free bag.",
)
def book_reservation(
    db: AirlineDB,
    user_id: UserId,
    origin: Airport,
    destination: Airport,
    flight_type: Annotated[FlightType, arg("'one_way' or 'round_trip'.")],
    cabin: Annotated[Cabin, arg("'basic_economy', 'economy' or 'business'.")],
    flights: Flights,
    passengers: Passengers,
    payment_methods: Annotated[
        list[Payment | dict[str, Any]], arg("Methods from the user's profile and the amount for each.")
    ],
    total_baggages: BagCount,
    nonfree_baggages: BagCount,
    insurance: Annotated[Insurance, arg("'yes' or 'no'.")],
) -> Reservation:
    """Take seats, debit gift cards, consume certificates, and file the reservation.

    The id is the first free one of HATHAT/HATHAU/HATHAV and ``created_at`` is the fixed NOW.
    """
    flights = _as_models(flights, FlightInfo)
    passengers = _as_models(passengers, Passenger)
    payment_methods = _as_models(payment_methods, Payment)
    user = _user(db, user_id, edit=True)
    reservation_id = next((r for r in NEW_RESERVATION_IDS if r not in db.reservations), None)
    if reservation_id is None:
        raise ToolError("Too many reservations")
    reservation = Reservation(
        reservation_id=reservation_id, user_id=user_id, origin=origin, destination=destination,
        flight_type=flight_type, cabin=cabin, flights=[], passengers=copy.deepcopy(passengers),
        payment_history=copy.deepcopy(payment_methods), created_at=NOW, total_baggages=total_baggages,
        nonfree_baggages=nonfree_baggages, insurance=insurance,
    )
    total: Any = 0
    for info in flights:
        flight, day = _bookable(db, info, cabin, len(passengers))
        leg = _leg(flight, info, day, cabin)
        reservation.flights.append(leg)
        total += leg.price * len(passengers)
    if insurance == "yes":
        total += INSURANCE_PER_PASSENGER * len(passengers)
    total += PRICE_PER_EXTRA_BAG * nonfree_baggages
    _check_booking_payments(user, payment_methods)
    paid = sum(payment.amount for payment in payment_methods)
    if paid != total:
        raise ToolError(f"Payment amount does not add up, total price is {total}, but paid {paid}")
    for payment in payment_methods:
        method = user.payment_methods[payment.payment_id]
        if isinstance(method, GiftCard):
            _store(method, amount=method.amount - payment.amount)
        elif isinstance(method, Certificate):
            user.payment_methods.pop(payment.payment_id)
    for info in flights:  # the same flight twice loses seats twice, as in tau2
        day = db.flights.edit(info.flight_number).dates[info.date]
        assert isinstance(day, AvailableDay)
        setattr(day.available_seats, cabin, _seats(day, cabin) - len(passengers))
    db.reservations.put(reservation_id, reservation)
    user.reservations.append(reservation_id)
    return reservation


def _check_booking_payments(user: User, payments: Sequence[Any]) -> None:
    """Every method on file, and each gift card or certificate covering its own entry."""
    for payment in payments:
        if payment.payment_id not in user.payment_methods:
            raise ToolError(f"Payment method {payment.payment_id} not found")
        method = user.payment_methods[payment.payment_id]
        if isinstance(method, GiftCard | Certificate) and method.amount < payment.amount:
            raise ToolError(f"Not enough balance in payment method {payment.payment_id}")


@AGENT.tool("write", "Cancel a whole reservation; every payment on it is refunded to its method.")
def cancel_reservation(db: AirlineDB, reservation_id: ReservationId) -> Reservation:
    """No eligibility check here (the policy is the candidate's job), and seats are not released."""
    reservation = _reservation(db, reservation_id, edit=True)
    refunds = [Payment(payment_id=p.payment_id, amount=-p.amount) for p in reservation.payment_history]
    reservation.payment_history.extend(refunds)
    reservation.status = "cancelled"
    return reservation


@AGENT.tool("write", "Add a travel certificate worth the given amount to a user's profile (compensation).")
def send_certificate(
    db: AirlineDB, user_id: UserId, amount: Annotated[int, arg("Value in dollars, e.g. 100.")]
) -> str:
    """Ids come from a fixed list of three, so gold and candidate runs name the certificate alike."""
    user = _user(db, user_id, edit=True)
    for certificate_id in NEW_CERTIFICATE_IDS:
        if certificate_id not in user.payment_methods:
            user.payment_methods[certificate_id] = Certificate(id=certificate_id, amount=amount,
                                                               source="certificate")
            return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."
    raise ToolError("Too many certificates")


@AGENT.tool(
    "write",
    "Change the bag counts of a reservation; each added non-free bag costs $50, paid with "
    "a card or gift card on the profile.",
)
def update_reservation_baggages(
    db: AirlineDB,
    reservation_id: ReservationId,
    total_baggages: BagCount,
    nonfree_baggages: BagCount,
    payment_id: PaymentId,
) -> Reservation:
    """Only an increase in non-free bags is charged; the tool does not refuse fewer bags (policy does)."""
    reservation = _reservation(db, reservation_id, edit=True)
    user = _user(db, reservation.user_id, edit=True)
    charge = PRICE_PER_EXTRA_BAG * max(0, nonfree_baggages - reservation.nonfree_baggages)
    payment = _payment_for_update(user, payment_id, charge)
    if payment is not None:
        reservation.payment_history.append(payment)
    _store(reservation, total_baggages=total_baggages, nonfree_baggages=nonfree_baggages)
    return reservation


@AGENT.tool(
    "write",
    "Replace the flights (and optionally the cabin) of a reservation. List every leg of the new itinerary, "
    "including unchanged ones. The fare difference is charged or refunded with the given method.",
)
def update_reservation_flights(
    db: AirlineDB,
    reservation_id: ReservationId,
    cabin: Annotated[Cabin, arg("Cabin for the whole reservation after the change.")],
    flights: Flights,
    payment_id: PaymentId,
) -> Reservation:
    """Legs kept in the same cabin keep their old fare; no seat inventory changes."""
    flights = _as_models(flights, FlightInfo)
    reservation = _reservation(db, reservation_id, edit=True)
    user = _user(db, reservation.user_id, edit=True)
    travellers = len(reservation.passengers)
    total: Any = 0
    legs = []
    for info in flights:
        kept = next((leg for leg in reservation.flights if leg.flight_number == info.flight_number
                     and leg.date == info.date and cabin == reservation.cabin), None)
        if kept is None:
            flight, day = _bookable(db, info, cabin, travellers)
            kept = _leg(flight, info, day, cabin)
        total += kept.price * travellers
        legs.append(kept)
    total -= sum(leg.price for leg in reservation.flights) * travellers
    payment = _payment_for_update(user, payment_id, total)
    if payment is not None:
        reservation.payment_history.append(payment)
    _store(reservation, flights=legs, cabin=cabin)
    return reservation


@AGENT.tool(
    "write", "Replace the passenger details of a reservation; the number of passengers cannot change."
)
def update_reservation_passengers(
    db: AirlineDB, reservation_id: ReservationId, passengers: Passengers
) -> Reservation:
    """Names and birth dates only; fares and seats are untouched."""
    passengers = _as_models(passengers, Passenger)
    reservation = _reservation(db, reservation_id, edit=True)
    if len(passengers) != len(reservation.passengers):
        raise ToolError("Number of passengers does not match")
    _store(reservation, passengers=copy.deepcopy(passengers))
    return reservation


register_common(AGENT)

DOMAIN = DomainSpec(name="airline", agent_db=AirlineDB, agent_tools=AGENT)
