"""Airline tools (spec §B.4.5): one happy path and at least one refusal per tool, on the real DB."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.tau2.tool_cases import refusal_cases, refused
from uxlocal.tau2 import Domain, Environment
from uxlocal.tau2.domains.airline.tools import _next_day_unpadded

EMMA = "emma_kim_9957"  # gold member: credit_card_5832574, gift_card_9562694 (103)
EMMA_CARD = "credit_card_5832574"
EMMA_GIFT = "gift_card_9562694"
MIA = "mia_li_3668"  # certificates certificate_4856383 (100) and certificate_7504069 (250)
TRAVELLER = {"first_name": "Emma", "last_name": "Kim", "dob": "1977-09-23"}
HAT001_0520 = {"flight_number": "HAT001", "date": "2024-05-20"}  # PHL->LGA, economy 137, 17 seats left

Content = Callable[..., Any]


@pytest.fixture
def env(airline: Domain) -> Environment:
    return Environment(airline)


def _booking(**changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "user_id": EMMA,
        "origin": "PHL",
        "destination": "LGA",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [HAT001_0520],
        "passengers": [TRAVELLER],
        "payment_methods": [{"payment_id": EMMA_CARD, "amount": 137}],
        "total_baggages": 0,
        "nonfree_baggages": 0,
        "insurance": "no",
    }
    return {**arguments, **changes}


REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    (
        "book_reservation",
        _booking(payment_methods=[{"payment_id": EMMA_CARD, "amount": 100}]),
        "Payment amount does not add up, total price is 137, but paid 100",
    ),
    (
        "book_reservation",
        _booking(flights=[{"flight_number": "HAT001", "date": "2024-05-10"}]),
        "Flight HAT001 not available on date 2024-05-10",
    ),
    (
        "book_reservation",
        _booking(payment_methods=[{"payment_id": EMMA_GIFT, "amount": 137}]),
        "Not enough balance in payment method gift_card_9562694",
    ),
    (
        "book_reservation",
        _booking(cabin="first"),
        "1 validation error for Reservation\ncabin\n"
        "  Input should be 'business', 'economy' or 'basic_economy'",
    ),  # not a cabin class
    (
        "book_reservation",
        _booking(
            passengers=[TRAVELLER] * 18, payment_methods=[{"payment_id": EMMA_CARD, "amount": 137 * 18}]
        ),
        "Not enough seats on flight HAT001",
    ),
    (
        "book_reservation",
        _booking(payment_methods=[{"payment_id": EMMA_CARD, "amount": 136.5}]),
        "1 validation error for Payment\namount\n  Input should be a valid integer",
    ),
    ("calculate", {"expression": "3 % 2"}, "Invalid characters in expression"),
    ("cancel_reservation", {"reservation_id": "NOPE00"}, "Reservation NOPE00 not found"),
    (
        "get_flight_status",
        {"flight_number": "HAT001", "date": "2024-06-01"},
        "Flight HAT001 not found on date 2024-06-01",
    ),
    ("get_reservation_details", {"reservation_id": "NOPE00"}, "Reservation NOPE00 not found"),
    ("get_user_details", {"user_id": "nobody_1"}, "User nobody_1 not found"),
    (
        "list_all_airports",
        {"country": "US"},
        "AirlineTools.list_all_airports() got an unexpected keyword argument 'country'",
    ),
    (
        "search_direct_flight",
        {"origin": "PHL", "destination": "LGA"},
        "AirlineTools.search_direct_flight() missing 1 required positional argument: 'date'",
    ),
    (
        "search_onestop_flight",
        {"origin": "PHL", "destination": "LGA", "date": ["2024-05-20"]},
        "unhashable type: 'list'",  # not refused up front (tau2 validates nothing); the lookup fails
    ),
    ("send_certificate", {"user_id": "nobody_1", "amount": 100}, "User nobody_1 not found"),
    ("send_certificate", {"user_id": EMMA, "amount": "a lot"}, "1 validation error for Certificate"),
    (
        "transfer_to_human_agents",
        {"summary": "x", "urgent": True},
        "AirlineTools.transfer_to_human_agents() got an unexpected keyword argument 'urgent'",
    ),
    (
        "update_reservation_baggages",
        {"reservation_id": "EHGLP3", "total_baggages": 3, "nonfree_baggages": 3, "payment_id": EMMA_GIFT},
        "Gift card balance is not enough",
    ),
    (
        "update_reservation_baggages",
        {"reservation_id": "EHGLP3", "total_baggages": 1, "nonfree_baggages": 0, "payment_id": "nope"},
        "Payment method not found",
    ),
    (
        "update_reservation_flights",
        {
            "reservation_id": "EHGLP3",
            "cabin": "basic_economy",
            "flights": [{"flight_number": "HAT156", "date": "2024-05-03"}],
            "payment_id": EMMA_CARD,
        },
        "Flight HAT156 not available on date 2024-05-03",
    ),
    (
        "update_reservation_flights",
        {"reservation_id": "EHGLP3", "cabin": "basic_economy", "flights": "HAT156", "payment_id": EMMA_CARD},
        "'str' object has no attribute 'flight_number'",  # a string where a list belongs
    ),
    (
        "update_reservation_passengers",
        {"reservation_id": "EHGLP3", "passengers": [TRAVELLER]},
        "Number of passengers does not match",
    ),
]


@refusal_cases(REFUSALS)
def test_airline_tool_refuses_bad_request(env: Environment, name: str, arguments: dict[str, Any],
                                          fragment: str) -> None:
    refused(env, name, arguments, fragment)


def test_every_airline_tool_has_a_refusal_case(env: Environment) -> None:
    assert {s["function"]["name"] for s in env.tool_schemas()} == {r[0] for r in REFUSALS}


def test_book_reservation_takes_seats_and_files_fixed_id(content: Content, env: Environment) -> None:
    reservation = content(
        env,
        "book_reservation",
        _booking(
            insurance="yes",
            nonfree_baggages=1,
            total_baggages=3,
            payment_methods=[{"payment_id": EMMA_CARD, "amount": 137 + 30 + 50}],
        ),
    )
    assert reservation["reservation_id"] == "HATHAT"
    assert reservation["created_at"] == "2024-05-15T15:00:00"
    assert reservation["status"] is None
    assert reservation["flights"] == [
        {"flight_number": "HAT001", "origin": "PHL", "destination": "LGA", "date": "2024-05-20", "price": 137}
    ]
    assert "HATHAT" in content(env, "get_user_details", {"user_id": EMMA})["reservations"]
    seats = content(
        env, "search_direct_flight", {"origin": "PHL", "destination": "LGA", "date": "2024-05-20"}
    )
    assert next(f for f in seats if f["flight_number"] == "HAT001")["available_seats"]["economy"] == 16
    assert content(env, "book_reservation", _booking())["reservation_id"] == "HATHAU"


def test_book_reservation_debits_gift_card_and_consumes_certificate(
    content: Content, env: Environment
) -> None:
    content(
        env,
        "book_reservation",
        _booking(
            user_id=MIA,
            cabin="business",
            payment_methods=[
                {"payment_id": "certificate_4856383", "amount": 100},
                {"payment_id": "credit_card_4421486", "amount": 311},
            ],
        ),
    )
    methods = content(env, "get_user_details", {"user_id": MIA})["payment_methods"]
    assert "certificate_4856383" not in methods and "certificate_7504069" in methods
    content(
        env,
        "book_reservation",
        _booking(
            payment_methods=[
                {"payment_id": EMMA_GIFT, "amount": 100},
                {"payment_id": EMMA_CARD, "amount": 37},
            ]
        ),
    )
    assert content(env, "get_user_details", {"user_id": EMMA})["payment_methods"][EMMA_GIFT]["amount"] == 3.0


def test_calculate_is_shared_with_retail(content: Content, env: Environment) -> None:
    assert content(env, "calculate", {"expression": "137 * 2 + 30"}) == 304


def test_cancel_reservation_refunds_every_payment_and_keeps_seats(content: Content, env: Environment) -> None:
    seats_before = content(
        env, "search_direct_flight", {"origin": "PHX", "destination": "SEA", "date": "2024-05-17"}
    )
    reservation = content(env, "cancel_reservation", {"reservation_id": "EHGLP3"})
    assert reservation["status"] == "cancelled"
    assert reservation["payment_history"] == [
        {"payment_id": EMMA_CARD, "amount": 208},
        {"payment_id": EMMA_CARD, "amount": -208},
    ]
    assert (
        content(env, "search_direct_flight", {"origin": "PHX", "destination": "SEA", "date": "2024-05-17"})
        == seats_before
    )


def test_get_tools_return_stored_records(content: Content, env: Environment) -> None:
    assert content(env, "get_user_details", {"user_id": EMMA})["membership"] == "gold"
    assert content(env, "get_reservation_details", {"reservation_id": "EHGLP3"})["cabin"] == "basic_economy"
    assert content(env, "get_flight_status", {"flight_number": "HAT001", "date": "2024-05-03"}) == "cancelled"


def test_list_all_airports_has_twenty_codes(content: Content, env: Environment) -> None:
    airports = content(env, "list_all_airports", {})
    assert len(airports) == 20 and {"iata": "JFK", "city": "New York"} in airports


def test_search_direct_flight_lists_only_bookable_dates(content: Content, env: Environment) -> None:
    found = content(
        env, "search_direct_flight", {"origin": "PHL", "destination": "LGA", "date": "2024-05-20"}
    )
    hat001 = next(f for f in found if f["flight_number"] == "HAT001")
    assert hat001["prices"] == {"basic_economy": 61, "economy": 137, "business": 411}
    assert all(f["status"] == "available" for f in found)
    landed = content(
        env, "search_direct_flight", {"origin": "PHL", "destination": "LGA", "date": "2024-05-10"}
    )
    assert landed == []


def test_search_onestop_flight_connects_after_arrival(content: Content, env: Environment) -> None:
    pairs = content(
        env, "search_onestop_flight", {"origin": "PHX", "destination": "JFK", "date": "2024-05-17"}
    )
    assert pairs
    for first, second in pairs:
        assert (first["origin"], second["destination"]) == ("PHX", "JFK")
        assert second["origin"] == first["destination"]
        if first["scheduled_arrival_time_est"].endswith("+1"):
            assert second["date"] == "2024-05-18"
        else:
            # tau2 lets the second leg leave at the very time the first lands (a string >=)
            assert second["scheduled_departure_time_est"] >= first["scheduled_arrival_time_est"]


def test_search_onestop_flight_pairs_overnight_leg_with_next_day(content: Content, env: Environment) -> None:
    # HAT021 SEA->JFK lands 01:00+1, so its connections leave JFK the next day
    pairs = content(
        env, "search_onestop_flight", {"origin": "SEA", "destination": "MIA", "date": "2024-05-17"}
    )
    overnight = [p for p in pairs if p[0]["flight_number"] == "HAT021"]
    assert overnight and all(p[1]["date"] == "2024-05-18" for p in overnight)


def test_next_day_keeps_tau2_unpadded_quirk() -> None:
    # tau2 parity (spec §B.4.5); only days 1-8 are affected, and those dates are all in the past here
    assert _next_day_unpadded("2024-05-05") == "2024-05-6"
    assert _next_day_unpadded("2024-05-17") == "2024-05-18"


def test_send_certificate_uses_fixed_ids_in_turn(content: Content, env: Environment) -> None:
    assert content(env, "send_certificate", {"user_id": EMMA, "amount": 150}) == (
        "Certificate certificate_3221322 added to user emma_kim_9957 with amount 150."
    )
    env.call("send_certificate", {"user_id": EMMA, "amount": 50})
    methods = content(env, "get_user_details", {"user_id": EMMA})["payment_methods"]
    assert methods["certificate_3221322"] == {
        "source": "certificate",
        "id": "certificate_3221322",
        "amount": 150.0,
    }
    assert methods["certificate_3221323"]["amount"] == 50.0


def test_transfer_to_human_agents_changes_nothing(env: Environment) -> None:
    before = env.db_hash()
    assert (
        env.call("transfer_to_human_agents", {"summary": "needs a route change"}).content
        == "Transfer successful"
    )
    assert env.db_hash() == before


def test_update_reservation_baggages_charges_only_added_nonfree_bags(
    content: Content, env: Environment
) -> None:
    reservation = content(
        env,
        "update_reservation_baggages",
        {"reservation_id": "EHGLP3", "total_baggages": 3, "nonfree_baggages": 2, "payment_id": EMMA_CARD},
    )
    assert (reservation["total_baggages"], reservation["nonfree_baggages"]) == (3, 2)
    assert reservation["payment_history"][-1] == {"payment_id": EMMA_CARD, "amount": 100}
    again = content(
        env,
        "update_reservation_baggages",
        {"reservation_id": "EHGLP3", "total_baggages": 1, "nonfree_baggages": 1, "payment_id": EMMA_CARD},
    )
    assert len(again["payment_history"]) == 2  # fewer bags: no charge, no refund


def _same_legs_in(content: Content, env: Environment, cabin: str) -> Any:
    """Move reservation EHGLP3 to ``cabin`` on its own two legs (HAT156, HAT021 on 2024-05-17)."""
    legs = [
        {"flight_number": "HAT156", "date": "2024-05-17"},
        {"flight_number": "HAT021", "date": "2024-05-17"},
    ]
    return content(
        env,
        "update_reservation_flights",
        {"reservation_id": "EHGLP3", "cabin": cabin, "flights": legs, "payment_id": EMMA_CARD},
    )


def test_update_reservation_flights_reprices_new_cabin(content: Content, env: Environment) -> None:
    reservation = _same_legs_in(content, env, "economy")
    assert [f["price"] for f in reservation["flights"]] == [171, 143]
    assert reservation["cabin"] == "economy"
    assert reservation["payment_history"][-1] == {
        "payment_id": EMMA_CARD,
        "amount": (171 + 143 - 50 - 54) * 2,
    }


def test_update_reservation_flights_keeps_fare_of_unchanged_legs(content: Content, env: Environment) -> None:
    reservation = _same_legs_in(content, env, "basic_economy")
    assert [f["price"] for f in reservation["flights"]] == [50, 54]  # today's fares are 63 and 87
    assert len(reservation["payment_history"]) == 1


def test_changes_cannot_be_paid_by_certificate(env: Environment) -> None:
    dump = env.agent_db.dump()
    user, certificate = next(
        (u["user_id"], m)
        for u in dump["users"].values()
        if u["reservations"]
        for m, v in u["payment_methods"].items()
        if v["source"] == "certificate"
    )
    reservation = dump["users"][user]["reservations"][0]
    refused(
        env,
        "update_reservation_baggages",
        {
            "reservation_id": reservation,
            "total_baggages": 9,
            "nonfree_baggages": 9,
            "payment_id": certificate,
        },
        "Certificate cannot be used to update reservation",
    )


def test_update_reservation_passengers_replaces_names(content: Content, env: Environment) -> None:
    people = [TRAVELLER, {"first_name": "Ana", "last_name": "Silva", "dob": "1971-11-22"}]
    reservation = content(
        env, "update_reservation_passengers", {"reservation_id": "EHGLP3", "passengers": people}
    )
    assert reservation["passengers"] == people
