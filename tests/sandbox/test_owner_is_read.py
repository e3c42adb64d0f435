"""A signed-in customer's change on a record they own through another (a claim, through its
policy) reads that other record first: round 73's reference withdrew "my claim" having read
only the claim, so it never checked the claim was theirs."""

from __future__ import annotations

from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from tests.conftest import TEST_LIMITS


def test_the_record_between_a_change_and_its_owner_is_read_before_the_change(sandbox):
    settings = EnvmillSettings(
        envs=2,
        scenarios_per_env=12,
        batch_size=100,
        seed=1,
        sandbox=TEST_LIMITS,
        domains=["insurance_claims"],
    )
    (batch,) = plan_batches(settings)
    output = synthesize_batch(batch, settings, sandbox)
    reads = ("get", "lookup", "list", "find", "count", "sum", "total", "whoami", "search")
    checked = 0
    for record in output.scenarios:
        state = record.initial_state
        if record.status != "certified" or state.get("acting_role") != "policyholder":
            continue
        solution = record.reference_solution
        for index, step in enumerate(solution):
            claim = state["claims"].get(step.arguments.get("claim_id"))
            if claim is None or step.tool.startswith(reads) or record.kind.startswith("refusal"):
                continue
            read = [s for s in solution[:index] if claim["policy_id"] in s.arguments.values()]
            assert read, (record.task, [s.tool for s in solution])
            checked += 1
    assert checked, [r.task for r in output.scenarios]
