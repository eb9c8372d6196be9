"""An MCP server written with the official Python SDK (`mcp`), for agentgraph's MCP tests.

mcp 2.x renamed FastMCP to MCPServer (`mcp.server.mcpserver`); the decorator API is the same.

    python server.py                  # stdio
    python server.py --http           # streamable HTTP on 127.0.0.1, a free port; prints
                                      # `listening on http://127.0.0.1:PORT/mcp` when ready
"""

import asyncio
import os
import socket
import sys

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

server = MCPServer("agentgraph-test-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def environ(name: str) -> str:
    """The value of an environment variable in the server's process, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool()
def greet(name: str, shout: bool = False) -> str:
    """Greets someone by name."""
    text = f"Hello, {name}!"
    return text.upper() if shout else text


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given (an error result, `isError`)."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
def refuse() -> str:
    """Answers with a protocol error instead of a result."""
    raise MCPError(-32001, "refused on purpose")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}s"


@server.tool()
def stats(numbers: list[float]) -> dict[str, float]:
    """The count, sum and mean of some numbers."""
    total = sum(numbers)
    return {"count": len(numbers), "sum": total, "mean": total / len(numbers) if numbers else 0.0}


@server.tool()
def pixel() -> Image:
    """A 1x1 PNG image."""
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
    )
    return Image(data=png, format="png")


@server.tool()
def crash(code: int = 3) -> str:
    """Exits the server process at once (a server that dies mid-session)."""
    print("crashing on purpose, goodbye", file=sys.stderr, flush=True)
    os._exit(code)


async def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    # Connections queue on the listening socket until uvicorn accepts them, so the address
    # can be announced before it starts.
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        asyncio.run(serve_http())
    else:
        server.run("stdio")
