"""The offline model's second writer (``EndpointConfig.style = "model"``): answers written the way
a capable model writes them, from environment designs of its own rather than envmill's
procedural catalog, so the LLM path is tested on naming, phrasing and assumptions envmill did not
choose.

Each design (``blood_bank``, …) is what a model has in mind for a topic: its plan, the module it
writes part by part, how it fills a state, tests its tools and which tasks a user of that system
asks for. A topic picks a design by its words, else by its hash (``choice``). The stages the
model style answers are :data:`MODEL_RESPONDERS`; the others (topics, the judge of probes,
rollouts) stay the procedural writer's, since they read only what envmill shows them.
"""

from envmill.tasks.offline_llm.model_style.checklist import respond_checks
from envmill.tasks.offline_llm.model_style.choice import DESIGNS, design_for
from envmill.tasks.offline_llm.model_style.scenes import (
    respond_scenario_state,
    respond_scenario_task,
)
from envmill.tasks.offline_llm.model_style.skeleton import (
    respond_initial_state,
    respond_method,
    respond_operations,
    respond_plan,
    respond_repair,
    respond_state,
)
from envmill.tasks.offline_llm.model_style.testing import respond_probe, respond_probe_state

MODEL_RESPONDERS = {
    "skeleton_plan": respond_plan,
    "skeleton_state": respond_state,
    "skeleton_operations": respond_operations,
    "skeleton_method": respond_method,
    "skeleton_repair": respond_repair,
    "skeleton_initial_state": respond_initial_state,
    "skeleton_probe": respond_probe,
    "skeleton_probe_state": respond_probe_state,
    "scenario_state": respond_scenario_state,
    "scenario_task": respond_scenario_task,
    "scenario_checks": respond_checks,
    "scenario_repair": respond_checks,
}

__all__ = ["DESIGNS", "MODEL_RESPONDERS", "design_for"]
