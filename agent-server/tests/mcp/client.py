"""The official Python MCP client against a server's /mcp: lists the graphs as tools and
calls them, as an MCP host (an IDE, a chat app, an agent) would.

    python client.py URL reference|flows [API_KEY]

`reference` checks the reference graphs (examples/reference), `flows` the five flows of
`agent serve` (offline). Exits non-zero, saying what differed, on the first failed check.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def answer(result):
    """The final state a successful call returns: structured, and the same as JSON text."""
    check(not result.is_error, f"the call failed: {result}")
    text = json.loads(result.content[0].text)
    check(result.structured_content == text, f"text and structured content differ: {result}")
    return text


def last_ai(state):
    ai = [m for m in state["messages"] if m["type"] == "ai"]
    check(ai, f"no AI message in {state}")
    return ai[-1]["content"]


async def tools_of(session):
    listed = await session.list_tools()
    return {t.name: t for t in listed.tools}


async def reference(session):
    tools = await tools_of(session)
    check({"agent", "simple"} <= set(tools), f"tools: {sorted(tools)}")
    agent = tools["agent"]
    check(agent.input_schema["type"] == "object", agent.input_schema)
    check(
        agent.input_schema["properties"]["messages"]["type"] == "string",
        f"messages asked as the user's message: {agent.input_schema}",
    )
    check(agent.title == "agent" and agent.description, agent)

    out = answer(await session.call_tool("simple", {"value": "mcp"}))
    check(out == {"value": "MCP"}, out)

    out = answer(await session.call_tool("agent", {"messages": "hi from python"}))
    replies = [m["content"] for m in out["messages"] if m["type"] == "ai"]
    check("echo: hi from python" in replies, out)

    failed = await session.call_tool("agent", {"messages": "please fail"})
    check(failed.is_error, f"a failing run is an error result: {failed}")
    check("failed on purpose" in failed.content[0].text, failed)

    # The run's context through _meta; one that does not fit the graph is refused.
    refused = await session.call_tool(
        "agent", {"messages": "hi"}, meta={"context": {"model": 5}}
    )
    check(refused.is_error and "model" in refused.content[0].text, refused)
    ok = await session.call_tool("agent", {"messages": "hi"}, meta={"context": {"user": "ann"}})
    check(not ok.is_error, ok)

    try:
        await session.call_tool("no_such_graph", {})
    except MCPError as e:
        check("Unknown tool" in str(e), e)
    else:
        raise AssertionError("an unknown tool is a protocol error")


async def flows(session):
    tools = await tools_of(session)
    check(
        set(tools) == {"data", "form", "orchestrator", "react", "tool-router"},
        f"tools: {sorted(tools)}",
    )
    for tool in tools.values():
        check(tool.description, f"{tool.name} has a description")
        check(tool.input_schema["type"] == "object", tool.input_schema)

    out = answer(await session.call_tool("tool-router", {"messages": "What time is it in Tokyo?"}))
    check("Tokyo" in last_ai(out), out)

    out = answer(
        await session.call_tool(
            "react", {"messages": "What is 12 * 7?"}, meta={"context": {"mode": "static"}}
        )
    )
    # The react flow's answer is its final block (static mode writes no AI message).
    check(out["final_block"]["stop"] == "answered", out)
    check("84" in out["final_block"]["summary"], out)

    refused = await session.call_tool("react", {"messages": "hi"}, meta={"context": {"bogus": 1}})
    check(refused.is_error, f"an unknown flow option is refused: {refused}")


async def main(url, kind, key):
    headers = {"x-api-key": key} if key else None
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                check(init.capabilities.tools is not None, init)
                await {"reference": reference, "flows": flows}[kind](session)
    print(f"python MCP client: {kind} checks passed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
