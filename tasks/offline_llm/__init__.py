"""A local OpenAI-compatible endpoint for tests and benchmarks (DESIGN §8); never used in runs.

``serve_endpoint()`` serves on a thread; ``python -m envmill.tasks.offline_llm --port 0`` serves
in its own process and prints its URL on the first line. Responders are registered per stage.
A rollout's policy and simulated user answer from uploaded scripts (``Endpoint.scripts``, keys
``script_key`` / ``user_script_key``), the user otherwise by rules (``rollout.py``).
"""

from envmill.schemas.reward import JUDGE_STAGE
from envmill.schemas.rollout import POLICY_STAGE, USER_STAGE
from envmill.tasks.backends.llm.stages import CHAT_STAGES
from envmill.tasks.offline_llm.control import Endpoint, serve_endpoint, start_server
from envmill.tasks.offline_llm.faults import Fault
from envmill.tasks.offline_llm.model_style import MODEL_RESPONDERS
from envmill.tasks.offline_llm.responders import (
    ChatReply,
    ChatRequest,
    answering,
    by_style,
    embed_text,
    example_value,
    generic,
    register,
)
from envmill.tasks.offline_llm.reward import respond_reward_judge
from envmill.tasks.offline_llm.rollout import (
    OPENING_CUE,
    PAST_END,
    oracle_script,
    respond_policy,
    respond_user,
    solution_script,
)
from envmill.tasks.offline_llm.rules import respond_rules
from envmill.tasks.offline_llm.scenarios import (
    respond_scenario_checks,
    respond_scenario_state,
    respond_scenario_task,
)
from envmill.tasks.offline_llm.scripts import conversation_keys, script_key, user_script_key
from envmill.tasks.offline_llm.server import EndpointConfig
from envmill.tasks.offline_llm.skeleton import (
    respond_initial_state,
    respond_method,
    respond_operations,
    respond_plan,
    respond_repair,
    respond_state,
)
from envmill.tasks.offline_llm.skeleton_check import (
    respond_judge,
    respond_probe,
    respond_probe_state,
)
from envmill.tasks.offline_llm.skeleton_source import warm_sources
from envmill.tasks.offline_llm.slips import Slip
from envmill.tasks.offline_llm.topics import respond_topics, warm_topics

# One responder per chat stage envmill knows (``stages.CHAT_STAGES``), and a warm-up for those
# with a slow set-up. Where the model style (``EndpointConfig.style``) writes its own answer,
# the stage answers as the request's style asks.
PROCEDURAL = {
    "topics": (respond_topics, warm_topics),
    "skeleton_plan": (respond_plan, warm_sources),
    "skeleton_state": (respond_state, None),
    "skeleton_operations": (respond_operations, None),
    "skeleton_method": (respond_method, None),
    "skeleton_repair": (respond_repair, None),
    "skeleton_rules": (respond_rules, None),
    "skeleton_initial_state": (respond_initial_state, None),
    "skeleton_probe": (respond_probe, None),
    "skeleton_probe_state": (respond_probe_state, None),
    "skeleton_judge": (respond_judge, None),
    "scenario_state": (respond_scenario_state, None),
    "scenario_task": (respond_scenario_task, None),
    "scenario_checks": (respond_scenario_checks, None),
    "scenario_repair": (respond_scenario_checks, None),
    POLICY_STAGE: (respond_policy, None),
    USER_STAGE: (respond_user, None),
    JUDGE_STAGE: (respond_reward_judge, None),
}
RESPONDERS = {
    stage: (
        by_style(procedural=responder, model=MODEL_RESPONDERS[stage])
        if stage in MODEL_RESPONDERS
        else responder,
        warm,
    )
    for stage, (responder, warm) in PROCEDURAL.items()
}
if set(RESPONDERS) != set(CHAT_STAGES):  # a stage added or renamed without its responder
    raise ImportError(
        f"offline model responders != LLM stages: {set(RESPONDERS) ^ set(CHAT_STAGES)}"
    )
for _stage, (_responder, _warm) in RESPONDERS.items():
    register(_stage, _responder, _warm)

__all__ = [
    "ChatReply",
    "ChatRequest",
    "Endpoint",
    "EndpointConfig",
    "Fault",
    "OPENING_CUE",
    "PAST_END",
    "Slip",
    "answering",
    "embed_text",
    "example_value",
    "generic",
    "oracle_script",
    "register",
    "respond_topics",
    "conversation_keys",
    "script_key",
    "solution_script",
    "serve_endpoint",
    "start_server",
    "user_script_key",
]
