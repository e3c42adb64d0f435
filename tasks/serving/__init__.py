"""Serving envmill's environments to agents and trainers outside envmill.

``session.py`` holds one scenario open for an outside agent (call, reset, reward), whichever
protocol carries it, and ``mcp_server.py`` carries it over MCP with the official SDK
(``envmill mcp``). ``openenv/`` serves whole episodes (``reset``/``step``/``state``) behind
OpenEnv's HTTP API over the Gymnasium episode of ``tasks/rollout/gym.py`` (``envmill
serve-env``): an OpenEnv step is a gym step, a tool call one of an episode's turns.
"""

from envmill.tasks.serving.session import CheckReport, RewardReport, ToolSession

__all__ = ["CheckReport", "RewardReport", "ToolSession"]
