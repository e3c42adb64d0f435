"""``envmill serve-env`` against the in-process RL environment doing the same calls.

Usage: .venv/bin/python -m bench.serving [--out DATA] [--episodes N]
DATA is a data folder with certified scenarios (default: a fresh default run of ``envmill run``
in a temporary folder). The non-conversational certified scenarios' reference solutions are
played, one tool call a step, then the reference reply (which must earn reward 1.0):

- served: an ``envmill serve-env`` process on loopback, each session OpenEnv's WebSocket client
  (``ScenarioClient``, an ``EnvClient``) in a thread of this process;
- in-process: ``envmill.rl.open_env`` (the Gymnasium ``ScenarioEnv``), one per thread, over this
  process's sandbox.

With 1 and with 8 sessions (threads) at once, each playing N episodes in all: tool calls a
second (wall of the phase, resets and final replies included) and the median latency of a
tool-call step, then served ÷ in-process. Timing is printed, never asserted (DESIGN §9).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.rollout_steps import data_folder
from envmill.rl import open_env
from envmill.tasks.serving.openenv import ScenarioAction, ScenarioClient
from envmill.warehouse.views import query

WHERE = "mode = 'non_conversational'"
Episode = dict  # {"id", "calls": [(tool, arguments)], "reply"}
Player = Callable[[Episode], list[float]]  # one episode -> its tool-call step seconds


def references(root: Path) -> list[Episode]:
    sql = f"""SELECT s.scenario_id, s.reference_solution_json, t.messages_json
        FROM scenarios s JOIN trajectories t USING (scenario_id)
        WHERE s.status = 'certified' AND t.policy = 'reference' AND s.{WHERE}
        ORDER BY s.scenario_id"""
    found = []
    for row in query(root, sql).to_pylist():
        replies = [m for m in json.loads(row["messages_json"]) if m["role"] == "assistant"]
        calls = [(s["tool"], s["arguments"]) for s in json.loads(row["reference_solution_json"])]
        reply = replies[-1]["content"]
        if calls:
            found.append({"id": row["scenario_id"], "calls": calls, "reply": reply})
    return found


def served_player(url: str, opened: list[Any]) -> Player:
    """Each thread keeps one session (one connection) for all its episodes."""
    local = threading.local()

    def play(episode: Episode) -> list[float]:
        if not hasattr(local, "env"):
            local.env = ScenarioClient(base_url=url).sync()
            local.env.connect()
            opened.append(local.env)
        env, times = local.env, []
        env.reset(scenario_id=episode["id"])
        for tool, arguments in episode["calls"]:
            began = time.perf_counter()
            env.step(ScenarioAction.call(tool, arguments))
            times.append(time.perf_counter() - began)
        result = env.step(ScenarioAction.reply(episode["reply"]))
        assert result.reward == 1.0, (episode["id"], result.observation.reason)
        return times

    return play


def in_process_player(root: Path) -> Player:
    """Each thread keeps one ``ScenarioEnv`` for all its episodes."""
    local = threading.local()

    def play(episode: Episode) -> list[float]:
        if not hasattr(local, "env"):
            local.env = open_env(root, WHERE)
        env, times = local.env, []
        env.reset(options={"scenario_id": episode["id"]})
        for index, (tool, arguments) in enumerate(episode["calls"]):
            call = {"id": f"c{index}", "name": tool, "arguments": arguments}
            began = time.perf_counter()
            env.step({"role": "assistant", "content": None, "tool_calls": [call]})
            times.append(time.perf_counter() - began)
        _, reward, *_ = env.step(episode["reply"])
        assert reward == 1.0, episode["id"]
        return times

    return play


def phase(
    make: Callable[[], Player], episodes: list[Episode], sessions: int
) -> tuple[float, float]:
    """(tool calls a second over the phase's wall, median step seconds); each of ``sessions``
    threads opens its session first (not timed: a trainer opens them once)."""
    play, ready = make(), threading.Barrier(sessions + 1)

    def warm(_: int) -> None:
        play(episodes[0])
        ready.wait()

    with ThreadPoolExecutor(sessions) as pool:
        warming = [pool.submit(warm, i) for i in range(sessions)]
        ready.wait()
        for done in warming:
            done.result()
        began = time.perf_counter()
        steps = [t for times in pool.map(play, episodes) for t in times]
        wall = time.perf_counter() - began
    return len(steps) / wall, statistics.median(steps)


def start_server(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    envmill = str(Path(sys.executable).with_name("envmill"))
    command = [envmill, "serve-env", "--out", str(root), "--port", str(port), "--where", WHERE]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the server never answered /health")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="a data folder with certified scenarios")
    parser.add_argument("--episodes", type=int, default=48, help="episodes per phase")
    args = parser.parse_args()
    root = data_folder(args.out)
    chosen = references(root)
    episodes = [chosen[i % len(chosen)] for i in range(args.episodes)]
    print(f"load average at start: {os.getloadavg()}")
    print(f"{len(episodes)} episodes a phase, {sum(len(e['calls']) for e in episodes)} calls")
    process, url = start_server(root)
    opened: list[Any] = []
    try:
        rows = []
        for sessions in (1, 8):
            served = phase(lambda: served_player(url, opened), episodes, sessions)
            for env in opened:
                env.close()
            opened.clear()
            local = phase(lambda: in_process_player(root), episodes, sessions)
            rows.append((sessions, served, local))
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(
        f"{'sessions':>8} {'served calls/s':>15} {'in-proc calls/s':>16} {'ratio':>6} "
        f"{'served step ms':>15} {'in-proc step ms':>16} {'ratio':>6}"
    )
    for sessions, (s_rate, s_step), (l_rate, l_step) in rows:
        print(
            f"{sessions:>8} {s_rate:>15.1f} {l_rate:>16.1f} {s_rate / l_rate:>6.2f} "
            f"{s_step * 1000:>15.2f} {l_step * 1000:>16.2f} {s_step / l_step:>6.2f}"
        )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
