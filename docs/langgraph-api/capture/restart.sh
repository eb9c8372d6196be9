#!/bin/bash
# restarts langgraph dev on port 2099 with a clean in-memory state
cd "$(dirname "$0")"
[ -f server.pid ] && kill -- -$(cat server.pid) 2>/dev/null; sleep 2
rm -rf .langgraph_api
export LANGSMITH_TRACING=false LANGGRAPH_NO_ANALYTICS=1
(setsid ./venv/bin/langgraph dev --no-browser --port 2099 --n-jobs-per-worker 10 --no-reload "$@" > server.log 2>&1 & echo $! > server.pid)
for i in $(seq 40); do curl -s -m2 localhost:2099/ok && break; sleep 1; done; echo
