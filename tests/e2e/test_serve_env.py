"""``envmill serve-env``: a real server on loopback, driven by OpenEnv's own client
(``EnvClient``, through envmill's typed ``ScenarioClient``): the reference solution earns full
reward, a wrong one less, eight sessions run at once, a ninth is refused, a client that vanishes
mid-episode leaves no sandbox host behind, and bad input is one line."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NamedTuple

import httpx
import psutil
import pytest
import websockets

from bench.serving import WHERE
from bench.serving import references as reference_episodes
from envmill.tasks.serving.openenv import ScenarioAction, ScenarioClient
from tests.cli import COMMAND
from tests.timing import scaled

SESSIONS = 8


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Served(NamedTuple):
    url: str
    process: subprocess.Popen[str]
    output: IO[str]  # what the server printed (stdout and stderr)


@contextmanager
def _serving(root: Path, *args: str) -> Iterator[Served]:
    """``envmill serve-env`` on a free loopback port, once it answers; stopped after, with
    every process it started. Its output goes to a file: a pipe nobody reads fills, and then
    the server's next write (a warning, a dropped client's traceback) stops its event loop."""
    port = _free_port()
    command = [*COMMAND, "serve-env", "--out", str(root), "--port", str(port), *args]
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, text=True)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_for_health(url, process, output)
            yield Served(url, process, output)
        finally:
            family = _descendants(process.pid) if process.poll() is None else set()
            process.terminate()
            _wait_or_dump(process, output)
        assert _gone(family) == [], "the stopped server left processes behind"


def _said(output: IO[str]) -> str:
    output.seek(0)
    return output.read()[-3000:]


def _wait_for_health(url: str, process: subprocess.Popen[str], output: IO[str]) -> None:
    deadline = time.monotonic() + scaled(30)
    while True:
        assert process.poll() is None, _said(output)
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the server never answered /health"
        time.sleep(0.1)


def _wait_or_dump(process: subprocess.Popen[str], output: IO[str]) -> None:
    """A stopped server ends within its shutdown bound; one that does not is killed, and the
    failure shows every thread's stack (SIGUSR1) to say where it waited."""
    try:
        process.wait(timeout=scaled(20))
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR1)
        time.sleep(1)
        process.kill()
        process.wait()
        pytest.fail(f"the server did not stop on SIGTERM:\n{_said(output)}")


@pytest.fixture(scope="module")
def server(corpus):
    with _serving(corpus, "--where", WHERE, "--max-sessions", str(SESSIONS)) as served:
        yield served


@pytest.fixture(scope="module")
def references(corpus) -> list[dict]:
    found = reference_episodes(corpus)  # the bench's: the same calls and replies it times
    assert found, "the corpus has no non-conversational certified scenario with calls"
    return found


def _client(url: str) -> ScenarioClient:
    return ScenarioClient(base_url=url, connect_timeout_s=scaled(10), message_timeout_s=scaled(60))


def _descendants(pid: int) -> set[int]:
    return {child.pid for child in psutil.Process(pid).children(recursive=True)}


def _gone(pids: set[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + scaled(seconds)
    while (left := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _play(url: str, reference: dict, reply: str | None = None, calls: bool = True):
    """One episode over its own session: the reference calls (or none), then a reply."""
    with _client(url).sync() as env:
        result = env.reset(scenario_id=reference["id"])
        assert not result.done and result.observation.tools
        for tool, arguments in reference["calls"] if calls else []:
            result = env.step(ScenarioAction.call(tool, arguments))
            assert not result.done and result.reward == 0.0
            assert len(result.observation.tool_results) == 1
        result = env.step(ScenarioAction.reply(reply or reference["reply"]))
        return result, env.state()


def test_the_reference_solution_earns_full_reward(server, references):
    url, _, _ = server
    reference = references[0]
    result, state = _play(url, reference)
    assert result.done and result.reward == 1.0
    assert result.observation.termination == "finished" and result.observation.success
    assert all(result.observation.check_results)
    assert state.scenario_id == reference["id"] and state.done and state.reward == 1.0
    assert state.step_count == len(reference["calls"]) + 1


def test_it_listens_on_loopback_only(server):
    _, process, _ = server
    tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    listening = {
        c.laddr.ip for p in tree for c in p.net_connections(kind="inet") if c.status == "LISTEN"
    }
    assert listening == {"127.0.0.1"}


def test_a_wrong_sequence_earns_less(server, references):
    url, _, _ = server
    reference = next(r for r in references if r["calls"])
    result, _ = _play(url, reference, reply="Done.", calls=False)
    assert result.done and result.reward < 1.0 and not result.observation.success


def test_a_seed_chooses_the_same_scenario(server):
    url, _, _ = server
    chosen = []
    for _ in range(2):
        with _client(url).sync() as env:
            chosen.append(env.reset(seed=3).observation.scenario_id)
    assert chosen[0] and chosen[0] == chosen[1]


def test_eight_sessions_at_once_and_a_ninth_is_refused(server, references):
    url, _, _ = server
    opened, resumed = threading.Barrier(SESSIONS + 1), threading.Barrier(SESSIONS + 1)
    rewards: list[float] = []
    errors: list[BaseException] = []

    def session(reference: dict) -> None:
        try:
            with _client(url).sync() as env:
                env.reset(scenario_id=reference["id"])
                opened.wait(timeout=scaled(60))
                resumed.wait(timeout=scaled(60))
                for tool, arguments in reference["calls"]:
                    env.step(ScenarioAction.call(tool, arguments))
                result = env.step(ScenarioAction.reply(reference["reply"]))
                rewards.append(result.reward)
        except BaseException as exc:
            errors.append(exc)
            opened.abort()
            resumed.abort()

    threads = [
        threading.Thread(target=session, args=(references[i % len(references)],))
        for i in range(SESSIONS)
    ]
    for thread in threads:
        thread.start()
    opened.wait(timeout=scaled(60))
    try:
        with (
            pytest.raises(RuntimeError, match="CAPACITY_REACHED"),
            _client(url).sync() as ninth,
        ):
            ninth.reset(scenario_id=references[0]["id"])
    finally:
        resumed.wait(timeout=scaled(60))
    for thread in threads:
        thread.join(timeout=scaled(60))
    assert errors == []
    assert rewards == [1.0] * SESSIONS


def test_a_client_that_vanishes_leaves_no_sandbox_host(server, references):
    url, process, _ = server
    reference = next(r for r in references if r["calls"])
    _play(url, reference)  # the sandbox's long-lived processes are up
    before = _descendants(process.pid)

    async def vanish() -> set[int]:
        client = _client(url)
        await client.connect()
        await client.reset(scenario_id=reference["id"])
        tool, arguments = reference["calls"][0]
        await client.step(ScenarioAction.call(tool, arguments))
        during = _descendants(process.pid) - before
        assert client._ws is not None
        client._ws.transport.abort()  # no close frame: the connection just drops
        return during

    hosts = asyncio.run(vanish())
    assert hosts, "the episode's sandbox host was not seen"
    assert _gone(hosts) == [], "the dropped session's sandbox host lives on"
    assert _gone(_descendants(process.pid) - before) == []


def test_clients_that_leave_are_not_logged_as_errors(server, references):
    """Closed and dropped sessions, and requests refused, are ordinary: the server says it is
    serving and nothing else (a traceback per session once filled the pipe of a supervisor
    that did not read it, and stalled the server)."""
    url, process, output = server
    _play(url, references[0])
    with _client(url).sync() as env:
        env.reset(scenario_id=references[0]["id"])  # left mid-episode

    reference = next(r for r in references if r["calls"])
    before = _descendants(process.pid)

    async def leave_with_a_reply_pending(graceful: bool) -> None:
        call = ScenarioAction.call(*reference["calls"][0]).model_dump(exclude_none=True)
        socket = await websockets.connect(url.replace("http", "ws") + "/ws")
        await socket.send(json.dumps({"type": "reset", "data": {"scenario_id": reference["id"]}}))
        await socket.recv()
        await socket.send(json.dumps({"type": "step", "data": call}))
        await socket.close() if graceful else socket.transport.abort()

    for graceful in (True, False, True, False):
        asyncio.run(leave_with_a_reply_pending(graceful))
    assert _gone(_descendants(process.pid) - before) == []  # their sessions ended
    _play(url, reference)  # and the server went on past them
    _is_refused(url, "/reset", {"scenario_id": "no such scenario"}, 404)
    _is_refused(url, "/step", {"action": {"content": "Done."}}, 409)
    assert httpx.get(f"{url}/health", timeout=scaled(10)).status_code == 200
    assert process.poll() is None
    printed = _said(output).strip().splitlines()
    assert len(printed) == 1 and printed[0].startswith("serving "), "\n".join(printed)


def test_an_idle_session_is_ended_with_its_host(corpus, references):
    """OpenEnv's reaper looks every 5 s at least: a silent session ends within about that."""
    with _serving(corpus, "--where", WHERE, "--idle-timeout", "1") as (url, process, _):
        _play(url, references[0])  # the sandbox's long-lived processes are up
        before = _descendants(process.pid)

        async def fall_silent() -> tuple[set[int], set[int]]:
            async with _client(url) as client:
                await client.reset(scenario_id=references[0]["id"])
                during = _descendants(process.pid) - before
                left = set(_gone(during, seconds=15))
                with pytest.raises(RuntimeError, match="ended"):
                    await client.reset(scenario_id=references[0]["id"])
                return during, left

        hosts, left = asyncio.run(fall_silent())
        assert hosts, "the episode's sandbox host was not seen"
        assert left == set(), "the idle session's sandbox host lives on"


def _is_refused(url: str, path: str, body: dict, status: int) -> None:
    answer = httpx.post(f"{url}{path}", json=body, timeout=scaled(30))
    assert answer.status_code == status, answer.text
    assert answer.json()["detail"] and "Traceback" not in answer.text


def test_requests_it_cannot_take_are_one_line_refusals(server, references):
    """OpenEnv's stateless endpoints: a scenario not served, options that name no episode, a
    step with no episode open; a 4xx that says why, never a 500."""
    url, _, _ = server
    _is_refused(url, "/reset", {"scenario_id": "no such scenario"}, 404)
    _is_refused(url, "/reset", {"scenario_id": {}}, 422)
    _is_refused(url, "/reset", {"sample": -1}, 422)
    _is_refused(url, "/step", {"action": {"content": "Done."}}, 409)
    served = httpx.post(f"{url}/reset", json={"scenario_id": references[0]["id"]}, timeout=30)
    assert served.status_code == 200 and served.json()["observation"]["tools"]

    async def send_too_much() -> int | None:
        async with websockets.connect(url.replace("http", "ws") + "/ws") as socket:
            await socket.send(json.dumps({"type": "step", "data": {"content": "x" * (2 << 20)}}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await socket.recv()
            return closed.value.rcvd.code if closed.value.rcvd else None

    assert asyncio.run(send_too_much()) == 1009  # "message too big": a turn is at most 1 MiB


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--where", "no_such_column = 1"], "--where 'no_such_column = 1':"),
        (["--where", "1 = 1; DELETE FROM scenarios"], "syntax error"),
        (["--where", "domain = 'none of these'"], "no certified scenarios"),
        (["--max-sessions", "0"], "--max-sessions"),
    ],
)
def test_bad_options_are_one_line(cli, corpus, args, said):
    done = cli("serve-env", "--out", str(corpus), "--port", str(_free_port()), *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], done.stderr


def test_a_port_in_use_is_one_line(cli, corpus, server):
    url, _, _ = server
    port = url.rsplit(":", 1)[1]
    done = cli("serve-env", "--out", str(corpus), "--port", port, "--where", WHERE)
    assert done.returncode == 2 and "cannot listen on 127.0.0.1:" in done.stderr, done.stderr


def test_the_pool_bounds_open_environments_whoever_opens_them(corpus):
    """OpenEnv counts WebSocket sessions only; its stateless ``POST /reset`` opens one more
    environment each, so the pool bounds them all (a breaker held 11 hosts against 3)."""
    from envmill.rl import load_episode_specs
    from envmill.tasks.sandbox import Sandbox
    from envmill.tasks.serving.openenv import ScenarioPool
    from envmill.tasks.serving.openenv.environment import ScenarioEnvironment
    from tests.conftest import TEST_LIMITS

    specs = load_episode_specs(corpus, "mode = 'non_conversational'")
    with Sandbox(TEST_LIMITS) as box:
        pool = ScenarioPool(specs, box, max_open=1)
        first = ScenarioEnvironment(pool)
        first.reset()
        idle = ScenarioEnvironment(pool)  # what OpenEnv makes to answer /state: no slot taken
        assert idle.state.scenario_id is None
        idle.close()
        with pytest.raises(RuntimeError, match="at most 1 environments at once"):
            ScenarioEnvironment(pool).reset()
        first.close()
        first.close()  # twice: one slot back, not two
        again = ScenarioEnvironment(pool)
        again.reset()
        with pytest.raises(RuntimeError):
            ScenarioEnvironment(pool).reset()
        again.close()
