"""Something sold under a name is picked by its name (round 38: "I'd like 1 of Copper Watering
Can (the active one)", "an order for the garden product")."""

from __future__ import annotations

from envmill.tasks.backends.procedural.scenarios.chains import ArgMention
from envmill.tasks.backends.procedural.scenarios.lookups import sold_by_name
from envmill.tasks.backends.procedural.scenarios.namesakes import _telling_fields

CAN = {"name": "Copper Watering Can", "price": 36.0, "status": "active", "colour": "copper"}
RETIRED = {"name": "Copper Watering Can", "price": 32.0, "status": "discontinued", "colour": "tin"}


def test_a_priced_named_record_is_sold_by_name_and_a_person_is_not():
    assert sold_by_name(CAN)
    assert not sold_by_name({"name": "Pamela Soto", "specialty": "dermatology"})
    assert not sold_by_name({"price": 3.0, "status": "open"})  # no name to call it by


def test_a_namesake_product_is_told_apart_by_what_a_buyer_sees_not_its_status():
    mention = ArgMention(
        "product_id", "PR-1", "entity_id", "product", "Copper Watering Can", "name", by_label=True
    )
    fields = _telling_fields({"PR-1": CAN, "PR-2": RETIRED}, CAN, mention, "PR-2")
    assert fields == ["colour"], fields
    staff_record = {**CAN, "price": "n/a"}  # not priced: its status may tell it apart, but
    other = {**RETIRED, "price": "n/a"}  # only where nothing a person would say does (round 42)
    both = {"PR-1": staff_record, "PR-2": other}
    assert _telling_fields(both, staff_record, mention, "PR-2") == ["colour"]
    same_colour = {**other, "colour": "copper"}
    both = {"PR-1": staff_record, "PR-2": same_colour}
    assert _telling_fields(both, staff_record, mention, "PR-2") == ["status"]


def test_a_signed_in_member_never_names_another_members_record_by_a_filter():
    """Round 40: "I'm leaving now; check me out of Brian Lee's checked-in booking", said by a
    member signed in as someone else."""
    from types import SimpleNamespace

    from envmill.tasks.backends.procedural.scenarios.lookups import LookupSampler

    fields = {
        "member_id": SimpleNamespace(entity="member"),
        "desk_id": SimpleNamespace(entity="desk"),
    }
    spec = SimpleNamespace(entities={"booking": SimpleNamespace(fields=fields)})

    def sampler(acting):
        compiled = SimpleNamespace(acting_id_attr="acting_id", spec=spec)
        fake = SimpleNamespace(state={"acting_id": acting}, compiled=compiled)
        fake._is_signed_in = lambda rid: acting is not None and str(rid) == str(acting)
        fake._person_refs = lambda entity, record: LookupSampler._person_refs(fake, entity, record)
        return fake

    booking = {"member_id": "CW-6", "desk_id": "DSK-9"}
    elses = LookupSampler._someone_elses
    assert elses(sampler("CW-3"), "booking", booking)  # another member's booking
    assert not elses(sampler("CW-6"), "booking", booking)  # their own
    assert not elses(sampler(None), "booking", booking)  # staff, no one signed in
    assert not elses(sampler("CW-3"), "booking", {"desk_id": "DSK-9"})  # no one's


def test_a_persons_record_is_never_named_by_a_filter_that_names_no_person():
    """Round 41: "Please cancel the approved leave request", "the earliest enrolment of
    Microeconomics": a record that belongs to someone is named by whose it is."""
    from types import SimpleNamespace

    from envmill.tasks.backends.procedural.scenarios.lookups import LookupSampler

    fields = {
        "student_id": SimpleNamespace(entity="student"),
        "course_id": SimpleNamespace(entity="course"),
    }
    spec = SimpleNamespace(
        entities={"enrolment": SimpleNamespace(fields=fields), "doctor": SimpleNamespace(fields={})}
    )
    fake = SimpleNamespace(compiled=SimpleNamespace(spec=spec))
    fake._person_refs = lambda entity, record: LookupSampler._person_refs(fake, entity, record)
    unnamed = LookupSampler._owner_unnamed
    enrolment = {"student_id": "ST-1", "course_id": "CRS-3"}
    assert unnamed(fake, "enrolment", enrolment, None)  # "the approved …" of anyone
    assert unnamed(fake, "enrolment", enrolment, SimpleNamespace(entity="course"))
    assert not unnamed(fake, "enrolment", enrolment, SimpleNamespace(entity="student"))
    assert not unnamed(fake, "doctor", {"specialty": "dermatology"}, None)  # "the dermatologist"
