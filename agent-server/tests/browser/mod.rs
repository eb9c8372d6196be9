//! Headless Chromium for the web page's tests, shared by agent-server's and agent-flows'
//! (which includes this file by path): Debian's `chromium` driven through `chromedriver` on a
//! free port with fantoccini, waits on what the page shows, and screenshots under
//! `target/web-screenshots/`. Missing programs skip a test locally and fail it in CI.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// A child process killed when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A browser session and the chromedriver behind it.
pub struct Browser {
    page: Page,
    _driver: Killed,
}

/// What the steps of a test drive: the session (a `Client` through `Deref`) and the
/// chromedriver it talks to.
#[derive(Clone)]
pub struct Page {
    pub client: Client,
    driver: String,
}

impl std::ops::Deref for Page {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Browser {
    /// A headless session at 1280x800, or None (after saying why) when Chromium or
    /// chromedriver is missing; under `CI` a missing program fails the test instead.
    pub async fn open() -> Option<Browser> {
        let (chromium, driver) = browser_programs()?;
        let (child, port, client) = browser(&chromium, &driver).await;
        let page = Page {
            client,
            driver: format!("http://127.0.0.1:{port}"),
        };
        viewport(&page, 1280, 800).await;
        Some(Browser {
            page,
            _driver: child,
        })
    }

    /// The page the steps drive.
    pub fn page(&self) -> Page {
        self.page.clone()
    }

    /// Runs `steps` on the page, then ends the session (so Chromium exits) even when a
    /// step failed; a failure is raised again after.
    pub async fn run<F>(self, steps: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let result = tokio::spawn(steps).await;
        let _ = self.page.client.clone().close().await;
        if let Err(e) = result {
            std::panic::resume_unwind(e.into_panic());
        }
    }
}

/// The first of `names` found on PATH (or at `env`'s path when set).
fn program(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Chromium and chromedriver, or why not (a skip locally, a failure in CI).
pub fn browser_programs() -> Option<(PathBuf, PathBuf)> {
    let chromium = program(
        "CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    );
    let driver = program("CHROMEDRIVER", &["chromedriver"]);
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            let why = "the web page tests need Chromium and chromedriver: `apt-get install chromium chromium-driver` (Debian), or set CHROMIUM and CHROMEDRIVER";
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// chromedriver on a free port, and a headless session of `chromium` at 1280x800.
pub async fn browser(chromium: &Path, driver: &Path) -> (Killed, u16, Client) {
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", driver.display()));
    let child = Killed(child);
    // chromedriver listens a moment after it starts.
    let mut listening = false;
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            listening = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(listening, "chromedriver never listened on port {port}");
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,800", "--force-prefers-reduced-motion"],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .unwrap_or_else(|e| panic!("no browser session from chromedriver: {e}"));
    (child, port, client)
}

/// Sends a DevTools command through chromedriver's bridge (`goog/cdp/execute`).
pub async fn cdp(page: &Page, cmd: &str, params: Value) {
    let session = page.client.session_id().await.unwrap().unwrap_or_default();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let resp = reqwest::Client::new()
        .post(format!(
            "{}/session/{session}/goog/cdp/execute",
            page.driver
        ))
        .json(&json!({"cmd": cmd, "params": params}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{cmd}: {}", resp.status());
}

/// Sets the page's viewport to exactly `width` x `height` CSS pixels (a headless window
/// cannot be narrower than 500 px, a phone is 360).
pub async fn viewport(page: &Page, width: u32, height: u32) {
    cdp(
        page,
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
    )
    .await;
}

/// Emulates the system's light or dark colour scheme.
pub async fn color_scheme(page: &Page, scheme: &str) {
    cdp(
        page,
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
    )
    .await;
}

pub fn shots_dir() -> PathBuf {
    // target/ beside the workspace's Cargo.toml (CARGO_TARGET_DIR when set).
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("web-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    std::fs::write(shots_dir().join(format!("{name}.png")), png).unwrap();
}

/// Polls `script` (a function body that returns a value) until it returns something truthy;
/// gives up after a minute, showing what the page says.
pub async fn until(c: &Client, what: &str, script: &str) -> Value {
    for _ in 0..600 {
        let v = c.execute(script, vec![]).await.unwrap();
        let truthy = match &v {
            Value::Null | Value::Bool(false) => false,
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::String(s) => !s.is_empty(),
            _ => true,
        };
        if truthy {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = c
        .execute("return document.body.innerText", vec![])
        .await
        .unwrap_or_default();
    panic!("waited a minute for {what}; the page says:\n{text}");
}

pub async fn css(c: &Client, selector: &str) -> fantoccini::elements::Element {
    c.wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css(selector))
        .await
        .unwrap_or_else(|e| panic!("no {selector} on the page: {e}"))
}

/// Clicks the element `selector` finds (waiting for it like [`css`]).
pub async fn click(c: &Client, selector: &str) {
    css(c, selector)
        .await
        .click()
        .await
        .unwrap_or_else(|e| panic!("clicking {selector}: {e}"));
}

/// Types `text` into the element `selector` finds (waiting for it like [`css`]).
pub async fn type_in(c: &Client, selector: &str, text: &str) {
    css(c, selector)
        .await
        .send_keys(text)
        .await
        .unwrap_or_else(|e| panic!("typing into {selector}: {e}"));
}
