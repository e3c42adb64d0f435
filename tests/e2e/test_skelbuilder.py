"""SkelBuilder through the real client against the local endpoint: topics end accepted (admitted
modules, probed and judged) or failed with the stage and reason; slips are repaired within the
bound from line-numbered errors; a dead endpoint fails the item; a rerun is free (cache)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
from collections import Counter

import pytest
from llm_server import TEST_STAGE, make_client, within

from envmill.schemas.settings import EnvmillSettings
from envmill.schemas.skeleton import SkeletonSettings
from envmill.tasks.backends.llm.backend import LlmBackend
from envmill.tasks.backends.llm.skelbuilder import SkeletonFailed, build_environment
from envmill.tasks.backends.llm.skelbuilder.assemble import STATE, assemble_module, method_problems
from envmill.tasks.envs import admit_environment
from envmill.tasks.offline_llm import Fault, serve_endpoint
from envmill.tasks.offline_llm.skeleton_source import topic_module
from envmill.tasks.offline_llm.topics import verdict_for
from envmill.tasks.pipeline import plan_batches, synthesize_batch

LIBRARY = "public library lending: renew loan with waitlists, online, for a startup"
CLINIC = (
    "outpatient clinic appointments: book appointment with reminders, by phone, for a city office"
)
WAREHOUSE = "warehouse stock control for a regional operator"
SETTINGS = SkeletonSettings()
# These tests are about stages, not timeouts: on a loaded machine a first answer can take longer
# than the layer tests' 0.5 s, and a request sent twice would change the counts they assert.
PATIENT = TEST_STAGE.model_copy(update={"timeout_seconds": 10.0, "deadline_seconds": 30.0})


def client_of(url: str, folder):
    return make_client(url, folder, default=PATIENT)


@pytest.fixture(scope="module")
def endpoint():
    with serve_endpoint() as served:
        yield served


@pytest.fixture
def fresh(endpoint):
    """The shared endpoint with no slips, faults or counts left by another test."""
    endpoint.configure(slips=[])
    endpoint.reset()
    return endpoint


def run_pipeline(backend: LlmBackend, sandbox):
    """Every topic of ``backend`` through the shared pipeline, as one batch."""
    settings = EnvmillSettings(
        envs=len(backend.topics), batch_size=len(backend.topics), scenarios_per_env=2
    )
    (batch,) = plan_batches(settings, backend)
    return synthesize_batch(batch, settings, sandbox, backend)


def test_three_topics_become_admitted_checked_environments(fresh, sandbox, tmp_path):
    backend = LlmBackend(client_of(fresh.url, tmp_path), [LIBRARY, CLINIC, WAREHOUSE])
    output = within(60, lambda: run_pipeline(backend, sandbox))
    assert len(output.environments) == 3, [f.message for f in output.failures]
    assert not output.failures  # and ScenGenerator's scenarios certify, each with its trajectory
    assert [s.status for s in output.scenarios] == ["certified"] * 6
    assert len(output.trajectories) == 6 and {s.backend for s in output.scenarios} == {"llm"}
    for env in output.environments:
        kinds = Counter(env.tool_kinds.values())
        assert len(env.tools) >= 8 and kinds["query"] >= 5 and kinds["state_change"] >= 5
        assert env.backend == "llm" and env.business_rules and env.domain
        assert any("Constraints:" in tool.function.description for tool in env.tools)
    assert {env.domain for env in output.environments} == {"library", "clinic", "warehouse"}
    probes = output.env_probes  # they come back with each draft, into the batch
    by_env = Counter(p.env_id for p in probes)
    assert set(by_env) == {env.env_id for env in output.environments}
    for env in output.environments:  # every tool probed, positive and (with arguments) negative
        probed = {(p.tool, p.kind) for p in probes if p.env_id == env.env_id}
        assert {tool for tool, _ in probed} == {t.function.name for t in env.tools}
    assert {p.verdict for p in probes} <= {"pass", "warning"}
    calls = output.llm_calls
    skeleton = [c for c in calls if c.stage.startswith("skeleton")]
    per_topic = Counter(c.item for c in skeleton)  # each draft's own calls, repairs included
    assert len(per_topic) == 3 and max(per_topic.values()) <= 18  # issue 30: at most 18
    assert not any(c.cache_hit for c in calls)
    assert len(calls) - len(skeleton) == 3 * len(output.scenarios)  # state, task, checks
    assert {c.stage for c in calls} >= {"skeleton_plan", "skeleton_method", "skeleton_judge"}


def test_slips_are_repaired_from_line_numbered_errors(fresh, sandbox, tmp_path):
    slips = {
        "syntax": "library",
        "uuid_ids": "clinic",
        "hostile": "warehouse",
        "state_set": "airline",
        "bad_state": "event ticketing",
        "few_operations": "event ticketing",
    }
    fresh.configure(slips=[{"kind": kind, "topic": topic} for kind, topic in slips.items()])
    topics = [LIBRARY, CLINIC, WAREHOUSE, "airline reservations", "event ticketing"]
    backend = LlmBackend(client_of(fresh.url, tmp_path), topics)
    output = within(60, lambda: run_pipeline(backend, sandbox))
    assert len(output.environments) == 5, [f.message for f in output.failures]
    repairs = Counter(
        c.item.rsplit("#", 1)[0] for c in output.llm_calls if c.stage == "skeleton_repair"
    )
    assert all(repairs[topic] >= 1 for topic in topics[:4]), repairs
    shown = [r["body"]["messages"][-1]["content"] for r in fresh.requests("skeleton_repair")]
    assert len(shown) == 4, [t[:400] for t in shown]
    syntax = next(text for text in shown if "Check that failed: syntax" in text)
    assert "Part to rewrite: the method" in syntax and "syntax error: expected ':'" in syntax
    line = int(syntax.split("- line ", 1)[1].split(":", 1)[0])
    assert f"{line:>5} |     def " in syntax  # the listing shows the line the error names
    policy = [text for text in shown if "Check that failed: policy" in text]
    assert any("import of 'uuid' is not allowed" in text for text in policy)
    assert any("import of 'urllib.request' is not allowed" in text for text in policy)
    state = next(text for text in shown if "Part to rewrite: the state code" in text)
    assert "writes a set into the state" in state
    stages = fresh.stats()["stages"]
    assert stages["skeleton_initial_state"] == 6 and stages["skeleton_operations"] == 6
    # every answer sent back is refused on its record, with the reason: event ticketing's short
    # operation list and bad initial state (refused at once), and the methods and state code
    # admission sent back (refused once the module was checked); the repairs stay ok
    refused = {
        (c.stage, c.error.split(";")[0][:40]) for c in output.llm_calls if c.outcome == "refused"
    }
    assert refused == {
        ("skeleton_operations", "only 5 operations"),
        ("skeleton_initial_state", "the class creates no attribute 'audit_lo"),
        ("skeleton_method", "syntax: line 193: syntax error: expected"),
        ("skeleton_method", "policy: line 5: import of 'os' is not al"),
        ("skeleton_method", "policy: line 5: import of 'uuid' is not "),
        ("skeleton_state", "contract: line 89: '__init__' writes a s"),
    }, refused
    assert all(c.outcome == "ok" for c in output.llm_calls if c.stage == "skeleton_repair")
    ticketing = next(e for e in output.environments if e.topic == "event ticketing")
    assert ticketing.checked["skelbuilder"]["repairs"] >= 2
    assert ticketing.checked["skelbuilder"]["refused_answers"] == 2


@pytest.mark.parametrize(
    ("kind", "stage", "code", "said"),
    [
        ("syntax", "env_syntax", "syntax", "syntax error: expected ':'"),
        ("hostile", "env_policy", "import", "import of 'os' is not allowed"),
        (
            "bad_state",
            "skeleton_initial_state",
            "unusable_answer",
            "the class creates no attribute 'audit_log'",
        ),
    ],
)
def test_a_slip_that_persists_fails_with_stage_and_reason(
    fresh, sandbox, tmp_path, kind, stage, code, said
):
    fresh.configure(slips=[{"kind": kind, "persistent": True}])
    client = client_of(fresh.url, tmp_path)
    outcome = within(30, lambda: build_environment(LIBRARY, client, sandbox, SETTINGS))
    assert outcome.draft is None and outcome.failure.stage == stage
    assert outcome.failure.code == code and said in outcome.failure.reason
    if stage.startswith("env_"):  # every problem found, each naming its part
        assert any(said in detail for detail in outcome.failure.details), outcome.failure.details
    assert "2 repair rounds" in outcome.failure.reason or "after 2 rounds" in outcome.failure.reason


def test_a_runaway_tool_is_stopped_and_repaired(fresh, sandbox, tmp_path):
    fresh.configure(slips=[{"kind": "runaway"}])
    outcome = within(
        40, lambda: build_environment(CLINIC, client_of(fresh.url, tmp_path), sandbox, SETTINGS)
    )
    assert outcome.draft is not None and outcome.draft.repairs == 1
    (repair,) = fresh.requests("skeleton_repair")
    text = repair["body"]["messages"][-1]["content"]
    assert "Check that failed: probe" in text and "make sure every loop ends" in text


def test_a_judge_that_fails_everything_rejects_the_environment(fresh, sandbox, tmp_path):
    fresh.configure(slips=[{"kind": "judge_fails_all"}])
    backend = LlmBackend(client_of(fresh.url, tmp_path), [WAREHOUSE])
    output = within(30, lambda: run_pipeline(backend, sandbox))
    (failure,) = output.failures
    assert not output.environments and failure.stage == "env_check"  # the backend's own stage
    assert failure.error_class == "SkeletonFailed" and failure.code == "pass_rate_below_threshold"
    assert len(failure.details) == len(output.env_probes)  # every failed probe, with its reason
    assert failure.message.startswith("env_check: pass rate 0.00 < 0.85")
    probes = output.env_probes  # a rejected environment keeps its probes: they say why
    assert probes and {p.verdict for p in probes} == {"fail"} and all(p.reason for p in probes)


def test_an_endpoint_that_dies_mid_run_fails_the_item_with_a_reason(sandbox, tmp_path):
    with serve_endpoint() as doomed:
        doomed.add_faults(Fault(kind="hang", stage="skeleton_operations", seconds=30))
        client = make_client(doomed.url, tmp_path)
        outcome: dict = {}

        def run() -> None:
            outcome["value"] = build_environment(LIBRARY, client, sandbox, SETTINGS)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        for _ in range(200):  # the run is stuck on the hung call: now the endpoint dies
            if doomed.stats()["stages"].get("skeleton_operations"):
                break
            time.sleep(0.02)
        doomed.close()
        worker.join(20)
    assert not worker.is_alive(), "the item hangs"
    failure = outcome["value"].failure
    assert isinstance(failure, SkeletonFailed) and failure.stage == "skeleton_operations"
    assert failure.code == "llm_call_failed" and "LLM call failed" in failure.reason


STAGES = [
    "skeleton_plan",
    "skeleton_state",
    "skeleton_operations",
    "skeleton_method",
    "skeleton_rules",
    "skeleton_initial_state",
    "skeleton_probe",
    "skeleton_probe_state",  # the library's tools leave some that never succeeded: it is asked
    "skeleton_judge",
]


@pytest.mark.parametrize("stage", STAGES)
def test_a_fault_at_any_stage_fails_the_topic_there_and_a_retry_finishes_it(
    fresh, sandbox, tmp_path, stage
):
    """An endpoint failing every call of one stage: the topic ends failed at that stage; once
    the fault is gone, a retry (the next attempt) finishes it without asking again what the
    earlier stages answered."""
    fresh.add_faults(Fault(kind="status", status=500, stage=stage, count=None))
    client = client_of(fresh.url, tmp_path)
    failed = within(30, lambda: build_environment(LIBRARY, client, sandbox, SETTINGS))
    assert failed.draft is None and failed.failure.stage == stage
    assert failed.failure.code == "llm_call_failed" and "500" in failed.failure.reason
    fresh.reset()
    retry = SETTINGS.model_copy(update={"attempt": 1})
    done = within(30, lambda: build_environment(LIBRARY, client, sandbox, retry))
    assert done.draft is not None, done.failure
    asked = fresh.stats()["stages"]
    assert all(not asked.get(earlier) for earlier in STAGES[: STAGES.index(stage)]), asked
    assert asked.get(stage)


def test_a_second_run_of_a_topic_makes_no_request(fresh, sandbox, tmp_path):
    first = build_environment(LIBRARY, client_of(fresh.url, tmp_path), sandbox, SETTINGS)
    made = fresh.stats()["requests"]
    client = client_of(fresh.url, tmp_path)  # a new process, say: the same cache folder
    again = build_environment(LIBRARY, client, sandbox, SETTINGS)
    assert fresh.stats()["requests"] == made and made == first.llm_calls
    assert again.draft.source == first.draft.source and again.probes == first.probes
    records = client.collector.drain()
    assert len(records) == first.llm_calls and all(r.cache_hit for r in records)


@pytest.mark.parametrize(
    ("slips", "said"),
    [
        ([{"kind": "typo"}], "unknown slip kind 'typo'"),
        ([{"kind": "syntax", "persistent": "yes"}], "persistent: true or false"),
        ({"kind": "syntax"}, "a list of slips"),
    ],
)
def test_a_bad_slip_setting_is_refused_and_changes_nothing(fresh, slips, said):
    with pytest.raises(urllib.error.HTTPError) as refused:
        fresh.configure(slips=slips)
    assert (
        refused.value.code == 400 and said in json.loads(refused.value.read())["error"]["message"]
    )
    fresh.configure(slips=[{"kind": "syntax", "topic": "library"}])  # a good one still goes in


def test_the_fake_model_writes_100_distinct_environments():
    verbs = ["Book", "Cancel", "Reschedule", "Refund", "Update"]
    objects = ["a flight", "my appointment", "order 4411", "the loan", "two tickets", "a van"]
    people = ["for Alice", "for Bob", "for me", "for my manager"]
    tasks = [f"{v} {o} {p}" for v in verbs for o in objects for p in people]
    topics = list(dict.fromkeys(verdict_for(task)["topic"] for task in tasks))[:100]
    modules = [topic_module(topic) for topic in topics]
    assert len(topics) == 100 and len({m.compiled.source for m in modules}) == 100
    assert all(len(m.operations) >= 12 and m.plan["business_rules"] for m in modules)


def test_assembly_names_the_part_of_every_line(sandbox):
    module = topic_module(LIBRARY)
    methods = dict(module.methods)
    name = next(iter(methods))
    methods[name] = "import uuid\n\n" + methods[name]
    assembled = assemble_module(module.state_code, methods)
    lines = assembled.source.splitlines()
    import_line = lines.index("import uuid") + 1
    def_line = next(i for i, line in enumerate(lines, 1) if line.startswith(f"    def {name}("))
    assert assembled.part_of(import_line) == name and assembled.part_of(def_line) == name
    assert assembled.part_of(1) == STATE and assembled.module_line(name, 3) == def_line
    assert f"{import_line:>5} | import uuid" in assembled.listing(name)
    broken = methods[name].replace(") -> dict:", ") -> dict", 1)
    (problem,) = method_problems(name, broken)
    assert problem.line == 3 and "expected ':'" in problem.message
    clean = assemble_module(module.state_code, module.methods)
    env = admit_environment(clean.source, sandbox)
    assert [t.function.name for t in env.tools] == list(module.methods)
    assert json.loads(json.dumps(env.default_state)) == env.default_state


def test_a_broken_gate_aborts_the_batch_rather_than_failing_topics(fresh, sandbox, tmp_path):
    """The gate is the factory's, not the topic's: when it goes away (an interrupted run's
    scheduler, a deleted lock folder) no topic is recorded as failed; the batch aborts, so a
    rerun makes its topics."""
    import shutil

    from envmill.tasks.backends import BatchAborted

    client = client_of(fresh.url, tmp_path)
    backend = LlmBackend(client, [LIBRARY, CLINIC])
    client.complete("warm-up", [{"role": "user", "content": "hello"}])  # the gate is in use
    shutil.rmtree(tmp_path / "_llm_gate")
    with pytest.raises(BatchAborted, match="the LLM gate failed"):
        within(30, lambda: run_pipeline(backend, sandbox))


def test_contradictory_rules_are_rewritten_and_reviewed_again_and_persisting_ones_fail(
    fresh, sandbox, tmp_path
):
    planned = topic_module(CLINIC).plan["business_rules"]
    fresh.configure(slips=[{"kind": "contradictory_rules"}])
    outcome = within(
        40, lambda: build_environment(CLINIC, client_of(fresh.url, tmp_path), sandbox, SETTINGS)
    )
    assert outcome.draft is not None, outcome.failure
    assert outcome.draft.business_rules == [planned[0], *planned[2:]]  # rule 2 rewritten away
    assert outcome.draft.repairs >= 1
    first, second = fresh.requests("skeleton_rules")
    shown = [r["body"]["messages"][-1]["content"] for r in (first, second)]
    assert f"2. {planned[1]}" in shown[0] and f". {planned[1]}\n" not in shown[1]
    assert "Tools:\n- " in shown[0] and "Constraints:" in shown[0]  # the tools' own rules
    assert len(second["body"]["messages"]) == 2  # reviewed afresh, not in the same conversation
    fresh.configure(slips=[{"kind": "contradictory_rules", "persistent": True}])
    fresh.reset()
    failed = within(
        40,
        lambda: build_environment(CLINIC, client_of(fresh.url, tmp_path / "b"), sandbox, SETTINGS),
    )
    assert failed.draft is None and failed.failure.stage == "skeleton_rules"
    assert failed.failure.code == "contradictory_rules"
    assert "rule 1 and rule 2" in failed.failure.reason and failed.failure.details
    assert len(fresh.requests("skeleton_rules")) == SETTINGS.repair_rounds + 1
