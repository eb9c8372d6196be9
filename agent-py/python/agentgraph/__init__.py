"""agentgraph: LangGraph's API, run by agentgraph's Rust runtime (agent-core)."""

import atexit

from agentgraph import _native

# Results still being handed from Rust to asyncio when the program ends are waited for
# before the interpreter finalizes (see the native `bridge` module).
atexit.register(_native.drain)
