"""Certified scenarios behind OpenEnv's HTTP API (``envmill serve-env``, issue 25).

OpenEnv's server types wrap envmill's Gymnasium episode (``tasks/rollout/gym.py``): one
WebSocket session is one :class:`ScenarioEnvironment`, which holds one sandbox episode at a
time, so the reward is envmill's one reward function and every tool call runs in the sandbox.
Needs the ``openenv`` extra (``openenv-core``); nothing else in envmill imports this package.
"""

from envmill.tasks.serving.openenv.client import ScenarioClient
from envmill.tasks.serving.openenv.environment import ScenarioEnvironment, ScenarioPool
from envmill.tasks.serving.openenv.models import (
    ScenarioAction,
    ScenarioObservation,
    ScenarioState,
    ToolCallSpec,
)
from envmill.tasks.serving.openenv.server import build_app, serve

__all__ = [
    "ScenarioAction",
    "ScenarioClient",
    "ScenarioEnvironment",
    "ScenarioObservation",
    "ScenarioPool",
    "ScenarioState",
    "ToolCallSpec",
    "build_app",
    "serve",
]
