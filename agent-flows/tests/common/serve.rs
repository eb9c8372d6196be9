//! `agent serve` as a test runs it: the built binary on a free port in a scratch directory,
//! its URL read from its first line, killed when dropped; and a start that must fail.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use super::Scratch;

/// A running `agent serve`.
pub struct Served {
    pub child: Child,
    pub url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `agent serve --port 0 EXTRA`, once it listens.
pub fn serve(s: &Scratch, extra: &[&str]) -> Served {
    serve_with(s, extra, &[])
}

/// [`serve`] with environment variables set for the server.
pub fn serve_with(s: &Scratch, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let mut args = vec!["serve", "--port", "0"];
    args.extend_from_slice(extra);
    let mut agent = s.agent(&args);
    agent.envs(env.iter().copied());
    let mut child = agent.stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    // Keep reading what the server writes, so its stderr never closes under it.
    std::thread::spawn(move || {
        let mut sink = String::new();
        while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    Served { child, url }
}

/// An HTTP client (with the TLS provider installed).
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// `agent serve ARGS` exits with an error within seconds; its stderr.
pub fn fails_to_start(s: &Scratch, args: &[&str]) -> String {
    let mut all = vec!["serve", "--port", "0"];
    all.extend_from_slice(args);
    let mut child = s
        .agent(&all)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("agent serve {args:?} started; it should have refused to");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "{args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}
