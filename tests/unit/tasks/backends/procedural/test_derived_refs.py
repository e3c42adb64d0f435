"""A field copied along refs follows them: a payout is paid to the holder of its claim's policy,
for what the claim was approved (round 71: $4,302.69 to PH-00009 on PH-00001's claim approved
for $276.73), also after the fill's repairs repoint the payout to another claim."""

from __future__ import annotations

import copy

import pytest

from envmill.tasks.backends.procedural.catalog import load_domain, parse_domain
from envmill.tasks.backends.procedural.codegen.compiler import compile_environment
from envmill.tasks.backends.procedural.spec.domain import SpecError
from envmill.tasks.backends.procedural.state.fill import build_initial_state


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_payout_goes_to_the_claims_policyholder_for_the_approved_amount(seed):
    state = build_initial_state(compile_environment(load_domain("insurance_claims"), seed), seed)
    payouts = state["payouts"].values()
    assert payouts
    for payout in payouts:
        claim = state["claims"][payout["claim_id"]]
        policy = state["policies"][claim["policy_id"]]
        assert payout["policyholder_id"] == policy["policyholder_id"], payout
        assert payout["amount"] == claim["approved_amount"], (payout, claim)


def test_a_ref_derived_from_a_path_that_ends_elsewhere_is_refused():
    raw = copy.deepcopy(load_domain("insurance_claims").model_dump(by_alias=True, mode="json"))
    raw["entities"]["payout"]["fields"]["policyholder_id"]["derive"] = "claim_id.policy_id"
    with pytest.raises(SpecError, match="derives a policyholder from 'claim_id.policy_id'"):
        parse_domain(raw)
