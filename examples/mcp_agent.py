"""An agent on one envmill scenario through ``envmill mcp``: any OpenAI-compatible model calls
the environment's tools over MCP, then envmill's ``reward`` tool scores the state reached.

    python examples/mcp_agent.py ENV_ID [--scenario ID] [--out DIR] [--base-url URL]
        [--model NAME] [--offline-script]

``--offline-script`` is for envmill's offline test endpoint (``python -m
envmill.tasks.offline_llm``): it uploads the scenario's reference solution as the model's script,
so the endpoint plays a perfect agent (reward 1.0) with no model at all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import subprocess
import sys
import urllib.request

from mcp import ClientSession, StdioServerParameters, stdio_client
from openai import OpenAI


def reference_messages(out: str, scenario_id: str) -> list[dict]:
    """The scenario's reference trajectory: its calls and its closing words."""
    sql = (
        "SELECT messages_json FROM trajectories WHERE policy = 'reference' "
        f"AND scenario_id = '{scenario_id}'"
    )
    done = subprocess.run(
        ["envmill", "sql", "--out", out, "--format", "json", sql],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(json.loads(done.stdout)[0]["messages_json"])


def upload_script(base_url: str, task: str, messages: list[dict]) -> None:
    """The offline endpoint answers a conversation opening with ``task`` by the reference's
    replies, its closing words included (an answer scenario's reward reads them)."""
    from envmill.tasks.offline_llm import oracle_script
    from envmill.tasks.offline_llm.scripts import script_key

    body = {script_key(task): oracle_script(messages)}
    root = base_url.rstrip("/").removesuffix("/v1")
    request = urllib.request.Request(
        f"{root}/_scripts", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    urllib.request.urlopen(request).close()


async def main(args: argparse.Namespace) -> None:
    token = secrets.token_urlsafe(16)  # envmill's own tools answer the trainer: this script
    command = ["mcp", args.env_id, "--out", args.out, "--control-token", token]
    command += ["--scenario", args.scenario] if args.scenario else []
    control = {"control_token": token}
    server = StdioServerParameters(command="envmill", args=command)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        opened = (await mcp.call_tool("reset_scenario", control)).structured_content["data"]
        if args.offline_script:
            reference = reference_messages(args.out, opened["scenario_id"])
            upload_script(args.base_url, opened["task"], reference)
        listed = (await mcp.list_tools()).tools
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.input_schema,
                },
            }
            for t in listed  # the environment's tools: envmill's own are never listed
        ]
        model = OpenAI(
            base_url=args.base_url, api_key="none", default_headers={"X-Envmill-Stage": "policy"}
        )  # the offline endpoint's
        messages = [
            {"role": "system", "content": opened["system"]},
            {"role": "user", "content": opened["task"]},
        ]
        for _ in range(args.max_turns):
            reply = (
                model.chat.completions.create(model=args.model, messages=messages, tools=tools)
                .choices[0]
                .message
            )
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                result = await mcp.call_tool(
                    call.function.name, json.loads(call.function.arguments or "{}")
                )
                print(f"{call.function.name}: {result.content[0].text[:100]}")
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": result.content[0].text}
                )
        said = messages[-1].get("content") or ""
        scored = await mcp.call_tool("reward", {"final_reply": said, **control})
        print(json.dumps(scored.structured_content, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("env_id")
    parser.add_argument("--scenario")
    parser.add_argument("--out", default="envmill-data")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="offline")
    parser.add_argument("--max-turns", type=int, default=30)
    parser.add_argument("--offline-script", action="store_true")
    asyncio.run(main(parser.parse_args(sys.argv[1:])))
