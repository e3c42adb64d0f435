"""A local OpenAI-compatible endpoint for tests and benchmarks (DESIGN §8); never used in runs.

``serve_endpoint()`` serves on a thread; ``python -m envmill.tasks.offline_llm --port 0`` serves
in its own process and prints its URL on the first line. Responders are registered per stage.
A rollout's policy and simulated user answer from uploaded scripts (``Endpoint.scripts``, keys
``script_key`` / ``user_script_key``), the user otherwise by rules (``rollout.py``).
"""

from envmill.schemas.rollout import POLICY_STAGE, USER_STAGE
from envmill.tasks.offline_llm.control import Endpoint, serve_endpoint, start_server
from envmill.tasks.offline_llm.faults import Fault
from envmill.tasks.offline_llm.responders import (
    ChatReply,
    ChatRequest,
    embed_text,
    example_value,
    generic,
    register,
)
from envmill.tasks.offline_llm.rollout import (
    OPENING_CUE,
    PAST_END,
    oracle_script,
    respond_policy,
    respond_user,
)
from envmill.tasks.offline_llm.scenarios import (
    respond_scenario_checks,
    respond_scenario_state,
    respond_scenario_task,
)
from envmill.tasks.offline_llm.scripts import script_key, user_script_key
from envmill.tasks.offline_llm.server import EndpointConfig
from envmill.tasks.offline_llm.skeleton import (
    respond_initial_state,
    respond_method,
    respond_operations,
    respond_plan,
    respond_repair,
    respond_state,
)
from envmill.tasks.offline_llm.skeleton_check import respond_judge, respond_probe
from envmill.tasks.offline_llm.skeleton_source import warm_sources
from envmill.tasks.offline_llm.slips import Slip
from envmill.tasks.offline_llm.topics import respond_topics, warm_topics

register("topics", respond_topics, warm_topics)
register("skeleton_plan", respond_plan, warm_sources)
register("skeleton_state", respond_state)
register("skeleton_operations", respond_operations)
register("skeleton_method", respond_method)
register("skeleton_repair", respond_repair)
register("skeleton_initial_state", respond_initial_state)
register("skeleton_probe", respond_probe)
register("skeleton_judge", respond_judge)
register("scenario_state", respond_scenario_state)
register("scenario_task", respond_scenario_task)
register("scenario_checks", respond_scenario_checks)
register("scenario_repair", respond_scenario_checks)
register(POLICY_STAGE, respond_policy)
register(USER_STAGE, respond_user)

__all__ = [
    "ChatReply",
    "ChatRequest",
    "Endpoint",
    "EndpointConfig",
    "Fault",
    "OPENING_CUE",
    "PAST_END",
    "Slip",
    "embed_text",
    "example_value",
    "generic",
    "oracle_script",
    "register",
    "respond_topics",
    "script_key",
    "serve_endpoint",
    "start_server",
    "user_script_key",
]
