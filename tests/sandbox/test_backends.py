"""The backend seam: the shared pipeline runs any backend the same way and knows none of them."""

from __future__ import annotations

import json

import pytest

from envmill.schemas.run import BatchSpec, EnvItemSpec, SkippedScenario
from envmill.schemas.scenario import ScenarioSpec
from envmill.schemas.settings import EnvmillSettings
from envmill.tasks.backends import PlanError, ScenarioDrafts, make_backend
from envmill.tasks.pipeline import plan_batches, synthesize_batch
from tests.conftest import FIXTURES


class FixtureDraft:
    """An environment draft that is just a hand-written module."""

    def __init__(self, source: str):
        self.source = source
        self.topic = "a small clinic"
        self.introduction = "Front desk of a clinic."
        self.business_rules = ["Patients check in before a visit."]
        self.domain = "clinic"
        self.call_records: list = []  # the records of the work it took: none
        self.probes: list = []


class FixtureBackend:
    """Makes the golden clinic environment and its certified scenarios; no procedural code."""

    name = "fixture"
    version = "fixture-1"
    item_threads = 1

    def __init__(self, source: str, scenarios: list[dict], skip: bool = False):
        self.source, self.scenarios, self.skip = source, scenarios, skip

    def plan_items(self, settings: EnvmillSettings) -> list[EnvItemSpec]:
        return [EnvItemSpec(index=i, subject="clinic", seed=i) for i in range(settings.envs)]

    def make_environment(self, item, sandbox) -> FixtureDraft:
        return FixtureDraft(self.source)

    def make_scenarios(self, draft, env, item, count, sandbox) -> ScenarioDrafts:
        specs = [ScenarioSpec(env_id=env.env_id, backend=self.name, **s) for s in self.scenarios]
        skipped = [SkippedScenario(index=9, code="no_idea", message="nothing came to mind")]
        return ScenarioDrafts(scenarios=specs[:count], skipped=skipped if self.skip else [])

    def provenance(self):
        return {"generator": self.version, "models": {}, "prompts": {}}


@pytest.fixture(scope="module")
def certified_scenarios() -> list[dict]:
    return json.loads((FIXTURES / "scenarios" / "clinic.json").read_text())["certified"]


def _run(backend, sandbox, envs: int = 1, scenarios: int = 2):
    settings = EnvmillSettings(envs=envs, scenarios_per_env=scenarios, batch_size=envs)
    (batch,) = plan_batches(settings, backend)
    return synthesize_batch(batch, settings, sandbox, backend)


def test_pipeline_runs_a_backend_it_does_not_know(clinic_source, certified_scenarios, sandbox):
    out = _run(FixtureBackend(clinic_source, certified_scenarios, skip=True), sandbox)
    (env,) = out.environments
    assert (env.backend, env.domain, env.topic) == ("fixture", "clinic", "a small clinic")
    assert [s.status for s in out.scenarios] == ["certified", "certified"]
    assert {s.backend for s in out.scenarios} == {"fixture"}
    assert len(out.trajectories) == 2
    (skip,) = out.failures
    assert (skip.stage, skip.error_class, skip.code) == ("scenarios", "Skipped", "no_idea")
    assert skip.item == f"{env.env_id}#9"


def test_backend_version_enters_the_batch_key(clinic_source, certified_scenarios):
    settings = EnvmillSettings(envs=2, batch_size=2)
    first = FixtureBackend(clinic_source, certified_scenarios)
    second = FixtureBackend(clinic_source, certified_scenarios)
    second.version = "fixture-2"
    assert plan_batches(settings, first)[0].key != plan_batches(settings, second)[0].key


def test_a_failing_backend_fails_its_item_only(clinic_source, certified_scenarios, sandbox):
    class Flaky(FixtureBackend):
        def make_environment(self, item, sandbox):
            if item.index == 0:
                raise RuntimeError("generator fell over")
            return super().make_environment(item, sandbox)

    out = _run(Flaky(clinic_source, certified_scenarios), sandbox, envs=2, scenarios=1)
    (failure,) = out.failures
    assert (failure.stage, failure.error_class, failure.item) == (
        "make_env",
        "RuntimeError",
        "clinic#0",
    )
    assert len(out.environments) == 1 and len(out.trajectories) == 1


def test_a_refused_module_keeps_every_policy_rule(certified_scenarios, sandbox):
    hostile = (
        "import os\n\nclass Env:\n    def __init__(self):\n        self.items = {}\n\n"
        "    def leak(self) -> dict:\n        return {'key': open('/etc/passwd').read()}\n"
    )
    out = _run(FixtureBackend(hostile, certified_scenarios), sandbox, scenarios=1)
    (failure,) = out.failures
    assert (failure.stage, failure.error_class) == ("env_policy", "EnvironmentRejected")
    assert len(failure.details) >= 2, failure.details  # the import and the open call
    assert failure.details[0].endswith(f"[{failure.code}]")  # code = the first violation's rule
    assert out.environments == [] and out.scenarios == []


def test_unknown_backend_and_domain_are_plan_errors():
    with pytest.raises(PlanError, match="no LLM endpoint configured"):
        make_backend(EnvmillSettings(backend="llm"))  # an exported key alone never spends
    llm = EnvmillSettings(backend="llm", llm={"base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(PlanError, match="needs topics"):
        plan_batches(llm)
    with pytest.raises(PlanError, match="unknown domain 'atlantis'"):
        plan_batches(EnvmillSettings(domains=["atlantis"]))


def test_batch_spec_round_trips_for_workers():
    batch = plan_batches(EnvmillSettings(envs=3, batch_size=2))[0]
    assert BatchSpec.model_validate_json(batch.model_dump_json()) == batch
    assert batch.items[0].label == f"{batch.items[0].subject}#{batch.items[0].seed}"


def test_threaded_items_run_at_once_and_come_out_in_item_order(
    clinic_source, certified_scenarios, sandbox
):
    import threading
    import time

    from envmill.schemas.llm import LlmCallRecord
    from envmill.tasks.backends import RecordedFailure

    class Waiting(FixtureBackend):
        item_threads = 4

        def __init__(self, *args):
            super().__init__(*args)
            self.lock, self.running, self.peak = threading.Lock(), 0, 0

        def make_environment(self, item, sandbox):
            with self.lock:
                self.running += 1
                self.peak = max(self.peak, self.running)
            time.sleep(0.2)  # waiting on an LLM
            with self.lock:
                self.running -= 1
            calls = [LlmCallRecord(stage="skeleton", model="m", request_hash="h", item=item.label)]
            if item.index == 1:
                raise RecordedFailure(RuntimeError("topic 1 failed"), calls)
            draft = super().make_environment(item, sandbox)
            draft.topic, draft.call_records = f"topic {item.index}", calls
            return draft

    backend = Waiting(clinic_source, certified_scenarios[:1])
    out = _run(backend, sandbox, envs=4, scenarios=1)
    assert backend.peak == 4
    assert [e.topic for e in out.environments] == ["topic 0", "topic 2", "topic 3"]
    assert [f.item for f in out.failures] == ["clinic#1"]
    assert sorted(c.item for c in out.llm_calls) == [f"clinic#{i}" for i in range(4)]


def test_records_come_back_with_what_was_made(clinic_source, certified_scenarios, sandbox):
    """A draft's calls and probes, a failed item's (in its RecordedFailure) and the scenarios'
    calls all become the batch's rows; the backend keeps none of them."""
    from envmill.schemas.llm import LlmCallRecord
    from envmill.schemas.skeleton import ProbeRecord
    from envmill.tasks.backends import RecordedFailure

    def call(item, stage):
        return LlmCallRecord(stage=stage, model="m", request_hash="h", item=item.label)

    def probe(item):
        return ProbeRecord(
            env_id="0" * 16,
            topic="t",
            item=item.label,
            probe_index=0,
            round=0,
            tool="x",
            tool_kind="query",
            kind="positive",
            arguments={},
            result={},
            verdict="pass",
            reason="",
        )

    class Recording(FixtureBackend):
        def make_environment(self, item, sandbox):
            if item.index == 1:
                failure = RuntimeError("the judge refused it")
                raise RecordedFailure(failure, [call(item, "env")], [probe(item)])
            draft = super().make_environment(item, sandbox)
            draft.call_records, draft.probes = [call(item, "env")], [probe(item)]
            return draft

        def make_scenarios(self, draft, env, item, count, sandbox):
            made = super().make_scenarios(draft, env, item, count, sandbox)
            made.call_records = [call(item, "scenario")]
            return made

    out = _run(Recording(clinic_source, certified_scenarios[:1]), sandbox, envs=2, scenarios=1)
    assert sorted((c.item, c.stage) for c in out.llm_calls) == [
        ("clinic#0", "env"),
        ("clinic#0", "scenario"),
        ("clinic#1", "env"),
    ]
    assert sorted(p.item for p in out.env_probes) == ["clinic#0", "clinic#1"]
    (failure,) = out.failures  # named by the cause, not by the wrapper
    assert (failure.stage, failure.error_class, failure.item) == (
        "make_env",
        "RuntimeError",
        "clinic#1",
    )


def test_batch_size_and_worker_threads_follow_the_backend():
    """A topic per task for the llm backend, on enough worker threads to keep a process's
    topics in flight; procedural batches stay CPU work, one task per process at a time."""
    from envmill.tasks.backends import task_threads

    procedural, llm = EnvmillSettings(), EnvmillSettings(backend="llm")
    assert (procedural.batch_size, task_threads(procedural)) == (4, 1)
    assert (llm.batch_size, task_threads(llm)) == (1, llm.skeleton.item_threads)
    wide = EnvmillSettings(backend="llm", batch_size=4, skeleton={"item_threads": 16})
    assert task_threads(wide) == 4
    assert EnvmillSettings(backend="llm", batch_size=3).batch_size == 3


def test_an_aborted_batch_raises_instead_of_recording_failures(
    clinic_source, certified_scenarios, sandbox
):
    from envmill.tasks.backends import BatchAborted

    class Interrupted(FixtureBackend):
        def make_environment(self, item, sandbox):
            if item.index == 1:
                raise BatchAborted("the LLM gate failed: CommClosedError")
            return super().make_environment(item, sandbox)

    with pytest.raises(BatchAborted):
        _run(Interrupted(clinic_source, certified_scenarios[:1]), sandbox, envs=2, scenarios=1)
