"""The procedural backend through the real sandbox and certification, for every domain."""

from __future__ import annotations

import pytest

from envmill.schemas.scenario import CheckSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends.procedural.catalog import list_domains
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from tests.conftest import TEST_LIMITS


def _settings(**overrides) -> EnvmillSettings:
    base = {
        "envs": 2,
        "scenarios_per_env": 3,
        "batch_size": 100,
        "seed": 11,
        "sandbox": TEST_LIMITS,
    }
    return EnvmillSettings(**{**base, **overrides})


def _run(settings: EnvmillSettings, sandbox):
    (batch,) = plan_batches(settings)
    return synthesize_batch(batch, settings, sandbox)


def test_there_are_at_least_twelve_domains():
    assert len(list_domains()) >= 12


@pytest.mark.parametrize("domain", list_domains())
def test_every_domain_yields_certified_scenarios(domain, sandbox):
    output = _run(_settings(envs=1, domains=[domain]), sandbox)
    assert [f for f in output.failures if f.stage != "scenarios"] == []
    (env,) = output.environments
    kinds = set(env.tool_kinds.values())
    assert kinds == {"query", "state_change"} and len(env.tools) >= 12
    certified = [s for s in output.scenarios if s.status == "certified"]
    assert certified, [
        (s.rejected_gate, [g.reason for g in s.gates if not g.passed]) for s in output.scenarios
    ]
    assert len(output.trajectories) == len(certified)
    assert {s.env_id for s in output.scenarios} == {env.env_id}


def test_same_seed_same_ids_and_different_seed_different_ids(sandbox):
    first = _run(_settings(domains=["library", "banking"]), sandbox)
    again = _run(_settings(domains=["library", "banking"]), sandbox)
    other = _run(_settings(domains=["library", "banking"], seed=12), sandbox)

    def ids(output):
        return [e.env_id for e in output.environments], [s.scenario_id for s in output.scenarios]

    assert ids(first) == ids(again) and ids(first)[1]
    assert not set(ids(first)[0]) & set(ids(other)[0])
    assert not set(ids(first)[1]) & set(ids(other)[1])


def test_a_generator_bug_is_a_rejection_rate_not_a_crash(sandbox, monkeypatch):
    from envmill.tasks.backends.procedural.scenarios import generate as scenarios

    wrong = CheckSpec(
        description="Has a wrong expectation",
        code="def check(initial_state, final_state):\n    return final_state == {}\n",
    )
    monkeypatch.setattr(scenarios, "derive_checks", lambda *args, **kwargs: [wrong])
    monkeypatch.setattr(scenarios, "KIND_SHARES", {"change": 1.0})  # answers derive no checks
    output = _run(_settings(envs=1, domains=["clinic"]), sandbox)
    assert output.scenarios and all(s.status == "rejected" for s in output.scenarios)
    assert {s.rejected_gate for s in output.scenarios} == {"checks_pass"}
    assert output.trajectories == []


def test_a_sandbox_failure_is_a_failure_row_not_a_crash(sandbox, monkeypatch):
    from envmill.tasks import pipeline
    from envmill.tasks.sandbox import SandboxError

    def broken(*args, **kwargs):
        raise SandboxError("the sandbox zygote is not answering: simulated")

    monkeypatch.setattr(pipeline, "certify_scenario", broken)
    output = _run(_settings(envs=1, domains=["library"]), sandbox)
    assert output.environments and output.scenarios == []
    stages = {(f.stage, f.error_class) for f in output.failures}
    assert stages == {("certify", "SandboxError")}
    monkeypatch.setattr(pipeline, "admit_environment", broken)
    output = _run(_settings(envs=1, domains=["library"]), sandbox)
    assert [(f.stage, f.item) for f in output.failures] == [("item", output.failures[0].item)]
    assert output.failures[0].item.startswith("library#")
