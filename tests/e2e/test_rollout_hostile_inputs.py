"""Review of issue 14 (rollouts, filters, exports, RL): each test shows one finding and FAILS on
the code as reviewed. Run: .venv/bin/pytest tests/e2e/test_rollout_hostile_inputs.py -q"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envmill.schemas.rollout import RolloutSettings
from envmill.schemas.scenario import ScenarioSpec
from envmill.tasks.rollout.episode import run_episode
from tests.sandbox.test_rollout_episode import Script, call, calls, spec_of
from tests.timing import scaled

SETTINGS = RolloutSettings(max_steps=12, max_calls_per_turn=3, max_bad_turns=2)
ENVMILL = str(Path(sys.executable).with_name("envmill"))


@pytest.fixture(scope="module")
def plain(clinic_scenarios, clinic) -> ScenarioSpec:
    specs = [ScenarioSpec(env_id=clinic.env_id, **raw) for raw in clinic_scenarios["certified"]]
    return next(s for s in specs if s.mode == "non_conversational")


# --- 1. arguments JSON accepts but the sandbox channel refuses -------------------------------


@pytest.mark.parametrize(
    "arguments",
    ['{"patient_id": NaN}', '{"patient_id": Infinity}', '{"patient_id": "\\ud800"}'],
    ids=["nan", "infinity", "lone-surrogate"],
)
def test_arguments_the_channel_cannot_carry_are_an_error_observation(
    clinic, sandbox, plain, arguments
):
    """Call.parsed() uses json.loads (accepts NaN/Infinity/lone surrogates); send_frame then
    raises ValueError/UnicodeEncodeError, which nothing catches: the episode blows up instead of
    answering with an error observation (in a batch: a FailureRecord that stays due forever,
    since the cached policy reply repeats it on every rerun)."""
    policy = Script(calls(call("get_patient", arguments)))
    trajectory = run_episode(spec_of(clinic, plain), sandbox, SETTINGS, policy, policy_name="p")
    tool = [m for m in trajectory.messages if m["role"] == "tool"]
    assert tool and json.loads(tool[0]["content"])["success"] is False


def test_a_lone_surrogate_in_the_agents_text_is_a_trajectory_not_a_crash(clinic, sandbox, plain):
    """An OpenAI-compatible server may send "\\ud800" in a reply; the openai client decodes it
    to a lone surrogate. The episode runs to 'finished', then content_id() of the messages raises
    UnicodeEncodeError in Episode._record: in a batch the episode becomes a FailureRecord that
    stays due, and the cached reply makes every rerun fail the same way."""
    trajectory = run_episode(
        spec_of(clinic, plain), sandbox, SETTINGS, Script("All done \ud800."), policy_name="p"
    )
    assert trajectory.termination in ("finished", "model_error")


# --- 2. call ids a model reuses across turns ----------------------------------------------------


def test_a_model_that_reuses_call_ids_across_turns_is_not_dropped_as_malformed(
    clinic, sandbox, plain
):
    """read_action only renames ids repeated *within* one message. Servers that number calls per
    reply ("call_0" every turn: several local OpenAI-compatible servers do) produce a perfect
    episode that the format filter then drops as duplicate_tool_call_id, and whose ids the
    exports carry ambiguously."""
    from envmill.tasks.rollout.filters import judge_format

    turns = [calls(call(s.tool, s.arguments, "call_0")) for s in plain.reference_solution]
    assert len(turns) >= 2
    trajectory = run_episode(
        spec_of(clinic, plain), sandbox, SETTINGS, Script(*turns), policy_name="p"
    )
    assert trajectory.success
    tools = {t["function"]["name"] for t in spec_of(clinic, plain).tools}
    verdict = judge_format(trajectory, tools)
    assert verdict.kept, verdict.reason


# --- 3. filters ----------------------------------------------------------------------------------


def test_a_pasted_task_with_one_word_changed_is_still_a_paste():
    """find_paste looks for one contiguous run of paste_share of the task's words; one changed
    word in the middle splits any recital into two runs below the threshold."""
    from tests.sandbox.test_filters import TASK, sanity, user, with_message

    edited = TASK.replace("last week", "last month")
    assert edited != TASK
    verdict = sanity(with_message(3, user(f"BK-1042. {edited}")))
    assert not verdict.kept and verdict.details["code"] == "pasted_task", verdict.reason


# --- 4. the RL interface --------------------------------------------------------------------


def test_the_gym_env_declares_its_spaces(clinic, sandbox, plain):
    """gymnasium.Env subclasses must set action_space and observation_space; without them
    gymnasium.utils.env_checker.check_env refuses the env ("must specify an action space") and
    wrappers/vector envs that read env.action_space raise AttributeError."""
    from gymnasium.utils.env_checker import check_env

    from envmill.tasks.rollout.gym import ScenarioEnv

    env = ScenarioEnv([spec_of(clinic, plain)], sandbox, SETTINGS)
    try:
        assert hasattr(env, "action_space") and hasattr(env, "observation_space")
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_step_after_a_failed_reset_does_not_continue_the_closed_episode(clinic, sandbox, plain):
    """reset() closes the open episode, then raises KeyError on an unknown scenario_id, but
    leaves self.episode pointing at the closed one: step() then 'finishes' it and pays a reward
    for an episode the caller thought was replaced."""
    from envmill.tasks.rollout.gym import ScenarioEnv

    env = ScenarioEnv([spec_of(clinic, plain)], sandbox, SETTINGS)
    try:
        env.reset(seed=0)
        with pytest.raises(KeyError):
            env.reset(options={"scenario_id": "no-such-scenario"})
        with pytest.raises(RuntimeError):
            env.step("Done.")
    finally:
        env.close()


def test_an_action_whose_arguments_are_not_json_is_not_a_crash(clinic, sandbox, plain):
    """read_action json.dumps()es an arguments object a trainer passes; a set (or any
    non-JSON object) raises TypeError out of step() instead of an error observation or a
    model_error end like every other malformed action."""
    from envmill.tasks.rollout.gym import ScenarioEnv

    env = ScenarioEnv([spec_of(clinic, plain)], sandbox, SETTINGS)
    try:
        env.reset(seed=0)
        action = {"tool_calls": [{"function": {"name": "get_patient", "arguments": {1, 2}}}]}
        env.step(action)
    finally:
        env.close()


# --- 5. --scenarios: a condition spliced into the query -----------------------------------------


@pytest.fixture(scope="module")
def corpus_with_a_rejected_scenario(tmp_path_factory, sandbox):
    """The small corpus of tests/corpus.py plus one scenario whose certification failed."""
    from envmill.schemas.run import BatchOutput
    from envmill.schemas.settings import EnvmillSettings
    from envmill.tasks.pipeline import plan_batches, synthesize_batch
    from envmill.warehouse.rows import write_batch
    from envmill.warehouse.store import Warehouse
    from tests.conftest import TEST_LIMITS

    root = tmp_path_factory.mktemp("corpus") / "data"
    settings = EnvmillSettings(
        envs=1, scenarios_per_env=2, domains=["clinic"], batch_size=100, seed=5,
        sandbox=TEST_LIMITS,
    )  # fmt: skip
    (batch,) = plan_batches(settings)
    output = synthesize_batch(batch, settings, sandbox)
    assert write_batch(Warehouse(root), output, "run-corpus")
    good = next(s for s in output.scenarios if s.status == "certified")
    gates = [g.model_copy(update={"passed": False}) for g in good.gates]
    bad = good.model_copy(
        update={"scenario_id": "0000000000000bad", "status": "rejected", "gates": gates,
                "rejected_gate": gates[0].gate}
    )  # fmt: skip
    assert write_batch(Warehouse(root), BatchOutput(key="r" * 16, scenarios=[bad]), "run-bad")
    return root


def test_a_scenarios_condition_cannot_select_uncertified_scenarios(
    corpus_with_a_rejected_scenario,
):
    """certified_scenario_ids splices the condition as `status = 'certified' AND (<cond>)`; a
    condition that closes the parenthesis ORs its way past the status filter, and DETAILS never
    checks the status again, so `envmill rollout` / open_env run rejected scenarios."""
    from envmill.warehouse.episodes import certified_scenario_ids

    root = corpus_with_a_rejected_scenario
    assert "0000000000000bad" not in certified_scenario_ids(root)
    chosen = certified_scenario_ids(root, "false) OR (true")
    assert "0000000000000bad" not in chosen


def test_a_trailing_sql_comment_in_scenarios_works(corpus_with_a_rejected_scenario):
    """`--scenarios "mode = 'conversational' -- banking only"` comments out the closing
    parenthesis and ORDER BY of the spliced query: a parser error about SQL the user never
    wrote."""
    from envmill.warehouse.episodes import certified_scenario_ids

    root = corpus_with_a_rejected_scenario
    every = certified_scenario_ids(root)
    assert every
    assert certified_scenario_ids(root, "status = 'certified' -- only these") == every
    assert certified_scenario_ids(root, "mode = 'no such mode' -- none") == []


# --- 6. export --to ---------------------------------------------------------------------------


def _export(root: Path, to: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [ENVMILL, "export", "--out", str(root), "--format", "openai", "--to", to],
        capture_output=True, text=True, timeout=scaled(120),
    )  # fmt: skip


@pytest.mark.parametrize("how", ["symlink", "dotdot"])
def test_export_never_writes_into_the_data_folder(corpus_with_a_rejected_scenario, tmp_path, how):
    """The guard compares `to.expanduser().absolute()` with the data folder: absolute() neither
    resolves symlinks nor `..`, so `--to link-to-data` or `--to other/../data` writes train.jsonl
    and envmill-export.json into the data folder's root."""
    root = corpus_with_a_rejected_scenario
    if how == "symlink":
        (tmp_path / "link").symlink_to(root)
        to = str(tmp_path / "link")
    else:
        (root.parent / "other").mkdir(exist_ok=True)
        to = str(root.parent / "other" / ".." / root.name)
    before = sorted(p.name for p in root.iterdir() if p.name != "_lock")
    done = _export(root, to)
    after = sorted(p.name for p in root.iterdir() if p.name != "_lock")
    for name in set(after) - set(before):
        (root / name).unlink()
    assert after == before, (done.returncode, done.stdout, done.stderr)
    assert done.returncode != 0


# --- 7. samples -------------------------------------------------------------------------------


def test_two_samples_of_a_scenario_are_two_trajectories(clinic, sandbox, plain):
    """trajectory_id = content_id(scenario_id, policy, messages): the sample index is not in it,
    and the trajectories table keeps one row per trajectory_id (newest wins). Samples that
    happen to say the same thing (temperature 0, a deterministic model, --local-llm) collapse:
    `envmill rollout --local-llm --samples 6` on 8 scenarios reports 48 episodes in `runs` but
    leaves 8 trajectory rows, and per-scenario success rates over samples are skewed (3 equal
    failures + 1 success read back as 1 of 2)."""
    from tests.sandbox.test_rollout_episode import oracle

    first = run_episode(
        spec_of(clinic, plain, 0), sandbox, SETTINGS, oracle(plain), policy_name="p"
    )
    second = run_episode(
        spec_of(clinic, plain, 1), sandbox, SETTINGS, oracle(plain), policy_name="p"
    )
    assert first.details["sample"] != second.details["sample"]
    assert first.trajectory_id != second.trajectory_id


def test_nan_arguments_from_a_served_model_are_a_trajectory_not_a_failure_row(
    tmp_path, sandbox, corpus
):
    """End to end through the LLM layer and the test endpoint: a model that writes NaN in its
    arguments gets no error observation; the batch turns the episode into a FailureRecord
    (ValueError, 'Out of range float values...'), which stays due, and the cached reply makes
    every rerun fail it again."""
    from llm_server import make_client

    from envmill.rl import load_episode_specs
    from envmill.schemas.rollout import EpisodeBatch
    from envmill.tasks.core.opening import opening_message
    from envmill.tasks.offline_llm import script_key, serve_endpoint
    from envmill.tasks.rollout.batch import rollout_batch

    spec = next(s for s in load_episode_specs(corpus) if s.scenario.mode == "non_conversational")
    name = spec.tools[0]["function"]["name"]
    with serve_endpoint() as endpoint:
        script = [{"content": None, "tool_calls": [{"name": name, "arguments": '{"x": NaN}'}]}]
        endpoint.script(script_key(opening_message(spec.scenario)), script)
        client = make_client(endpoint.url, tmp_path, cache=False, max_attempts=2)
        output = rollout_batch(EpisodeBatch(key="b", episodes=[spec]), SETTINGS, sandbox, client)
    assert not output.failures, output.failures
    assert len(output.trajectories) == 1
