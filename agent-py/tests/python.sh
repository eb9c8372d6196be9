#!/usr/bin/env bash
# Prints the path of a python with maturin, pytest and LangGraph (pinned in requirements.txt
# next to this script), creating its venv on first use in
#   ${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}/py-<hash of requirements.txt>
# agentgraph itself is never installed into it: the test puts the freshly built wheel on
# PYTHONPATH, so one venv serves every checkout. Env: PYTHON (default python3).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}
PYTHON=${PYTHON:-python3}
hash=$(sha256sum "$HERE/requirements.txt" | cut -c1-12)
dir="$CACHE/py-$hash"
mkdir -p "$CACHE"
if [ ! -f "$dir/.installed" ]; then
  echo "== installing agent-py's test requirements into $dir" >&2
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt" >&2
  touch "$dir/.installed"
fi
echo "$dir/bin/python"
