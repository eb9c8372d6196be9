#!/usr/bin/env bash
# Prints the path of a python that has the official A2A SDK (`a2a-sdk` from PyPI with its
# HTTP server, and uvicorn; pinned in requirements.txt next to this script), creating its
# venv on first use in
#   ${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}/a2a-py-<version>
# a2a-sdk 0.3 speaks A2A 0.3 (`message/send`, `kind` fields, lowercase states): the protocol
# langgraph-api 0.16.7 answers its clients in. agent-server's tests run its client against
# /a2a, agent-flows' run its server as the remote agent of `agent run react --a2a`.
# Env: PYTHON (default python3).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}
PYTHON=${PYTHON:-python3}
ver=$(sed -n 's/^a2a-sdk\[http-server\]==//p' "$HERE/requirements.txt")
dir="$CACHE/a2a-py-$ver"
mkdir -p "$CACHE"
if [ ! -f "$dir/.installed" ]; then
  echo "== installing a2a-sdk $ver into $dir" >&2
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt" >&2
  touch "$dir/.installed"
fi
echo "$dir/bin/python"
