"""Airline agent tools (spec §B.4.5): 14 tools, their checks and their DB effects.

The clock is fixed at 2024-05-15 15:00 EST, so new reservations, reservation ids and certificate
ids are deterministic and a gold replay reproduces them exactly. As in tau2, the tools enforce
arithmetic and inventory, not policy: cancelling checks nothing, and neither cancelling nor
changing flights gives seats back; the candidate is supposed to apply the policy itself.

Every write tool checks first and mutates last, so a refused call leaves the DB untouched.
``search_onestop_flight`` keeps tau2's unpadded next-day date (``2024-05-6``) for parity
(spec §B.5.2): overnight connections departing on days 1-8 are therefore never listed.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

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
from ...registry import DomainSpec
from ...toolkit import ToolArgs, ToolError, Toolkit, arg
from ...tools_common import register_common

AGENT = Toolkit("airline", qualifier="AirlineTools")

NOW = "2024-05-15T15:00:00"
"""The fixed current time of the airline domain (the policy says so too)."""
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
INSURANCE_PER_PASSENGER = 30
PRICE_PER_EXTRA_BAG = 50

AIRPORTS = (
    ("ATL", "Atlanta"),
    ("BOS", "Boston"),
    ("CLT", "Charlotte"),
    ("DEN", "Denver"),
    ("DFW", "Dallas-Fort Worth"),
    ("DTW", "Detroit"),
    ("EWR", "Newark"),
    ("IAH", "Houston"),
    ("JFK", "New York"),
    ("LAS", "Las Vegas"),
    ("LAX", "Los Angeles"),
    ("LGA", "New York"),
    ("MCO", "Orlando"),
    ("MIA", "Miami"),
    ("MSP", "Minneapolis"),
    ("ORD", "Chicago"),
    ("PHL", "Philadelphia"),
    ("PHX", "Phoenix"),
    ("SEA", "Seattle"),
    ("SFO", "San Francisco"),
)


class FlightRef(ToolArgs):
    """One leg to book or keep."""

    flight_number: str = Field(description="Flight number, e.g. 'HAT001'.")
    date: str = Field(description="Departure date as YYYY-MM-DD, e.g. '2024-05-01'.")


class PassengerArg(ToolArgs):
    """A traveller as the tools receive it."""

    first_name: str = Field(description="First name, e.g. 'Noah'.")
    last_name: str = Field(description="Last name, e.g. 'Brown'.")
    dob: str = Field(description="Date of birth as YYYY-MM-DD, e.g. '1990-01-01'.")


class PaymentArg(ToolArgs):
    """One payment method and the amount taken from it."""

    payment_id: str = Field(
        description="A payment method id from the user's profile, e.g. 'credit_card_7815826'."
    )
    amount: int = Field(description="Whole dollars to charge to this method.")


UserId = Annotated[str, arg("The user id, e.g. 'sara_doe_496'.")]
ReservationId = Annotated[str, arg("The reservation id, e.g. 'ZFA04Y'.")]
Airport = Annotated[str, arg("IATA airport code, e.g. 'JFK'.")]
Date = Annotated[str, arg("Date as YYYY-MM-DD, e.g. '2024-05-01'.")]
PaymentId = Annotated[str, arg("A payment method id from the user's profile, e.g. 'gift_card_7815826'.")]
Passengers = Annotated[list[PassengerArg], arg("Every traveller on the reservation.", min_length=1)]
BagCount = Annotated[int, arg("A number of checked bags.", ge=0)]


# --- lookups shared by the tools ------------------------------------------------------------


def _user(db: AirlineDB, user_id: str) -> User:
    user = db.users.get(user_id)
    if user is None:
        raise ToolError(f"user {user_id} not found")
    return user


def _reservation(db: AirlineDB, reservation_id: str) -> Reservation:
    reservation = db.reservations.get(reservation_id)
    if reservation is None:
        raise ToolError(f"reservation {reservation_id} not found")
    return reservation


def _flight_day(db: AirlineDB, flight_number: str, date: str) -> tuple[Flight, Any]:
    flight = db.flights.get(flight_number)
    if flight is None:
        raise ToolError(f"flight {flight_number} not found")
    day = flight.dates.get(date)
    if day is None:
        raise ToolError(f"flight {flight_number} does not operate on {date}")
    return flight, day


def _bookable(db: AirlineDB, ref: FlightRef, cabin: Cabin, travellers: int) -> ReservationFlight:
    """Price a new leg at today's fare, if the flight is for sale with enough seats in ``cabin``."""
    flight, day = _flight_day(db, ref.flight_number, ref.date)
    if not isinstance(day, AvailableDay):
        raise ToolError(f"flight {ref.flight_number} on {ref.date} is not open for booking ({day.status})")
    if getattr(day.available_seats, cabin) < travellers:
        raise ToolError(f"not enough {cabin} seats on flight {ref.flight_number} on {ref.date}")
    return ReservationFlight(
        flight_number=flight.flight_number,
        origin=flight.origin,
        destination=flight.destination,
        date=ref.date,
        price=getattr(day.prices, cabin),
    )


def _check_change_payment(user: User, payment_id: str, amount: int) -> None:
    """Check a change payment: card or gift card, never a certificate (spec §B.4.5)."""
    method = user.payment_methods.get(payment_id)
    if method is None:
        raise ToolError(f"payment method {payment_id} not found in the user's profile")
    if isinstance(method, Certificate):
        raise ToolError("a certificate cannot pay for a change to a reservation")
    if isinstance(method, GiftCard) and method.amount < amount:
        raise ToolError(f"gift card {payment_id} balance {method.amount} does not cover {amount}")


def _debit_gift_card(db: AirlineDB, user_id: str, payment_id: str, amount: int) -> None:
    """Take ``amount`` off a gift card (a negative amount credits it); other methods are untouched."""
    if isinstance(_user(db, user_id).payment_methods.get(payment_id), GiftCard):
        card = db.users.edit(user_id).payment_methods[payment_id]
        assert isinstance(card, GiftCard)
        card.amount = card.amount - amount


def _search_entry(flight: Flight, date: str) -> dict[str, Any]:
    day = flight.dates[date]
    assert isinstance(day, AvailableDay), "only bookable dates are listed"
    return {
        "flight_number": flight.flight_number,
        "origin": flight.origin,
        "destination": flight.destination,
        "date": date,
        "status": day.status,
        "scheduled_departure_time_est": flight.scheduled_departure_time_est,
        "scheduled_arrival_time_est": flight.scheduled_arrival_time_est,
        "available_seats": day.available_seats.model_dump(),
        "prices": day.prices.model_dump(),
    }


def _for_sale(flight: Flight, date: str) -> bool:
    return isinstance(flight.dates.get(date), AvailableDay)


def _next_day_unpadded(date: str) -> str:
    """Next day of a May-2024 date, written without zero padding as tau2 does ('2024-05-6')."""
    return f"{date[:8]}{int(date[8:]) + 1}"


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
    return [
        _search_entry(f, date)
        for f in db.flights.values()
        if f.origin == origin and f.destination == destination and _for_sale(f, date)
    ]


@AGENT.tool(
    "read",
    "Find one-stop connections between two airports, first leg departing on a date; "
    "the second leg leaves after the first lands.",
)
def search_onestop_flight(
    db: AirlineDB, origin: Airport, destination: Airport, date: Date
) -> list[list[dict[str, Any]]]:
    """Pairs of legs; a first leg landing '+1' connects with flights of the next day."""
    flights = list(db.flights.values())
    pairs: list[list[dict[str, Any]]] = []
    for first in flights:
        if first.origin != origin or not _for_sale(first, date):
            continue
        arrival = first.scheduled_arrival_time_est
        second_date = _next_day_unpadded(date) if arrival.endswith("+1") else date
        lands = arrival.removesuffix("+1")
        for second in flights:
            if (
                second.origin == first.destination
                and second.destination == destination
                and _for_sale(second, second_date)
                and second.scheduled_departure_time_est > lands
            ):
                pairs.append([_search_entry(first, date), _search_entry(second, second_date)])
    return pairs


@AGENT.tool(
    "read", "Show the status of a flight on a date (available, on time, delayed, flying, landed, cancelled)."
)
def get_flight_status(
    db: AirlineDB, flight_number: Annotated[str, arg("Flight number, e.g. 'HAT001'.")], date: Date
) -> str:
    """Return the status word only."""
    _, day = _flight_day(db, flight_number, date)
    return str(day.status)


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
    flights: Annotated[list[FlightRef], arg("Every leg, in travel order.", min_length=1)],
    passengers: Passengers,
    payment_methods: Annotated[
        list[PaymentArg], arg("Methods from the user's profile and the amount for each.")
    ],
    total_baggages: BagCount,
    nonfree_baggages: BagCount,
    insurance: Annotated[Insurance, arg("'yes' or 'no'.")],
) -> Reservation:
    """Take seats, debit gift cards, consume certificates, and file the reservation.

    The id is the first free one of HATHAT/HATHAU/HATHAV and ``created_at`` is the fixed NOW.
    """
    user = _user(db, user_id)
    travellers = len(passengers)
    legs = [_bookable(db, ref, cabin, travellers) for ref in flights]
    total = sum(leg.price for leg in legs) * travellers + PRICE_PER_EXTRA_BAG * nonfree_baggages
    total += INSURANCE_PER_PASSENGER * travellers if insurance == "yes" else 0
    _check_booking_payments(user, payment_methods, total)
    reservation_id = next((r for r in NEW_RESERVATION_IDS if r not in db.reservations), None)
    if reservation_id is None:
        raise ToolError("no reservation id left for new bookings")
    _take_booking_payments(db, user_id, payment_methods)
    for ref in flights:
        seats = db.flights.edit(ref.flight_number).dates[ref.date]
        assert isinstance(seats, AvailableDay)
        current = getattr(seats.available_seats, cabin)
        setattr(seats.available_seats, cabin, current - travellers)
    reservation = Reservation(
        reservation_id=reservation_id,
        user_id=user_id,
        origin=origin,
        destination=destination,
        flight_type=flight_type,
        cabin=cabin,
        flights=legs,
        passengers=[Passenger(**p.model_dump()) for p in passengers],
        payment_history=[Payment(payment_id=p.payment_id, amount=p.amount) for p in payment_methods],
        created_at=NOW,
        total_baggages=total_baggages,
        nonfree_baggages=nonfree_baggages,
        insurance=insurance,
    )
    db.reservations.add(reservation_id, reservation)
    db.users.edit(user_id).reservations.append(reservation_id)
    return reservation


def _check_booking_payments(user: User, payments: list[PaymentArg], total: int) -> None:
    """Every method on file, balances sufficient (summed per method), and the sum exactly ``total``."""
    per_method: dict[str, int] = {}
    for payment in payments:
        per_method[payment.payment_id] = per_method.get(payment.payment_id, 0) + payment.amount
    for payment_id, amount in per_method.items():
        method = user.payment_methods.get(payment_id)
        if method is None:
            raise ToolError(f"payment method {payment_id} not found in the user's profile")
        if isinstance(method, GiftCard | Certificate) and method.amount < amount:
            raise ToolError(f"{payment_id} balance {method.amount} does not cover {amount}")
    paid = sum(per_method.values())
    if paid != total:
        raise ToolError(f"payments add up to {paid} but the total price is {total}")


def _take_booking_payments(db: AirlineDB, user_id: str, payments: list[PaymentArg]) -> None:
    user = db.users.edit(user_id)
    for payment in payments:
        method = user.payment_methods.get(payment.payment_id)
        if isinstance(method, GiftCard):
            method.amount = method.amount - payment.amount
        elif isinstance(method, Certificate):
            del user.payment_methods[payment.payment_id]


@AGENT.tool("write", "Cancel a whole reservation; every payment on it is refunded to its method.")
def cancel_reservation(db: AirlineDB, reservation_id: ReservationId) -> Reservation:
    """No eligibility check here (the policy is the candidate's job), and seats are not released."""
    _reservation(db, reservation_id)
    reservation = db.reservations.edit(reservation_id)
    refunds = [Payment(payment_id=p.payment_id, amount=-p.amount) for p in reservation.payment_history]
    reservation.payment_history.extend(refunds)
    reservation.status = "cancelled"
    return reservation


@AGENT.tool("write", "Add a travel certificate worth the given amount to a user's profile (compensation).")
def send_certificate(
    db: AirlineDB, user_id: UserId, amount: Annotated[float, arg("Value in dollars, e.g. 100.", gt=0)]
) -> str:
    """Ids come from a fixed list of three, so gold and candidate runs name the certificate alike."""
    user = _user(db, user_id)
    certificate_id = next((c for c in NEW_CERTIFICATE_IDS if c not in user.payment_methods), None)
    if certificate_id is None:
        raise ToolError("this user cannot receive more certificates")
    certificate = Certificate(source="certificate", id=certificate_id, amount=amount)
    db.users.edit(user_id).payment_methods[certificate_id] = certificate
    return f"Certificate {certificate_id} with amount {amount} added to user {user_id}."


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
    current = _reservation(db, reservation_id)
    charge = PRICE_PER_EXTRA_BAG * max(0, nonfree_baggages - current.nonfree_baggages)
    _check_change_payment(_user(db, current.user_id), payment_id, charge)
    _debit_gift_card(db, current.user_id, payment_id, charge)
    reservation = db.reservations.edit(reservation_id)
    if charge:
        reservation.payment_history.append(Payment(payment_id=payment_id, amount=charge))
    reservation.total_baggages = total_baggages
    reservation.nonfree_baggages = nonfree_baggages
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
    flights: Annotated[
        list[FlightRef], arg("Every leg of the new itinerary, in travel order.", min_length=1)
    ],
    payment_id: PaymentId,
) -> Reservation:
    """Legs kept in the same cabin keep their old fare; no seat inventory changes."""
    current = _reservation(db, reservation_id)
    travellers = len(current.passengers)
    legs = [_kept_or_new_leg(db, current, ref, cabin, travellers) for ref in flights]
    difference = (sum(leg.price for leg in legs) - sum(leg.price for leg in current.flights)) * travellers
    _check_change_payment(_user(db, current.user_id), payment_id, difference)
    _debit_gift_card(db, current.user_id, payment_id, difference)
    reservation = db.reservations.edit(reservation_id)
    reservation.flights = legs
    reservation.cabin = cabin
    if difference:
        reservation.payment_history.append(Payment(payment_id=payment_id, amount=difference))
    return reservation


def _kept_or_new_leg(
    db: AirlineDB, reservation: Reservation, ref: FlightRef, cabin: Cabin, travellers: int
) -> ReservationFlight:
    """Keep an unchanged leg (same flight, date, cabin) as a fresh copy, else price a new one."""
    if cabin == reservation.cabin:
        for leg in reservation.flights:
            if (leg.flight_number, leg.date) == (ref.flight_number, ref.date):
                return leg.model_copy()
    return _bookable(db, ref, cabin, travellers)


@AGENT.tool(
    "write", "Replace the passenger details of a reservation; the number of passengers cannot change."
)
def update_reservation_passengers(
    db: AirlineDB, reservation_id: ReservationId, passengers: Passengers
) -> Reservation:
    """Names and birth dates only; fares and seats are untouched."""
    current = _reservation(db, reservation_id)
    if len(passengers) != len(current.passengers):
        raise ToolError(f"the reservation has {len(current.passengers)} passengers; give exactly that many")
    reservation = db.reservations.edit(reservation_id)
    reservation.passengers = [Passenger(**p.model_dump()) for p in passengers]
    return reservation


register_common(AGENT)

DOMAIN = DomainSpec(name="airline", agent_db=AirlineDB, agent_tools=AGENT)
