"""Serving one environment's tools to agents outside envmill (``envmill mcp``).

``session.py`` holds one scenario open for an outside agent (call, reset, reward), whichever
protocol carries it; ``mcp_server.py`` carries it over MCP with the official SDK. Another
protocol (an OpenEnv server, say) is another adapter over the same ``ToolSession``.
"""

from envmill.tasks.serving.session import CheckReport, RewardReport, ToolSession

__all__ = ["CheckReport", "RewardReport", "ToolSession"]
