"""SkelBuilder's environment check tests every tool on its success path (issue 30 item 3), through
the real client against the local endpoint: probes chain (a visit booked, then checked in once
the clock reaches it, then completed), a probe state from the model lets the tools that never
succeeded on the initial state succeed, a tool that never succeeds is a named finding and past
a share fails the gate, and the judge's warnings are stored on the environment and shown."""

from __future__ import annotations

import json

import pytest
from llm_server import TEST_STAGE, make_client, within

from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.skeleton import SkeletonSettings
from envmill.tasks.backends.llm.backend import LlmBackend
from envmill.tasks.backends.llm.skelbuilder import build_environment
from envmill.tasks.offline_llm import serve_endpoint
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.warehouse.rows import write_batch
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query
from tests.conftest import call_main

CLINIC = (
    "outpatient clinic appointments: book appointment with reminders, by phone, for a city office"
)
WAREHOUSE = "warehouse stock control for a regional operator"
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


def _pipeline(endpoint, sandbox, tmp_path, topic, settings=None):
    client = make_client(endpoint.url, tmp_path, default=PATIENT)
    backend = LlmBackend(client, [topic], settings)
    run = EnvmillSettings(envs=1, batch_size=1, scenarios_per_env=1)
    (batch,) = plan_batches(run, backend)
    return within(60, lambda: synthesize_batch(batch, run, sandbox, backend))


def test_probes_chain_and_a_probe_state_lets_every_state_changing_tool_succeed(
    fresh, sandbox, tmp_path
):
    outcome = _build(fresh, sandbox, tmp_path)
    draft = outcome.draft
    assert draft is not None, outcome.failure
    won = {p.tool for p in outcome.probes if p.kind == "positive" and p.result.get("success")}
    changing = {name for name, kind in draft.admitted.tool_kinds.items() if kind == "state_change"}
    assert draft.check.accepted and won >= changing and draft.check.never_succeeded == []
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


def test_a_probe_state_that_does_not_load_is_shown_to_the_model_then_given_up(
    fresh, sandbox, tmp_path
):
    fresh.configure(
        slips=[{"kind": "naive_tester"}, {"kind": "bad_probe_state", "persistent": True}]
    )
    outcome = _build(fresh, sandbox, tmp_path, SkeletonSettings(untested_success_share=1.0))
    assert outcome.draft is not None, outcome.failure  # the check goes on without it
    asked = fresh.requests("skeleton_probe_state")
    assert len(asked) == 3  # the answer and two repair rounds
    assert (
        "the class creates no attribute 'audit_log'" in asked[-1]["body"]["messages"][-1]["content"]
    )
    assert not [p for p in outcome.probes if p.round > 0]  # no probe ran on a refused state
    assert set(WAITS) <= set(outcome.draft.check.never_succeeded)


def test_a_tool_that_never_succeeds_is_named_and_past_the_share_fails_the_gate(
    fresh, sandbox, tmp_path
):
    slips = [{"kind": "naive_tester"}, {"kind": "useless_probe_state", "persistent": True}]
    fresh.configure(slips=slips)
    output = _pipeline(fresh, sandbox, tmp_path, CLINIC)
    (failure,) = output.failures
    assert (failure.stage, failure.code) == ("env_check", "untested_success")
    assert "state-changing tools never succeeded" in failure.message and "> 0.25" in failure.message
    named = [d for d in failure.details if " never succeeded in " in d]
    assert {d.split()[0] for d in named} >= set(WAITS), failure.details
    assert not output.environments and output.env_probes  # its probes say why

    lenient = SkeletonSettings(untested_success_share=0.5)
    output = _pipeline(fresh, sandbox, tmp_path / "lenient", CLINIC, lenient)
    (env,) = output.environments
    found = {w.tool: w.message for w in env.warnings if w.kind == "never_succeeded"}
    assert set(WAITS) <= set(found), env.warnings
    assert found["finish_appointment"].startswith("finish_appointment never succeeded in ")


def test_judge_warnings_are_stored_on_the_environment_and_shown(
    fresh, sandbox, tmp_path, monkeypatch, capsys
):
    fresh.configure(slips=[{"kind": "judge_warns"}])
    output = _pipeline(fresh, sandbox, tmp_path, WAREHOUSE)
    (env,) = output.environments
    warned = [w for w in env.warnings if w.kind == "judge_warning"]
    assert warned and all("domain doubt" in w.message and w.probes for w in warned)
    root = tmp_path / "data"
    assert write_batch(Warehouse(root), output, "run-1")
    (row,) = query(root, "SELECT warnings_json FROM environments").to_pylist()
    assert [w["kind"] for w in json.loads(row["warnings_json"])] == [w.kind for w in env.warnings]
    shown = call_main(monkeypatch, capsys, ("show", "env", env.env_id[:8], "--out", str(root)))
    assert shown.returncode == 0, shown.stderr
    section = shown.stdout.split("\n# warnings\n", 1)[1].split("\n# source\n", 1)[0]
    assert f"- judge_warning: {warned[0].tool}: {warned[0].message}" in section
    assert '"warnings_json"' not in shown.stdout  # shown once, as lines a person reads

    strict = SkeletonSettings(warnings_fail=True, pass_threshold=1.0)
    output = _pipeline(fresh, sandbox, tmp_path / "strict", WAREHOUSE, strict)
    (failure,) = output.failures
    assert failure.code == "pass_rate_below_threshold"
    assert "warned (warnings count as failures)" in failure.message
