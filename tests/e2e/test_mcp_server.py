"""``envmill mcp`` driven by the MCP SDK's own client, over stdio (the command spawned as a
subprocess) and over streamable HTTP on 127.0.0.1: the tools listed, a certified scenario's
reference solution scored 1.0, a wrong sequence less, reset, and bad input in one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from contextlib import asynccontextmanager

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from envmill.warehouse.views import query
from tests.cli import COMMAND

TOKEN = "test-control-token"  # the trainer's: envmill's own tools answer calls carrying it


@pytest.fixture(scope="module")
def chosen(corpus) -> dict:
    """A certified scenario that changes the state and expects no reply, with its environment's
    tools and state-changing tools."""
    sql = """
    SELECT s.scenario_id, s.env_id, s.reference_solution_json, s.withheld_tools_json,
           e.tools_json,
           (SELECT list(name) FROM tools t WHERE t.env_id = s.env_id AND t.kind = 'state_change')
             AS changing
    FROM scenarios s JOIN environments e USING (env_id)
    WHERE s.status = 'certified' AND s.expected_answer_json IS NULL AND s.refusal_json IS NULL
      AND s.mode = 'non_conversational'
    ORDER BY s.scenario_id
    """
    for row in query(corpus, sql).to_pylist():
        steps = json.loads(row["reference_solution_json"])
        if any(step["tool"] in row["changing"] for step in steps):
            return row | {"steps": steps}
    raise AssertionError("the corpus has no certified scenario that changes the state")


def _args(corpus, chosen, *more: str) -> list[str]:
    return [
        *COMMAND[1:],
        "mcp",
        chosen["env_id"],
        "--out",
        str(corpus),
        "--control-token",
        TOKEN,
        *more,
    ]


@asynccontextmanager
async def _stdio(corpus, chosen):
    params = StdioServerParameters(
        command=sys.executable, args=_args(corpus, chosen, "--scenario", chosen["scenario_id"])
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _call(session: ClientSession, tool: str, arguments: dict | None = None) -> dict:
    result = await session.call_tool(tool, arguments or {})
    text = json.loads(result.content[0].text)
    assert result.structured_content == text
    assert result.is_error == (text.get("success") is False)
    return text


async def _trainer(session: ClientSession, tool: str, arguments: dict | None = None) -> dict:
    """A call of envmill's own tools, as the trainer makes it: with the control token."""
    return await _call(session, tool, {**(arguments or {}), "control_token": TOKEN})


async def _solve(session: ClientSession, steps: list[dict]) -> None:
    for step in steps:
        result = await _call(session, step["tool"], step["arguments"])
        assert result["success"] is True, (step, result)


async def _reference_then_wrong(session: ClientSession, chosen: dict) -> None:
    names = [tool.name for tool in (await session.list_tools()).tools]
    withheld = set(json.loads(chosen["withheld_tools_json"] or "[]"))
    schemas = json.loads(chosen["tools_json"])
    expected = [t["function"]["name"] for t in schemas if t["function"]["name"] not in withheld]
    assert names == expected  # envmill's own tools are the trainer's, never offered
    for own in ("reward", "reset_scenario"):  # an agent calling them gets nothing
        refused = await _call(session, own, {"final_reply": "Done.", "control_token": "guess"})
        assert "needs the control token" in refused["error"] and "reward" not in refused
    before = await _trainer(session, "reward")
    assert before["reward"] < 1.0 and before["success"] is False
    await _solve(session, chosen["steps"])
    done = await _trainer(session, "reward", {"final_reply": "Done."})
    assert (done["reward"], done["success"]) == (1.0, True), done
    assert all(check["passed"] and check["description"] for check in done["checks"])
    restarted = await _trainer(session, "reset_scenario")
    assert restarted["data"]["scenario_id"] == chosen["scenario_id"]
    assert await _trainer(session, "reward") == before
    last = max(i for i, s in enumerate(chosen["steps"]) if s["tool"] in chosen["changing"])
    await _solve(session, chosen["steps"][:last])  # the partial replay: certified to lose
    wrong = await _trainer(session, "reward")
    assert wrong["reward"] < 1.0 and not wrong["success"]
    assert any(not check["passed"] for check in wrong["checks"])


def test_over_stdio_the_reference_scores_full_reward_and_reset_restores(corpus, chosen):
    async def main():
        async with _stdio(corpus, chosen) as session:
            await _reference_then_wrong(session, chosen)
            unknown = await _call(session, "no_such_tool")
            assert "not a tool of this environment" in unknown["error"]

    anyio.run(main)


def test_over_http_each_session_has_its_own_state(corpus, chosen):
    server = subprocess.Popen(
        [sys.executable, *_args(corpus, chosen, "--port", "0")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stderr.readline() if server.stderr else ""
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert found, line
        url = found.group(0)

        async def main():
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await _reference_then_wrong(session, chosen)
                    await _solve(session, chosen["steps"])
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    fresh = await _trainer(session, "reward")
                    assert fresh["reward"] < 1.0  # another session starts from the scenario

        anyio.run(main)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("env", "no environment 'ffffffffffffffff'"),
        ("scenario", "no scenario '0000000000000000'"),
        ("other", "belongs to environment"),
        ("rejected", "is rejected, not certified"),
        ("folder", "is not an envmill data folder"),
        ("port", "--port 70000: not a TCP port"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, corpus_copy, chosen, tmp_path, how, said):
    env, more = chosen["env_id"], []
    if how == "env":
        env = "ffffffffffffffff"
    elif how == "scenario":
        more = ["--scenario", "0000000000000000"]
    elif how == "other":
        sql = "SELECT scenario_id FROM scenarios WHERE env_id <> $env AND status = 'certified'"
        more = ["--scenario", query(corpus_copy, sql, {"env": env}).column(0)[0].as_py()]
    elif how == "rejected":
        more = ["--scenario", _reject_one(corpus_copy, env)]
    elif how == "port":
        more = ["--port", "70000"]
    out = str(tmp_path / "nothing") if how == "folder" else str(corpus_copy)
    done = cli("mcp", env, "--out", out, *more)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and said in lines[0], done.stderr


def _reject_one(root, env_id: str) -> str:
    """A copy of a scenario of ``env_id``, under another id, that certification rejected."""
    from envmill.warehouse.store import Warehouse

    sql = "SELECT * FROM scenarios WHERE env_id = $env ORDER BY scenario_id LIMIT 1"
    row = query(root, sql, {"env": env_id}).to_pylist()[0]
    row |= {"scenario_id": "0123456789abcdef", "status": "rejected", "rejected_gate": "checks_pass"}
    Warehouse(root).write("scenarios", [row], key="mcp-rejected")
    return row["scenario_id"]


def test_a_conversational_scenario_is_refused_with_where_to_serve_it(cli, corpus):
    sql = """SELECT env_id, scenario_id FROM scenarios
             WHERE status = 'certified' AND mode = 'conversational' ORDER BY 2 LIMIT 1"""
    env, scenario = query(corpus, sql).to_pylist()[0].values()
    done = cli("mcp", env, "--out", str(corpus), "--scenario", scenario)
    assert done.returncode == 2 and "envmill serve-env" in done.stderr, done.stderr


def test_a_session_closed_to_make_room_is_refused_not_answered_afresh():
    from envmill.tasks.serving.mcp_server import SessionClosed, SessionPool

    closed = []

    class Fake:
        def close(self):
            closed.append(self)

    pool = SessionPool(Fake, limit=1)  # type: ignore[arg-type]
    first = pool.get("a")
    assert pool.get("a") is first
    pool.get("b")  # one more than the limit: "a" is closed
    assert closed == [first]
    with pytest.raises(SessionClosed, match="more than 1 at once"):
        pool.get("a")
