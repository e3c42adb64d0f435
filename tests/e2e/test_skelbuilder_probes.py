"""SkelBuilder's environment check tests every tool on its success path (issue 30 item 3), through
the real client against the local endpoint: probes chain (a visit booked, then checked in once
the clock reaches it, then completed), and a probe state from the model lets the tools that
never succeeded on the initial state succeed."""

from __future__ import annotations

import pytest
from llm_server import TEST_STAGE, make_client, within

from envmill.schemas.skeleton import SkeletonSettings
from envmill.tasks.backends.llm.skelbuilder import build_environment
from envmill.tasks.offline_llm import serve_endpoint

CLINIC = (
    "outpatient clinic appointments: book appointment with reminders, by phone, for a city office"
)
PATIENT = TEST_STAGE.model_copy(update={"timeout_seconds": 10.0, "deadline_seconds": 30.0})
WAITS = ("mark_patient_arrived", "finish_appointment", "mark_no_show")  # the clinic's timed tools


@pytest.fixture(scope="module")
def endpoint():
    with serve_endpoint() as served:
        yield served


@pytest.fixture
def fresh(endpoint):
    endpoint.configure(slips=[])
    endpoint.reset()
    return endpoint


def _build(endpoint, sandbox, tmp_path, settings=None):
    client = make_client(endpoint.url, tmp_path, default=PATIENT)
    return within(
        40, lambda: build_environment(CLINIC, client, sandbox, settings or SkeletonSettings())
    )


def test_probes_chain_and_a_probe_state_lets_every_state_changing_tool_succeed(
    fresh, sandbox, tmp_path
):
    outcome = _build(fresh, sandbox, tmp_path)
    draft = outcome.draft
    assert draft is not None, outcome.failure
    won = {p.tool for p in outcome.probes if p.kind == "positive" and p.result.get("success")}
    changing = {name for name, kind in draft.admitted.tool_kinds.items() if kind == "state_change"}
    assert draft.check.accepted and won >= changing
    assert set(WAITS) <= won  # each of them was only ever refused before chains and a clock
    made = [
        p
        for p in outcome.probes
        if p.tool in WAITS
        and p.result.get("success")
        and p.arguments["appointment_id"] not in draft.initial_state["appointments"]
    ]
    assert made, "no timed tool succeeded on a visit an earlier probe booked"
    judged = "".join(r["body"]["messages"][-1]["content"] for r in fresh.requests("skeleton_judge"))
    assert '"at_time":' in judged  # the judge sees where the tester moved the clock
    (asked,) = fresh.requests("skeleton_probe_state")  # asked once, for what never succeeded
    shown = asked["body"]["messages"][-1]["content"]
    assert "Tools that never succeeded:" in shown and '"mark_no_show"' in shown
    last = max(p.round for p in outcome.probes)
    on_probe_state = [p for p in outcome.probes if p.round == last]
    assert on_probe_state and all(p.result.get("success") for p in on_probe_state)
