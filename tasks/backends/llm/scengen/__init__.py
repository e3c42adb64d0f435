"""ScenGenerator (issue 12): scenarios for an admitted environment from an LLM — an initial
state, a task with the tool calls that fulfil it (run as written), a checklist of checks —
certified with every gate, and repaired from the gate that refused them."""

from envmill.tasks.backends.llm.scengen.build import make_llm_scenarios

__all__ = ["make_llm_scenarios"]
