"""SkelBuilder's probes as a chain, on the golden clinic: a visit booked, checked in once the
clock reaches its day and completed, each on the state the earlier successful probes left, the
new id taken from the booking's result; a refused call and a clock sent back leave nothing."""

from __future__ import annotations

from envmill.schemas.skeleton import ProposedCall
from envmill.tasks.backends.llm.skelbuilder.chain import NOT_RUN, not_run, run_chain


def _call(tool: str, kind: str = "positive", at_time: str | None = None, **arguments):
    return ProposedCall(tool=tool, kind=kind, arguments=arguments, at_time=at_time)


def test_a_booked_visit_is_checked_in_on_its_day_and_completed(clinic, clinic_scenarios, sandbox):
    state = clinic_scenarios["certified"][2]["initial_state"]
    chain = [
        _call(
            "book_appointment", patient_id="P001", doctor_id="D03", start_time="2025-03-12T08:00:00"
        ),
        _call("cancel_appointment", "negative", appointment_id="A9999"),
        _call("check_in_patient", at_time="2025-03-12T07:45:00", appointment_id="$1.data"),
        _call("complete_appointment", appointment_id="$1.data"),
        _call("check_in_patient", at_time="2025-03-11T09:00:00", appointment_id="A0001"),
        _call("check_in_patient", appointment_id="$2.data"),
    ]
    with sandbox.episode(clinic.source, clinic.class_name, state) as episode:
        ran = run_chain(episode, clinic, state, list(enumerate(chain, 1)), 0, 10)
    booked, refused, checked_in, completed, backwards, dangling = ran
    assert [p.index for p in ran] == [10, 11, 12, 13, 14, 15]
    assert booked.result["success"] and booked.result["data"] == "A0008"
    assert refused.result["success"] is False and refused.diff == []
    assert checked_in.call.arguments == {"appointment_id": "A0008"}  # as it ran
    assert checked_in.result["success"], checked_in.result  # the clock reached the visit's day
    assert [c["path"] for c in checked_in.diff] == [["appointments", "A0008", "status"]]
    assert completed.result["success"], completed.result  # on the checked-in visit
    assert {
        "op": "change",
        "path": ["appointments", "A0008", "status"],
        "old": "checked_in",
        "new": "completed",
    } in completed.diff
    assert (
        backwards.result["error"].startswith(NOT_RUN)
        and "only moves forward" in (backwards.result["error"])
    )
    assert not_run(dangling) and "call 2's result has nothing at 'data'" in dangling.result["error"]
    assert not not_run(refused) and backwards.diff == dangling.diff == []
