"""Drawn arguments that fit the records they change: an approval at most the amount claimed, a
new income near the old one, a trip's kilometres at a plausible speed since it started, a delay
to a later departure (and the tool refuses an earlier one)."""

from __future__ import annotations

import random
from datetime import date
from typing import Any

from faker import Faker

from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.manifest import ArgManifest, RecordRead
from envmill.tasks.backends.procedural.scenarios.chains import ArgumentDrawer

NOW = "2025-06-10T10:15:00"


def _draws(arg: ArgManifest, state: dict[str, Any], chosen: dict[str, Any], n: int = 200) -> list:
    compiled = compile_environment(load_domain("insurance_claims"), 0)
    drawer = ArgumentDrawer(compiled, random.Random(7), Faker())
    return [drawer.draw_value(arg, {"current_time": NOW, **state}, chosen) for _ in range(n)]


def _read(arg: str, attr: str, field: str) -> RecordRead:
    return RecordRead(arg=arg, attrs=[attr], fields=[field])


def test_a_record_read_follows_refs():
    state = {"claims": {"C-1": {"policy_id": "P-1"}}, "policies": {"P-1": {"cover": 900.0}}}
    read = RecordRead(arg="claim_id", attrs=["claims", "policies"], fields=["policy_id", "cover"])
    assert read.read(state, {"claim_id": "C-1"}) == 900.0
    assert read.read(state, {"claim_id": "C-9"}) is None


def test_the_manifest_bounds_an_approval_by_the_claim():
    compiled = compile_environment(load_domain("insurance_claims"), 0)
    tool = next(
        t for t in compiled.tools if t.tool in ("approve_claim", "accept_claim", "settle_claim")
    )
    amount = next(a for a in tool.args if a.name == "approved_amount")
    assert [(r.arg, r.fields) for r in amount.at_most][0] == ("claim_id", ["amount_claimed"])


def test_an_approval_is_drawn_at_most_the_amount_claimed_mostly():
    """The rater's $4,506.10 approval on a $637.57 claim; a few stay over for refusals."""
    arg = ArgManifest(name="approved_amount", source="float", minimum=100, maximum=9000,
                      at_most=[_read("claim_id", "claims", "amount_claimed")])  # fmt: skip
    state = {"claims": {"C-1": {"amount_claimed": 637.57}}}
    values = _draws(arg, state, {"claim_id": "C-1"})
    within = [v for v in values if v <= 637.57]
    assert len(within) >= 0.8 * len(values)
    assert min(within) >= 100


def test_a_replaced_amount_is_drawn_near_the_old_one():
    arg = ArgManifest(name="annual_income", source="float", minimum=18000, maximum=160000,
                      near=_read("borrower_id", "borrowers", "annual_income"))  # fmt: skip
    values = _draws(arg, {"borrowers": {"B-1": {"annual_income": 48000.0}}}, {"borrower_id": "B-1"})
    assert all(48000 * 0.8 <= v <= 48000 * 1.25 for v in values), (min(values), max(values))


def test_a_small_count_has_no_near_window():
    arg = ArgManifest(name="seats", source="int", minimum=1, maximum=9,
                      near=_read("booking_id", "bookings", "seats"))  # fmt: skip
    values = _draws(arg, {"bookings": {"B-1": {"seats": 2}}}, {"booking_id": "B-1"})
    assert len(set(values)) > 3


def test_a_trip_distance_fits_its_duration():
    """241 km between 09:00 and 10:15 is no trip: 20-65 km an hour since it started."""
    arg = ArgManifest(name="distance_km", source="int", minimum=1, maximum=5000, per_hour=[20, 65],
                      since=_read("trip_id", "trips", "started_at"))  # fmt: skip
    values = _draws(
        arg, {"trips": {"T-1": {"started_at": "2025-06-10T09:00:00"}}}, {"trip_id": "T-1"}
    )
    assert all(25 <= v <= 82 for v in values), (min(values), max(values))


def test_a_delay_is_drawn_after_the_current_departure():
    arg = ArgManifest(name="departs_at", source="datetime",
                      at_least=[_read("flight_id", "flights", "departs_at")])  # fmt: skip
    state = {"flights": {"F-1": {"departs_at": "2025-06-12T14:00:00"}}}
    values = _draws(arg, state, {"flight_id": "F-1"}, n=30)
    assert all("2025-06-12T14:00:00" < v <= "2025-06-12T20:00:00" for v in values), values


def test_an_extended_end_date_is_drawn_days_later():
    arg = ArgManifest(name="ends_on", source="date",
                      at_least=[_read("campaign_id", "campaigns", "ends_on")])  # fmt: skip
    state = {"campaigns": {"C-1": {"ends_on": "2025-06-20"}}}
    values = _draws(arg, state, {"campaign_id": "C-1"}, n=30)
    assert all("2025-06-20" < v <= "2025-07-20" for v in values), values


def _airline_with_delay() -> Any:
    spec = load_domain("airline")
    seed = next(
        s
        for s in range(40)
        if any(t.tool in ("delay_flight", "mark_flight_delayed")
               for t in compile_environment(spec, s).tools)
    )  # fmt: skip
    return compile_environment(spec, seed)


def test_the_delay_tool_refuses_an_earlier_departure():
    compiled = _airline_with_delay()
    namespace: dict[str, Any] = {}
    exec(compile(compiled.source, "airline", "exec"), namespace)  # noqa: S102 - our own code
    env = namespace[compiled.class_name]()
    tool = next(t.tool for t in compiled.tools if t.tool in ("delay_flight", "mark_flight_delayed"))
    flight = {"flight_id": "FL-1", "departs_at": "2025-06-12T14:00:00", "status": "scheduled"}
    for name in env.__dict__:
        if isinstance(getattr(env, name), dict):
            setattr(env, name, {})
    env.flights, env.current_time = {"FL-1": dict(flight)}, NOW
    if hasattr(env, "acting_role"):
        env.acting_role, env.acting_id = "staff", None
    earlier = getattr(env, tool)("FL-1", "2025-06-12T11:00:00")
    assert "error" in earlier and "after" in earlier["error"], earlier
    later = getattr(env, tool)("FL-1", "2025-06-12T16:30:00")
    assert "error" not in later, later
    assert env.flights["FL-1"]["departs_at"] == "2025-06-12T16:30:00"


def test_an_optional_value_no_phrase_says_is_not_drawn():
    """Round 34: "Please change the email of a member" became a call that changed the phone
    too, since the phone (optional, said by no phrase) was drawn beside the email."""
    for seed in range(40):  # the tool is optional in the catalog: a seed that has it
        compiled = compile_environment(load_domain("library"), seed)
        tool = next((t for t in compiled.tools if "contact" in t.tool), None)
        if tool is not None:
            break
    assert tool is not None and not any("{phone" in p for p in tool.phrases)
    member = {"name": "Ann Lee", "email": "a@x.org", "phone": "555", "status": "active"}
    state = {"current_time": NOW, compiled.entity_attrs["member"]: {"MB-0001": member}}
    drawer = ArgumentDrawer(compiled, random.Random(3), Faker())
    drawn = [drawer.draw_arguments(tool, state) for _ in range(40)]
    assert any(d and "email" in d for d in drawn), drawn
    assert not any(d and "phone" in d for d in drawn), drawn


def test_a_sum_someone_chose_is_a_round_figure_in_the_seed_and_in_a_request():
    """Round 35: pledges of $2,267.67 and $388.02, a run of 14.01 hours."""
    from envmill.tasks.backends.procedural.scenarios.round_numbers import grid_near
    from envmill.tasks.backends.procedural.state.fill import build_initial_state

    compiled = compile_environment(load_domain("donations"), 0)
    state = build_initial_state(compiled, 5)
    pledges = state[compiled.entity_attrs["pledge"]]
    amounts = [p["amount"] for p in pledges.values()]
    assert amounts and all(a in grid_near(a) or a == int(a) for a in amounts), amounts
    hours = ArgManifest(name="hours", source="float", minimum=1, maximum=24)
    drawn = _draws(hours, {}, {})
    assert all(h == int(h) or h * 2 == int(h * 2) for h in drawn), drawn[:10]


def test_an_incident_is_drawn_in_the_past_and_an_end_months_ahead():
    """A breaker's: incident_on, birth_date and worked_on were drawn ahead, so file_claim,
    register_pet and record_time never ran; round 57: a $30,000 appeal ended in two days."""
    for name, low, high in (
        ("incident_on", -30, -1),
        ("birth_date", -15 * 365, -365),
        ("ends_on", 30, 120),
        ("due_on", 1, 14),
    ):
        drawn = _draws(ArgManifest(name=name, source="date"), {}, {}, n=60)
        days = {(date.fromisoformat(d) - date.fromisoformat(NOW[:10])).days for d in drawn}
        assert low <= min(days) and max(days) <= high, (name, sorted(days)[:3], sorted(days)[-3:])
