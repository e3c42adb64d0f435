"""A refusal says only what the agent saw, and sends the user only where help exists.

Round 44's raters: "Claim CLM-000005 isn't one of your own claims" was said having read only the
claim's policy number, never the policy's holder; "please ask the front desk to do it for you"
sent a guest to an act the front desk could not do either (the one-day window had passed); and a
customer paid with store credit without anyone looking at the credit first.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.procedural.catalog import load_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.scenarios import generate as scenarios
from envmill.tasks.backends.procedural.scenarios.refusals import _staff_could
from envmill.tasks.backends.procedural.state.fill import build_initial_state
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from envmill.warehouse.rows import write_batch
from envmill.warehouse.store import Warehouse
from envmill.warehouse.views import query
from tests.conftest import TEST_LIMITS

OWNED_DOMAINS = ["insurance_claims", "parcel_shipping", "library", "airline"]
SEED = 2
OWN_SEED = 1
ID = re.compile(r"[A-Z][A-Z0-9]*-\d+")


def _run(tmp_path, sandbox, monkeypatch, kind: str, domains: list[str], seed: int, per_env=6):
    monkeypatch.setattr(scenarios, "KIND_SHARES", {kind: 1.0})
    settings = EnvmillSettings(
        envs=len(domains),
        scenarios_per_env=per_env,
        batch_size=100,
        seed=seed,
        sandbox=TEST_LIMITS,
        domains=domains,
    )
    (batch,) = plan_batches(settings)
    output = synthesize_batch(batch, settings, sandbox)
    warehouse = Warehouse(tmp_path / "data")
    assert write_batch(warehouse, output, "run-test")
    sql = (
        "select s.kind, t.messages_json from scenarios s join trajectories t using (scenario_id)"
        " where t.policy = 'reference' and s.status = 'certified'"
    )
    return [
        (row["kind"], json.loads(row["messages_json"]))
        for row in query(warehouse.root, sql).to_pylist()
    ]


def _results(messages: list[dict]) -> list[dict]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


@pytest.mark.timeout(600)
def test_a_record_is_called_someone_elses_only_once_its_owner_was_seen(
    tmp_path, sandbox, monkeypatch
):
    rows = _run(tmp_path, sandbox, monkeypatch, "refusal", OWNED_DOMAINS, seed=OWN_SEED, per_env=8)
    theirs = [m for _, m in rows if "isn't one of your own" in (m[-1].get("content") or "")]
    assert len(theirs) >= 2, [m[-1].get("content") for _, m in rows]
    for messages in theirs:
        results = _results(messages)
        me = next(r["data"]["acting_id"] for r in results if "acting_id" in r.get("data", {}))
        prefix = me.split("-")[0] + "-"
        shown = {i for r in results[1:] for i in ID.findall(json.dumps(r))}
        owners = {i for i in shown if i.startswith(prefix) and i != me}
        assert owners, messages  # whose it is, from a result: not a guess


@pytest.mark.timeout(600)
def test_store_credit_is_looked_at_before_an_order_is_paid_with_it(tmp_path, sandbox, monkeypatch):
    rows = _run(tmp_path, sandbox, monkeypatch, "conditional", ["ecommerce"], seed=SEED, per_env=12)
    paid = 0
    for kind, messages in rows:
        if not kind.startswith("conditional"):
            continue  # "pay it with my credit", asked plainly: the tool checks it covers
        calls = [
            (i, c["function"]["name"])
            for i, m in enumerate(messages)
            for c in m.get("tool_calls") or []
        ]
        for index, name in calls:
            if "credit" not in name:
                continue
            paid += 1
            before = [m["content"] for m in messages[:index] if m["role"] == "tool"]
            assert any('"store_credit"' in text for text in before), messages
    assert paid, [m[-1].get("content") for _, m in rows]


@pytest.mark.parametrize("hours_ago, desk_can", [(2, True), (24 * 5, False)])
def test_a_guest_is_sent_to_the_front_desk_only_while_it_can_still_void(
    sandbox, hours_ago, desk_can
):
    """A charge posted hours ago the desk can void; one posted days past the window it
    cannot, so the guest refused is not told to ask it."""
    compiled = compile_environment(load_domain("hotel"), 0)
    state = build_initial_state(compiled, 0)
    void = next(t for t in compiled.tools if t.tool in ("void_charge", "reverse_charge"))
    now = datetime.fromisoformat(state["current_time"])
    reservation = next(
        r
        for r in state[compiled.entity_attrs["reservation"]].values()
        if r["status"] == "checked_in"
    )
    charges = state[compiled.entity_attrs[void.entity]]
    charge_id, charge = next(iter(charges.items()))
    charge.update(
        reservation_id=reservation["reservation_id"],
        status="posted",
        amount=1.0,
        posted_at=(now - timedelta(hours=hours_ago)).isoformat(timespec="seconds"),
    )
    reservation["balance"] = max(float(reservation.get("balance") or 0), 50.0)
    state[compiled.acting_role_attr] = "guest"
    state[compiled.acting_id_attr] = reservation["guest_id"]
    with sandbox.episode(compiled.source, compiled.class_name, state) as episode:
        arguments = {void.args[0].name: charge_id}
        assert not episode.call(void.tool, dict(arguments)).succeeded  # a guest may not
        assert _staff_could(compiled, episode, void, arguments) is desk_can


def test_no_filled_application_asks_for_more_than_the_lender_lends():
    """Round 47: "a $45,000 application against a $30,000 cap" in a filled state."""
    from envmill.tasks.backends.procedural.plan import plan_environment

    for seed in range(8):
        compiled = compile_environment(load_domain("loans"), seed)
        cap = plan_environment(compiled.spec, seed).limits["max_loan_amount"]
        state = build_initial_state(compiled, seed)
        asked = [
            a["amount_requested"] for a in state[compiled.entity_attrs["application"]].values()
        ]
        assert asked and max(asked) <= cap, (seed, cap, max(asked))
