"""From verifiers' own virtual environment (its pinned mcp client), play a scenario's reference
solution against ``envmill mcp --port P`` and read envmill's reward: the seam a verifiers
environment uses (its toolset's ``url``, its reward a call of the ``reward`` tool).

    python play_reference.py http://127.0.0.1:P/mcp steps.json TOKEN

TOKEN is the server's control token (``envmill mcp … --control-token TOKEN``): ``reward`` is the
scorer's, and answers only a call that carries it.
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, steps: list[dict], token: str) -> None:
    control = {"control_token": token}
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        names = [tool.name for tool in (await mcp.list_tools()).tools]
        print(f"{len(names)} tools offered (envmill's own are never listed)")
        print("before:", (await mcp.call_tool("reward", control)).structured_content["reward"])
        for step in steps:
            result = await mcp.call_tool(step["tool"], step["arguments"])
            print(f"  {step['tool']}: {result.content[0].text[:80]}")
        print("after:", json.dumps((await mcp.call_tool("reward", control)).structured_content))


if __name__ == "__main__":
    with open(sys.argv[2], encoding="utf-8") as file:
        asyncio.run(main(sys.argv[1], json.load(file), sys.argv[3]))
