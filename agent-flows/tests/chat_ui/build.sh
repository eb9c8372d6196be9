#!/usr/bin/env bash
# Builds the useStream chat page (this directory) with Vite and prints the directory of the
# built page. npm packages come from the committed lock (`npm ci`), installed once into
#   ${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}/chat-ui-<sdk version>
# and each build is kept there under the hash of the lock and the sources, so a second run
# builds nothing. Env: NPM (default npm).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}
NPM=${NPM:-npm}
mkdir -p "$CACHE"
# One build at a time (worktrees share the cache); a page once built is never removed, so a
# test still serving it is not disturbed.
exec 9>"$CACHE/chat-ui.lock"
flock 9
ver=$(node -p "require('$HERE/package-lock.json').packages['node_modules/@langchain/langgraph-sdk'].version")
dir="$CACHE/chat-ui-$ver"
lock_sum=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$lock_sum" ]; then
  echo "== installing the chat page's packages (@langchain/langgraph-sdk $ver, React, Vite) into $dir (npm ci)" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$dir/"
  (cd "$dir" && "$NPM" ci --no-audit --no-fund --loglevel=error >&2)
  echo "$lock_sum" > "$dir/.installed"
fi
src_sum=$(cd "$HERE" && cat package-lock.json index.html vite.config.js src/* | sha256sum | cut -c1-16)
out="$dir/dist-$src_sum"
if [ ! -f "$out/index.html" ]; then
  echo "== building the chat page into $out (vite build)" >&2
  rm -rf "$dir/index.html" "$dir/vite.config.js" "$dir/src" "$out.tmp"
  cp -r "$HERE/index.html" "$HERE/vite.config.js" "$HERE/src" "$dir/"
  (cd "$dir" && node_modules/.bin/vite build --outDir "$out.tmp" --emptyOutDir >&2)
  mv "$out.tmp" "$out"
fi
echo "$out"
