"""Episodes through the real LLM layer and the local HTTP endpoint (scripted policy and user):
both modes, every termination reason, the bad actions a model makes, faults of the endpoint,
and the rows a batch hands to the warehouse."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from llm_server import make_client

from envmill.rl import load_episode_specs
from envmill.schemas.rollout import STOP_MARKER, EpisodeBatch, EpisodeSpec, RolloutSettings
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.core.opening import opening_message
from envmill.tasks.offline_llm import Fault, script_key, serve_endpoint, user_script_key
from envmill.tasks.rollout.batch import rollout_batch, rollout_counts
from envmill.warehouse.episodes import reference_conversations
from tests.sandbox.test_rollout_episode import CHECK_BUMPED, HANGING

SETTINGS = RolloutSettings(max_steps=30, max_bad_turns=2, episode_threads=4)
SHORT = SETTINGS.model_copy(update={"max_steps": 6})


@pytest.fixture(scope="module")
def specs(corpus) -> dict[str, EpisodeSpec]:
    """One certified scenario of each mode that changes the state (a user who stops before the
    change is stopping early) and, when conversational, has facts to give."""
    chosen = {}
    for spec in load_episode_specs(corpus):
        steps = spec.scenario.reference_solution
        changes = any(step.tool in spec.state_changing_tools for step in steps)
        talks = spec.scenario.mode == "non_conversational" or bool(spec.scenario.user_facts)
        if changes and talks:
            chosen.setdefault(spec.scenario.mode, spec)
    assert set(chosen) == {"non_conversational", "conversational"}
    return chosen


@pytest.fixture(scope="module")
def endpoint():
    with serve_endpoint() as running:
        yield running


@pytest.fixture
def client(endpoint, tmp_path):
    endpoint.reset()
    return make_client(endpoint.url, tmp_path, cache=False, max_attempts=2)


def reference_turns(corpus, spec: EpisodeSpec) -> list[dict]:
    (messages,) = reference_conversations(corpus, [spec.scenario_id])
    return [m for m in messages if m["role"] == "assistant"]


def as_script(turns: list[dict]) -> list[dict]:
    script = []
    for turn in turns:
        calls = [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in turn.get("tool_calls") or []
        ]
        script.append({"content": turn.get("content"), "tool_calls": calls})
    return script


def calls(*pairs) -> dict:
    return {"content": None, "tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def run(specs_to_run, client, sandbox, settings=SETTINGS):
    batch = EpisodeBatch(key="b", episodes=list(specs_to_run))
    return rollout_batch(batch, settings, sandbox, client)


def opening(spec: EpisodeSpec) -> str:
    return opening_message(spec.scenario)


def test_the_reference_replayed_over_http_earns_full_reward_in_both_modes(
    corpus, specs, endpoint, client, sandbox
):
    for spec in specs.values():
        endpoint.script(script_key(opening(spec)), as_script(reference_turns(corpus, spec)))
    output = run(specs.values(), client, sandbox)
    ends = {t.scenario_id: t for t in output.trajectories}
    plain, talk = (
        ends[specs["non_conversational"].scenario_id],
        ends[specs["conversational"].scenario_id],
    )
    assert plain.termination == "finished" and plain.success
    assert talk.termination == "user_stop" and talk.success  # the rule-based user said STOP
    turns = sum(m["role"] == "assistant" for m in plain.messages)
    assert talk.policy == "fake-model" and plain.usage["policy"]["calls"] >= turns  # a turn may
    # make parallel calls: one model call, several steps
    assert talk.usage["rollout_user"]["calls"] >= 2
    assert output.items == [s.key for s in specs.values()]
    assert {c.stage for c in output.llm_calls} == {"policy", "rollout_user"}
    assert {c.item for c in output.llm_calls} == set(output.items)
    counts = rollout_counts(output)
    assert counts["episodes"] == 2 and counts["successes"] == 2
    assert {v.filter for v in output.verdicts} == {"reward", "length", "format", "user_sanity"}
    assert all(v.kept for v in output.verdicts), [v for v in output.verdicts if not v.kept]


def test_bad_tool_calls_are_answered_and_the_episode_goes_on(
    corpus, specs, endpoint, client, sandbox
):
    spec = specs["non_conversational"]
    turns = as_script(reference_turns(corpus, spec))
    first = turns[0]["tool_calls"][0]
    bad = [
        calls(("no_such_tool", "{}")),
        calls((first["name"], '{"cut": ')),
        calls((first["name"], first["arguments"]), (first["name"], first["arguments"])),
    ]
    endpoint.script(script_key(opening(spec)), bad + turns)
    patient = SETTINGS.model_copy(update={"max_bad_turns": 3})
    (trajectory,) = run([spec], client, sandbox, patient).trajectories
    results = [json.loads(m["content"]) for m in trajectory.messages if m["role"] == "tool"]
    assert "unknown tool 'no_such_tool'" in results[0]["error"]
    assert "not valid JSON" in results[1]["error"]
    parallel = trajectory.messages[6]
    assert len(parallel["tool_calls"]) == 2
    assert trajectory.usage["invalid_calls"] == 2
    assert trajectory.termination == "finished"


@pytest.mark.parametrize(
    ("script", "ending", "reason"),
    [
        ([{"empty": True}], "model_error", "policy model failed"),
        ([calls(("no_such_tool", "{}"))] * 3, "model_error", "without a usable tool call"),
        (None, "max_steps", "turns without an end"),  # the same lookup, forever
    ],
)
def test_a_non_conversational_episode_ends_with_its_reason(
    corpus, specs, endpoint, client, sandbox, script, ending, reason
):
    spec = specs["non_conversational"]
    if script is None:
        script = [as_script(reference_turns(corpus, spec))[0]] * 20
    endpoint.script(script_key(opening(spec)), script)
    (trajectory,) = run([spec], client, sandbox, SHORT).trajectories
    assert trajectory.termination == ending
    assert reason in trajectory.details["reason"]
    assert not trajectory.success


def test_conversations_end_by_the_user_or_by_the_turn_limit(
    corpus, specs, endpoint, client, sandbox
):
    spec = specs["conversational"]
    task = spec.scenario.task
    endpoint.script(script_key(opening(spec)), [{"content": "How can I help?"}] * 20)
    endpoint.script(user_script_key(task), [{"content": opening(spec)}] + [{"content": "Hm."}] * 20)
    (chatter,) = run([spec], client, sandbox, SHORT).trajectories
    assert chatter.termination == "max_steps" and chatter.steps == 0
    endpoint.script(user_script_key(task), [{"content": opening(spec)}, {"content": STOP_MARKER}])
    (early,) = run([spec], client, sandbox).trajectories
    assert early.termination == "user_stop" and not early.success
    sanity = [v for v in run([spec], client, sandbox).verdicts if v.filter == "user_sanity"]
    assert not sanity[0].kept and sanity[0].details["code"] == "early_stop"


def test_a_refusing_model_is_a_model_error_and_a_missing_answer_is_due_again(
    specs, endpoint, client, sandbox
):
    spec = specs["non_conversational"]
    endpoint.add_faults(Fault(kind="status", status=400, stage="policy", count=None))
    (refused,) = run([spec], client, sandbox).trajectories
    assert refused.termination == "model_error" and "HTTP 400" in refused.details["reason"]
    endpoint.reset()
    endpoint.add_faults(Fault(kind="status", status=500, stage="policy", count=None))
    broken = run([spec], client, sandbox)
    assert broken.trajectories == [] and broken.items == []  # no answer: the episode is due
    assert broken.failures[0].error_class == "LlmCallError"
    endpoint.reset()
    gone = make_client("http://127.0.0.1:9/v1", endpoint_folder(client), cache=False)
    output = run([spec], gone, sandbox)
    assert output.trajectories == [] and output.items == []
    assert output.failures[0].stage == "rollout" and "Unreachable" in output.failures[0].error_class


def endpoint_folder(client):
    return client.gate_dir.parent


def test_an_environment_that_hangs_ends_as_tool_error(endpoint, client, sandbox):
    tools = [
        {"type": "function", "function": {"name": n, "description": n, "parameters": {}}}
        for n in ("bump", "spin")
    ]
    scenario = ScenarioSpec(
        env_id="0" * 16,
        task="Bump the counter, then spin.",
        initial_state={"count": 0},
        reference_solution=[{"tool": "bump", "arguments": {}}],
        checks=[{"description": "bumped", "code": CHECK_BUMPED}],
    )
    env = SimpleNamespace(class_name="Hanger", source=HANGING)
    spec = EpisodeSpec(
        key="hang", scenario=scenario, scenario_id=scenario.scenario_id,
        class_name=env.class_name, source=env.source, tools=tools,
    )  # fmt: skip
    endpoint.script(script_key(scenario.task), [calls(("bump", "{}")), calls(("spin", "{}"))])
    (trajectory,) = run([spec], client, sandbox).trajectories
    assert trajectory.termination == "tool_error" and trajectory.reward == 1.0
