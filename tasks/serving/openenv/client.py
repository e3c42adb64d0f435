"""The client side: OpenEnv's ``EnvClient`` typed with envmill's action, observation and state.

with ScenarioClient(base_url="http://127.0.0.1:8000").sync() as env:
    result = env.reset(seed=0)                 # or scenario_id=..., sample=...
    result = env.step(ScenarioAction.call("get_account", {"account_id": "ACC-1"}))
    result = env.step(ScenarioAction.reply("Your balance is $42.00."))
    result.reward, result.done
"""

from __future__ import annotations

import json
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from websockets.exceptions import ConnectionClosed

from envmill.tasks.serving.openenv.models import ScenarioAction, ScenarioObservation, ScenarioState


class ScenarioClient(EnvClient[ScenarioAction, ScenarioObservation, ScenarioState]):
    """One session (one WebSocket) of an ``envmill serve-env`` server.

    A server at its ``--max-sessions`` accepts the connection, sends OpenEnv's
    ``CAPACITY_REACHED`` error and closes it, often before the first request is sent: that
    request then raises ``RuntimeError`` with the server's error, not a bare closed socket.
    """

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            return await super()._send_and_receive(message)
        except ConnectionClosed as closed:
            raise RuntimeError(await self._why_closed(closed)) from None

    async def _why_closed(self, closed: ConnectionClosed) -> str:
        """The error the server sent before it closed the connection, if it sent one."""
        try:
            sent = json.loads(await self._ws.recv()) if self._ws is not None else {}
        except (ConnectionClosed, ValueError):
            return f"Server closed the session: {closed}"
        error = sent.get("data", {}) if sent.get("type") == "error" else {}
        if not error:
            return f"Server closed the session: {closed}"
        return f"Server error: {error.get('message')} (code: {error.get('code')})"

    def _step_payload(self, action: ScenarioAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ScenarioObservation]:
        fields = payload.get("observation", {})
        observation = ScenarioObservation.model_validate(
            fields | {"done": payload.get("done", False), "reward": payload.get("reward")}
        )
        return StepResult(observation, payload.get("reward"), payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> ScenarioState:
        return ScenarioState.model_validate(payload)
