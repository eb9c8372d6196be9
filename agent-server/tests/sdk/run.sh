#!/usr/bin/env bash
# Runs the LangGraph SDK conformance checks (python langgraph-sdk and JS @langchain/langgraph-sdk)
# against a server at URL. Installs the SDKs on first use into a cache dir:
#   ${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}/sdk-py-<version>   (venv with langgraph-sdk only)
#   ${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}/sdk-js-<version>   (npm ci from the committed lock)
# Usage: run.sh URL [extra args for both scripts, e.g. --serial, --only a,b, --api-key K]
# Env: SDK_CHECK_LANGS="py js" (default both), SDK_CHECK_SCRIPT (default sdk_check: the
# conformance checks; auth_check: two JWT users against `agent serve`), PYTHON (default
# python3), NPM (default npm).
# Exit status: non-zero if either script failed (or could not be installed).
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 URL [--serial] [--only a,b] [--timeout S] [--api-key K]" >&2
  exit 2
fi
URL=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}
LANGS=${SDK_CHECK_LANGS:-py js}
SCRIPT=${SDK_CHECK_SCRIPT:-sdk_check}
PYTHON=${PYTHON:-python3}
NPM=${NPM:-npm}
mkdir -p "$CACHE"

install_py() {
  local ver dir
  ver=$(sed -n 's/^langgraph-sdk==//p' "$HERE/python/requirements.txt")
  dir="$CACHE/sdk-py-$ver"
  if [ ! -f "$dir/.installed" ]; then
    echo "== installing langgraph-sdk $ver into $dir" >&2
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir" >&2 &&
      "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/python/requirements.txt" >&2 &&
      touch "$dir/.installed" || { echo "could not install langgraph-sdk $ver" >&2; return 1; }
  fi
  PY_DIR=$dir
}

install_js() {
  local ver dir lock_sum
  ver=$(node -p "require('$HERE/js/package-lock.json').packages['node_modules/@langchain/langgraph-sdk'].version") || return 1
  dir="$CACHE/sdk-js-$ver"
  lock_sum=$(sha256sum "$HERE/js/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$lock_sum" ]; then
    echo "== installing @langchain/langgraph-sdk $ver into $dir (npm ci)" >&2
    rm -rf "$dir"
    mkdir -p "$dir" &&
      cp "$HERE/js/package.json" "$HERE/js/package-lock.json" "$dir/" &&
      (cd "$dir" && "$NPM" ci --no-audit --no-fund --loglevel=error >&2) &&
      echo "$lock_sum" > "$dir/.installed" || { echo "could not install @langchain/langgraph-sdk $ver" >&2; return 1; }
  fi
  # ESM resolves imports next to the script, so the script runs from the install dir
  cp "$HERE/js/$SCRIPT.mjs" "$dir/$SCRIPT.mjs" || return 1
  JS_DIR=$dir
}

status=0
for lang in $LANGS; do
  case $lang in
    py)
      echo "== python langgraph-sdk checks against $URL"
      if install_py; then
        "$PY_DIR/bin/python" "$HERE/python/$SCRIPT.py" "$URL" "$@" || status=1
      else
        echo "FAIL python: install"
        status=1
      fi
      ;;
    js)
      echo "== JS @langchain/langgraph-sdk checks against $URL"
      if install_js; then
        node "$JS_DIR/$SCRIPT.mjs" "$URL" "$@" || status=1
      else
        echo "FAIL js: install"
        status=1
      fi
      ;;
    *)
      echo "unknown language in SDK_CHECK_LANGS: $lang" >&2
      status=2
      ;;
  esac
done
exit $status
