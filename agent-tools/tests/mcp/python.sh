#!/usr/bin/env bash
# Prints the path of a python that has the official MCP SDK (`mcp` from PyPI, pinned in
# requirements.txt next to this script), creating its venv on first use in
#   ${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}/mcp-py-<version>
# The MCP tests of agent-tools (MCP servers written in Python) and agent-server (the Python MCP
# client against /mcp) both run their scripts with it. Env: PYTHON (default python3).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}
PYTHON=${PYTHON:-python3}
ver=$(sed -n 's/^mcp==//p' "$HERE/requirements.txt")
dir="$CACHE/mcp-py-$ver"
mkdir -p "$CACHE"
if [ ! -f "$dir/.installed" ]; then
  echo "== installing mcp $ver into $dir" >&2
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt" >&2
  touch "$dir/.installed"
fi
echo "$dir/bin/python"
