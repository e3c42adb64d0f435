"""A verifiers (0.4, ``verifiers.v1``) environment whose tasks are certified envmill scenarios,
whose tools are ``envmill mcp``'s over streamable HTTP, and whose reward is envmill's.

It runs in verifiers' own virtual environment, which cannot import envmill (README.md here):
the scenarios come from a JSON file written beforehand by ``export_scenarios.py`` (envmill's
venv), and envmill is reached only as a program, ``envmill mcp ENV --scenario S --port 0``.

One ``envmill mcp`` server per rollout. Every client of one such server shares one state (the
MCP 2.x client verifiers' harness uses sends no ``mcp-session-id``, so envmill's per-session
pool keys them all alike; README.md here shows it), so two rollouts on one server, or a
``reset_scenario`` per rollout on a shared one, would play in each other's state. Per rollout:

- ``EnvmillTask.setup`` starts the server on the rollout's scenario (a free port) and records
  its URL under the rollout's trace id and in a context variable of the rollout's asyncio task;
- ``EnvmillTask.toolsets`` (called next in that task, by verifiers' ``Rollout.open``) returns
  an ``EnvmillTools`` toolset whose config ``url`` is that server: verifiers launches nothing
  and hands the URL to the harness, which lists and calls the tools over MCP;
- ``EnvmillTask.envmill_reward`` (a ``@vf.reward``) calls the server's ``reward`` tool with the
  model's final reply once the agent is done, records envmill's checks as metrics, and stops
  the server.

Use it as the taskset ``envmill_vf`` (this directory on ``PYTHONPATH``)::

    vf-eval envmill_vf --env.taskset.scenarios scenarios.json ...
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import json
import logging
import os
import re
import secrets
import signal
import subprocess
from pathlib import Path

import verifiers.v1 as vf
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

logger = logging.getLogger(__name__)

__all__ = ["EnvmillTaskset"]

PLACEHOLDER_URL = "http://127.0.0.1:9/mcp"  # never called: see EnvmillTask.toolsets
LISTENING = re.compile(r"serving (http://127\.0\.0\.1:\d+/mcp)")


class EnvmillTaskConfig(vf.TaskConfig):
    envmill: str = "envmill"
    """The ``envmill`` program (envmill's venv: ``/path/.venv/bin/envmill``)."""
    data: str = "envmill-data"
    """envmill's data folder (``--out``)."""
    start_timeout: float = 120.0
    """Seconds to wait for ``envmill mcp`` to announce its URL."""


class EnvmillTasksetConfig(vf.TasksetConfig):
    scenarios: str = "scenarios.json"
    """The file ``export_scenarios.py`` wrote."""
    task: EnvmillTaskConfig = EnvmillTaskConfig()


class EnvmillData(vf.TaskData):
    env_id: str
    scenario_id: str
    kind: str = ""


class EnvmillTools(vf.Toolset[vf.ToolsetConfig, vf.State]):
    """``envmill mcp``'s tools, reached at ``config.url``; not launched by verifiers."""

    TOOL_PREFIX = None  # the environment's own tool names, as its scenarios' scripts call them


class _Server:
    """One ``envmill mcp --port 0`` process, on one scenario, for one rollout."""

    def __init__(self, config: EnvmillTaskConfig, data: EnvmillData) -> None:
        self.config, self.data = config, data
        self.process: subprocess.Popen | None = None
        self.url = ""
        self.token = secrets.token_urlsafe(16)  # reward is the scorer's, never the model's

    async def start(self) -> str:
        command = [self.config.envmill, "mcp", self.data.env_id, "--scenario"]
        command += [self.data.scenario_id, "--out", self.config.data, "--port", "0"]
        command += ["--control-token", self.token]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: stop() ends it and its children
        )
        try:
            self.url = await asyncio.wait_for(
                asyncio.to_thread(self._announced), self.config.start_timeout
            )
        except BaseException:
            self.stop()
            raise
        return self.url

    def _announced(self) -> str:
        assert self.process is not None and self.process.stderr is not None
        said = []
        for line in self.process.stderr:
            said.append(line)
            if found := LISTENING.search(line):
                return found.group(1)
        raise vf.ToolsetError(f"envmill mcp exited before serving: {''.join(said)[-2000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.process.pid, signal.SIGKILL)


# This rollout's server. ``Task.toolsets(config)`` is a classmethod with no rollout identity,
# and one Task object serves all of a group's rollouts; ``Rollout.open`` awaits ``setup`` and
# then calls ``toolsets`` in the rollout's own asyncio task, so a context variable set in
# ``setup`` is the rollout's own. Scoring finds the server by trace id.
_CURRENT: contextvars.ContextVar[_Server | None] = contextvars.ContextVar(
    "envmill_server", default=None
)
_SERVERS: dict[str, _Server] = {}


class EnvmillTask(vf.Task[EnvmillData, vf.State, EnvmillTaskConfig]):
    @property
    def key(self) -> str:
        return self.data.scenario_id

    async def setup(self, trace: vf.Trace) -> None:
        server = _Server(self.config, self.data)
        _SERVERS[trace.id] = server
        _CURRENT.set(server)
        url = await server.start()
        logger.info("rollout %s: envmill mcp %s at %s", trace.id, self.data.scenario_id, url)

    @classmethod
    def toolsets(cls, config: EnvmillTaskConfig) -> list[vf.Toolset]:
        server = _CURRENT.get()
        if server is None:
            # Outside a rollout: verifiers sizes placement (tunnels) off the class. A toolset
            # with a loopback url launches nothing and needs no tunnel, like the real one.
            return [EnvmillTools(vf.ToolsetConfig(url=PLACEHOLDER_URL))]
        if not server.url:
            raise vf.ToolsetError("this rollout's envmill mcp server did not start")
        return [EnvmillTools(vf.ToolsetConfig(url=server.url))]

    @vf.reward
    async def envmill_reward(self, trace: vf.Trace) -> float:
        """envmill's reward of the state the rollout reached, the final reply judged: the
        ``reward`` tool of the rollout's server."""
        server = _SERVERS.pop(trace.id, None)
        if server is None:
            raise vf.TaskError(f"no envmill mcp server for rollout {trace.id}")
        try:
            async with Client(streamable_http_client(server.url)) as client:
                asked = {"final_reply": trace.last_reply, "control_token": server.token}
                result = await client.call_tool("reward", asked)
            scored = result.structured_content or json.loads(result.content[0].text)
        finally:
            await asyncio.to_thread(server.stop)
        checks = scored.get("checks", [])
        trace.record_metric("envmill_success", float(bool(scored.get("success"))))
        trace.record_metric("envmill_checks_passed", float(sum(c["passed"] for c in checks)))
        trace.record_metric("envmill_checks", float(len(checks)))
        logger.info("rollout %s: envmill reward %s", trace.id, json.dumps(scored))
        return float(scored["reward"])

    async def finalize(self, trace: vf.Trace) -> None:
        return None


class EnvmillTaskset(vf.Taskset[EnvmillTask, EnvmillTasksetConfig]):
    def load(self):
        rows = json.loads(Path(self.config.scenarios).read_text(encoding="utf-8"))
        for row in rows:
            data = EnvmillData(
                id=row["scenario_id"],
                name=f"{row['domain']}/{row['scenario_id']}",
                env_id=row["env_id"],
                scenario_id=row["scenario_id"],
                kind=row.get("kind") or "",
                system_prompt=row["system"],
                prompt=row["opening"],
            )
            yield EnvmillTask(data, self.config.task)


def stop_all() -> None:
    """Stop every server a failed rollout left (a failed rollout is not scored)."""
    for server in list(_SERVERS.values()):
        server.stop()
    _SERVERS.clear()


atexit.register(stop_all)
