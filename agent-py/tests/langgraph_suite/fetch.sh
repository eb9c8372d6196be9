#!/usr/bin/env bash
# Fetches LangGraph 1.2.22's sdist (its `tests/` directory is the suite `tests/pytest.rs` runs
# on agentgraph) into ${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}/langgraph-1.2.22-sdist and
# prints the unpacked directory. Run by `.ci/run`; nothing of it is copied into the repository.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}
VERSION=1.2.22
dir="$CACHE/langgraph-$VERSION-sdist"
if [ ! -f "$dir/langgraph-$VERSION/tests/conftest.py" ]; then
  python=$("$HERE/../python.sh")
  rm -rf "$dir" && mkdir -p "$dir"
  "$python" -m pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
    -d "$dir" "langgraph==$VERSION" >&2
  tar xzf "$dir/langgraph-$VERSION.tar.gz" -C "$dir"
fi
echo "$dir/langgraph-$VERSION"
