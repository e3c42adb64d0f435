"""Multi-turn scenarios end to end (DESIGN §3.4 ``turns``): certification with the results
verdict, the reference conversation, grounding per user message, rollouts (in process, through
the local endpoint, in conversational mode and through the gym API), withheld tools, the
warehouse round trip and the export; and scenarios without turns exactly as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import make_client

from envmill.schemas.ids import content_id
from envmill.schemas.rollout import STOP_MARKER, EpisodeSpec, FilterSettings, RolloutSettings
from envmill.schemas.scenario import ScenarioRecord, ScenarioSpec
from envmill.tasks.certify import certify_scenario
from envmill.tasks.certify.grounding import ungrounded_trajectory
from envmill.tasks.envs import admit_environment
from envmill.tasks.offline_llm import script_key, serve_endpoint
from envmill.tasks.pipeline import parameter_words
from envmill.tasks.rollout import judge_trajectory, reference_trajectory
from envmill.tasks.rollout.agent import LlmPolicy
from envmill.tasks.rollout.episode import run_episode
from envmill.tasks.rollout.gym import ScenarioEnv

FIXTURES = Path(__file__).parents[1] / "fixtures"
SETTINGS = RolloutSettings(max_steps=12, max_calls_per_turn=3, max_bad_turns=2)
LISTED = {"success": True, "data": ["budget.txt", "plan.txt"]}
# the golden clinic's certified scenarios (ids, reference trajectory ids, gates, rewards) as
# envmill made them before multi-turn scenarios existed: a scenario without turns is unchanged
CLINIC_BEFORE_TURNS = "6afe11a3b1f1a2da"


@pytest.fixture(scope="module")
def desk(sandbox):
    return admit_environment((FIXTURES / "envs" / "file_desk.py").read_text(), sandbox)


@pytest.fixture(scope="module")
def scenarios() -> dict:
    return json.loads((FIXTURES / "scenarios" / "file_desk.json").read_text())


def _spec(desk, raw: dict, **changes) -> ScenarioSpec:
    return ScenarioSpec(env_id=desk.env_id, **{**json.loads(json.dumps(raw)), **changes})


@pytest.fixture(scope="module")
def multi(desk, scenarios) -> ScenarioSpec:
    return _spec(desk, scenarios["multi_turn"])


@pytest.fixture(scope="module")
def report(desk, multi, sandbox):
    return certify_scenario(multi, desk, sandbox)


@pytest.fixture(scope="module")
def reference(desk, multi, report):
    return reference_trajectory(
        multi,
        report,
        tool_kinds=dict(desk.tool_kinds),
        descriptions={t.function.name: t.function.description for t in desk.tools},
        parameters=parameter_words(desk.tools),
    )


def _gate(report, name: str):
    return next(g for g in report.gates if g.gate == name)


def _episode_spec(desk, scenario: ScenarioSpec) -> EpisodeSpec:
    return EpisodeSpec(
        key="k",
        scenario=scenario,
        scenario_id=scenario.scenario_id,
        class_name=desk.class_name,
        source=desk.source,
        tools=[t.model_dump() for t in desk.tools],
    )


def _call(tool: str, **arguments) -> dict:
    function = {"name": tool, "arguments": json.dumps(arguments)}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": "", "function": function}]}


class Script:
    """A policy that says what it is told, turn by turn; records the tools it was offered."""

    name = "scripted"

    def __init__(self, *turns):
        self.turns, self.offered = list(turns), []

    def act(self, messages, tools):
        self.offered.append([t["function"]["name"] for t in tools])
        return self.turns.pop(0) if self.turns else "Done."


EVERY_TURN = (
    _call("list_files"),
    "You have budget.txt and plan.txt.",
    "What should the file be called, and what goes in it?",
    _call("write_file", name="shopping.txt", content="buy milk"),
    "Created shopping.txt.",
    _call("read_file", name="plan.txt"),
    "plan.txt says: ship v2.",
)


def _without(turns: tuple, index: int) -> tuple:
    return turns[:index] + turns[index + 1 :]


def test_the_multi_turn_fixture_is_certified_with_the_results_verdict(multi, report):
    assert report.status == "certified", [g for g in report.gates if not g.passed]
    assert report.check_results == [True, True, True]  # two checks, then the results verdict
    assert "obtains every expected result" in _gate(report, "checks_pass").reason
    assert len(report.turn_states) == len(multi.turns) == 3
    assert "shopping.txt" not in report.turn_states[1]["files"]  # sent before the write
    assert "shopping.txt" in report.turn_states[2]["files"]


def test_the_reference_answers_each_user_message_in_order_with_a_reply_of_its_own(
    desk, multi, reference
):
    messages = reference.messages
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    assert [messages[i]["content"] for i in users] == multi.user_messages
    replies = []
    for start, end in zip(users, [*users[1:], len(messages)], strict=True):
        reply = messages[end - 1]
        assert messages[start + 1]["role"] == "assistant"
        assert reply["role"] == "assistant" and not reply.get("tool_calls"), reply
        assert isinstance(reply["content"], str) and reply["content"].strip()
        replies.append(reply["content"])
    assert "budget.txt" in replies[0] and "plan.txt" in replies[0]  # what the read found
    # no steps: it says what it still needs, as the tool's parameters describe it, not values
    assert "the name of the file to create" in replies[1]
    assert "the text to put in the file" in replies[1]
    assert "shopping.txt" not in replies[1] and "milk" not in replies[1]
    assert "shopping.txt" in replies[2]  # the change, in concrete terms
    assert "ship v2" in replies[3]
    assert len(set(replies)) == 4
    ids = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert len(ids) == len(set(ids)) == 3
    tools = [t.model_dump() for t in desk.tools]
    assert ungrounded_trajectory(messages, tools) == []
    assert reference.reward == 1.0 and reference.check_results == [True, True, True]


def test_grounding_refuses_a_value_used_before_the_message_that_says_it(desk, scenarios, sandbox):
    early = certify_scenario(_spec(desk, scenarios["ungrounded_turn"]), desk, sandbox)
    assert early.rejected_gate == "grounded", early.gates
    reason = _gate(early, "grounded").reason
    assert "step 2 (write_file)" in reason and "shopping.txt" in reason


def test_a_read_only_scenario_certifies_on_its_expected_results_and_not_without(
    desk, scenarios, sandbox
):
    """A solution that changes nothing is judged by what it obtained: the partial replay leaves
    out the last read the verdict wants, and loses on it."""
    raw = scenarios["multi_turn"]
    guard = raw["checks"][1]
    steps = [raw["reference_solution"][0], raw["reference_solution"][2]]
    read_only = _spec(
        desk,
        raw,
        reference_solution=steps,
        turns=[{"content": "Now read back what plan.txt says.", "first_step": 1}],
        expected_results=[raw["expected_results"][0], raw["expected_results"][3]],
        checks=[{**guard, "description": "Has changed no file", "code": guard["code"]}],
    )
    report = certify_scenario(read_only, desk, sandbox)
    assert report.status == "certified", report.gates
    assert "expected result is not obtained without step 2 (read_file)" in (
        _gate(report, "partial_fails").reason
    )
    bare = certify_scenario(read_only.model_copy(update={"expected_results": None}), desk, sandbox)
    assert bare.rejected_gate == "not_trivial"  # nothing to do: every check already holds


def test_a_rollout_that_does_each_turn_gets_full_reward(desk, multi, sandbox):
    policy = Script(*EVERY_TURN)
    spec = _episode_spec(desk, multi)
    trajectory = run_episode(spec, sandbox, SETTINGS, policy, policy_name="scripted")
    assert trajectory.termination == "finished", trajectory.details
    assert (trajectory.reward, trajectory.check_results) == (1.0, [True, True, True])
    users = [m["content"] for m in trajectory.messages if m["role"] == "user"]
    assert users == multi.user_messages
    assert trajectory.messages[-1] == {"role": "assistant", "content": EVERY_TURN[-1]}
    assert trajectory.details["results_verdict"]["passed"] is True
    assert all("purge_all" not in offered for offered in policy.offered)
    kept = judge_trajectory(
        trajectory,
        multi,
        tool_names={t.function.name for t in desk.tools},
        state_changing_tools={"write_file", "remove_file", "purge_all"},
        settings=FilterSettings(),
    )
    assert all(v.kept for v in kept), [v.reason for v in kept if not v.kept]


@pytest.mark.parametrize(
    ("turns", "why"),
    [
        (_without(EVERY_TURN, 5), "user message 4"),  # skipped the last message's read
        # the listing done only after the second message: too late for the first
        (("I'll look.", _call("list_files"), *EVERY_TURN[2:]), "user message 1"),
    ],
)
def test_a_rollout_that_skips_or_delays_a_turns_read_loses_the_results_verdict(
    desk, multi, sandbox, turns, why
):
    spec = _episode_spec(desk, multi)
    trajectory = run_episode(spec, sandbox, SETTINGS, Script(*turns), policy_name="scripted")
    assert trajectory.check_results == [True, True, False]  # the state is right regardless
    assert not trajectory.success and trajectory.reward == pytest.approx(2 / 3)
    verdict = trajectory.details["results_verdict"]
    assert not verdict["passed"] and why in verdict["reason"]


def test_a_withheld_tool_is_refused_and_its_call_changes_nothing(desk, multi, sandbox):
    turns = (_call("purge_all"), *EVERY_TURN)
    spec = _episode_spec(desk, multi)
    trajectory = run_episode(spec, sandbox, SETTINGS, Script(*turns), policy_name="scripted")
    refused = json.loads(trajectory.messages[3]["content"])
    assert refused["success"] is False and "purge_all is not available" in refused["error"]
    assert "purge_all" not in refused["error"].split(";")[1]  # not listed among the tools
    assert trajectory.success and trajectory.usage["invalid_calls"] == 1
    purge = trajectory.messages[2]["tool_calls"][0]["id"]
    assert trajectory.details["not_run"] == [purge]  # a benchmark's checker must not run it
    verdicts = judge_trajectory(
        trajectory,
        multi,
        tool_names={t.function.name for t in desk.tools},
        state_changing_tools={"write_file"},
        settings=FilterSettings(),
    )
    assert not next(v for v in verdicts if v.filter == "format").kept


class StopAfterEach:
    """A simulated user that asks for the task, then ends the conversation after each reply."""

    def __init__(self, opening: str):
        self.opening, self.heard = opening, []

    def reply(self, conversation):
        self.heard.append(conversation)
        return self.opening if not conversation[1:] else f"Thanks! {STOP_MARKER}"


def test_in_conversational_mode_the_next_message_follows_the_users_end_of_each(
    desk, multi, sandbox
):
    talk = multi.model_copy(update={"mode": "conversational"})
    spec = _episode_spec(desk, talk)
    user = StopAfterEach(talk.task)
    trajectory = run_episode(
        spec, sandbox, SETTINGS, Script(*EVERY_TURN), policy_name="scripted", user=user
    )
    users = [m["content"] for m in trajectory.messages if m["role"] == "user"]
    # each stop after a reply sent the next message; after the last, the stop ends it
    assert users == [*talk.user_messages, "Thanks!"]
    assert trajectory.termination == "user_stop" and trajectory.success


def test_the_gym_api_follows_the_turns_and_offers_no_withheld_tool(desk, multi, sandbox):
    env = ScenarioEnv([_episode_spec(desk, multi)], sandbox, SETTINGS)
    observation, info = env.reset(seed=0)
    assert [t["function"]["name"] for t in info["tools"]] == [
        t.function.name for t in desk.tools if t.function.name != "purge_all"
    ]
    rewards, done = [], False
    for action in EVERY_TURN:
        assert not done
        observation, reward, done, truncated, info = env.step(action)
        rewards.append(reward)
    env.close()
    assert done and not truncated and rewards[-1] == 1.0 and sum(rewards[:-1]) == 0
    users = [m["content"] for m in observation["messages"] if m["role"] == "user"]
    assert users == multi.user_messages


@pytest.mark.parametrize(("skip", "reward"), [(None, 1.0), (5, pytest.approx(2 / 3))])
def test_a_model_served_by_the_local_endpoint_is_judged_turn_by_turn(
    desk, multi, sandbox, tmp_path, skip, reward
):
    replies = []
    for turn in EVERY_TURN if skip is None else _without(EVERY_TURN, skip):
        if isinstance(turn, str):
            replies.append({"content": turn})
            continue
        call = turn["tool_calls"][0]["function"]
        arguments = json.loads(call["arguments"])
        replies.append(
            {"content": None, "tool_calls": [{"name": call["name"], "arguments": arguments}]}
        )
    with serve_endpoint() as endpoint:
        endpoint.script(script_key(multi.task), replies)
        client = make_client(endpoint.url, tmp_path, cache=False)
        policy = LlmPolicy(client, item=multi.scenario_id)
        spec = _episode_spec(desk, multi)
        trajectory = run_episode(spec, sandbox, SETTINGS, policy, policy_name="fake-model")
    assert trajectory.termination == "finished", trajectory.details
    assert trajectory.reward == reward
    assert trajectory.details["results_verdict"]["passed"] is (skip is None)


def test_the_warehouse_and_the_export_carry_turns_and_leave_out_withheld_tools(
    desk, multi, report, reference, tmp_path
):
    from envmill.rl import load_episode_specs
    from envmill.schemas.export import ExportSelection
    from envmill.tasks.export.build import build_export
    from envmill.warehouse.export_rows import select_for_export
    from envmill.warehouse.rows import environment_row, scenario_row, tool_rows, trajectory_row
    from envmill.warehouse.store import Warehouse

    record = ScenarioRecord(
        **multi.model_dump(),
        scenario_id=report.scenario_id,
        status=report.status,
        gates=report.gates,
    )
    env = desk.to_record(backend="manual", origin="bfcl")
    warehouse = Warehouse(tmp_path / "data")
    warehouse.write("environments", [environment_row(env, "r1")], key="e")
    warehouse.write("tools", tool_rows(env), key="e")
    warehouse.write("scenarios", [scenario_row(record, "r1")], key="s")
    warehouse.write("trajectories", [trajectory_row(reference, "r1")], key="t")
    (spec,) = load_episode_specs(warehouse.root)
    assert spec.scenario == multi and spec.scenario_id == multi.scenario_id
    assert spec.source == desk.source  # the module's code, not the scenario's source label
    selected = select_for_export(warehouse.root, ExportSelection())
    (exported,) = selected.records
    assert exported.messages == reference.messages
    names = [t["function"]["name"] for t in exported.tools]
    assert "purge_all" not in names and len(names) == len(desk.tools) - 1
    plan = build_export(selected.records, "openai")
    assert plan.rows == {"train.jsonl": 1} and not plan.unexportable


def test_scenarios_without_turns_are_certified_and_told_exactly_as_before(
    clinic, clinic_scenarios, sandbox
):
    made = []
    for raw in clinic_scenarios["certified"]:
        spec = ScenarioSpec(env_id=clinic.env_id, **raw)
        certified = certify_scenario(spec, clinic, sandbox)
        trajectory = reference_trajectory(
            spec,
            certified,
            tool_kinds=dict(clinic.tool_kinds),
            descriptions={t.function.name: t.function.description for t in clinic.tools},
        )
        gates = [g.model_dump() for g in certified.gates]
        made.append([spec.scenario_id, trajectory.trajectory_id, gates, certified.check_results])
    assert content_id(made) == CLINIC_BEFORE_TURNS
