//! The API's contract: `/openapi.json` is the document generated from the handlers' types,
//! `/docs` shows it without the network, and every operation and request property of
//! langgraph-api 0.16.7's own `openapi.json` is ours too or named, with the reason, in
//! `agent-server/openapi/not-served.toml` (printed in the README by `cargo xtask codegen`).
//!
//! langgraph-api's document ships in its wheel on PyPI; the comparison downloads the wheel
//! once (into `~/.cache/agentgraph`, or `$AGENTGRAPH_CACHE`) with a venv's pip and reads the
//! document from it. Without Python and outside CI the comparison is skipped with a note.

mod common;
#[allow(dead_code)]
#[path = "../examples/reference/graphs.rs"]
mod graphs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::Value;

use common::served::Served;

const LANGGRAPH_API: &str = "0.16.7";

/// The checked-in list of what of langgraph-api's document we do not serve.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotServed {
    #[serde(default)]
    operation: Vec<Operation>,
    #[serde(default)]
    property: Vec<Property>,
}

/// An operation of theirs that is not ours.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Operation {
    method: String,
    path: String,
    reason: String,
}

/// A request property (body field, query or header parameter) of one of their operations
/// that ours does not take.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Property {
    method: String,
    path: String,
    name: String,
    reason: String,
}

fn root() -> PathBuf {
    xtask::sourcegen::project_root()
}

fn not_served() -> NotServed {
    let path = root().join("agent-server/openapi/not-served.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ours() -> Value {
    serde_json::to_value(agent_server::openapi()).unwrap()
}

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// `(METHOD, path)` of every operation of a document.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in METHODS {
            if item.get(method).is_some() {
                out.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

/// The schema `s`, its `$ref`s followed.
fn resolve<'a>(doc: &'a Value, mut s: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let Some(r) = s.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let name = r.rsplit('/').next().unwrap();
        s = &doc["components"]["schemas"][name];
    }
    s
}

/// The property names a request schema accepts (through `$ref`, `allOf`, `anyOf`, `oneOf`
/// and an array's items).
fn property_names(doc: &Value, s: &Value, out: &mut BTreeSet<String>, depth: usize) {
    if depth > 16 {
        return;
    }
    let s = resolve(doc, s);
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        out.extend(props.keys().cloned());
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for part in s.get(key).and_then(Value::as_array).into_iter().flatten() {
            property_names(doc, part, out, depth + 1);
        }
    }
    if let Some(items) = s.get("items") {
        property_names(doc, items, out, depth + 1);
    }
}

/// What an operation takes: its body's properties, and its query and header parameters.
fn request_properties(doc: &Value, method: &str, path: &str) -> BTreeSet<String> {
    let op = &doc["paths"][path][method.to_lowercase()];
    let mut out = BTreeSet::new();
    for p in op["parameters"].as_array().into_iter().flatten() {
        if matches!(p["in"].as_str(), Some("query" | "header")) {
            out.insert(p["name"].as_str().unwrap().to_owned());
        }
    }
    if let Some(content) = op["requestBody"]["content"].as_object() {
        for media in content.values() {
            property_names(doc, &media["schema"], &mut out, 0);
        }
    }
    out
}

/// langgraph-api's document, from its wheel (downloaded once); `None` where it cannot be
/// had outside CI.
fn theirs() -> Option<Value> {
    let cache = std::env::var_os("AGENTGRAPH_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/agentgraph")))
        .unwrap();
    let dir = cache.join(format!("langgraph-api-{LANGGRAPH_API}"));
    let file = dir.join("openapi.json");
    if !file.exists() {
        let fetched = fetch(&dir, &file);
        if let Err(e) = fetched {
            if std::env::var_os("CI").is_some() {
                panic!("could not get langgraph-api {LANGGRAPH_API}'s openapi.json: {e}");
            }
            eprintln!("skipped the comparison with langgraph-api's openapi.json: {e}");
            return None;
        }
    }
    Some(serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap())
}

/// Downloads langgraph-api's wheel (no dependencies) with a venv's pip and writes its
/// `openapi.json` to `file`.
fn fetch(dir: &Path, file: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let venv = dir.join("venv");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    if !venv.join("bin/pip").exists() {
        run(Command::new(&python).arg("-m").arg("venv").arg(&venv))?;
    }
    let wheels = dir.join("wheel");
    run(Command::new(venv.join("bin/pip"))
        .args([
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .arg(format!("langgraph-api=={LANGGRAPH_API}"))
        .arg("-d")
        .arg(&wheels))?;
    let extract = "import glob, zipfile, sys\n\
         wheel = glob.glob(sys.argv[1] + '/langgraph_api-*.whl')[0]\n\
         open(sys.argv[2], 'wb').write(zipfile.ZipFile(wheel).read('openapi.json'))\n";
    run(Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(extract)
        .arg(&wheels)
        .arg(file))
}

#[tokio::test]
async fn the_document_and_the_page_are_served() {
    let server = Served::start(graphs::server()).await;
    let (status, doc) = server.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc, ours());
    assert_eq!(doc["openapi"].as_str().map(|v| &v[..2]), Some("3."));
    assert!(operations(&doc).contains(&(
        "POST".to_owned(),
        "/threads/{thread_id}/runs/stream".to_owned()
    )));

    let page = reqwest::get(server.url("/docs")).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("/openapi.json"));
    // Nothing from the network: no script, style or font from another host.
    for attr in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(
            !html.contains(attr),
            "/docs loads something from elsewhere ({attr})"
        );
    }
}

/// Every operation and request property of langgraph-api's is ours, or listed with the
/// reason; nothing listed is served after all.
#[test]
fn every_operation_of_langgraph_api_is_ours_or_listed() {
    let Some(theirs) = theirs() else {
        return;
    };
    let ours = ours();
    let list = not_served();
    let listed_ops: BTreeSet<(String, String)> = list
        .operation
        .iter()
        .map(|o| (o.method.clone(), o.path.clone()))
        .collect();
    let listed_props: BTreeSet<(String, String, String)> = list
        .property
        .iter()
        .map(|p| (p.method.clone(), p.path.clone(), p.name.clone()))
        .collect();
    let our_ops = operations(&ours);
    let mut problems = Vec::new();
    for (method, path) in operations(&theirs) {
        let key = (method.clone(), path.clone());
        let served = our_ops.contains(&key);
        match (served, listed_ops.contains(&key)) {
            (false, false) => problems.push(format!(
                "{method} {path}: langgraph-api serves it; serve it, or list it in not-served.toml with the reason"
            )),
            (true, true) => problems.push(format!(
                "{method} {path}: served, but listed as not served: take it off the list"
            )),
            _ => {}
        }
        if !served {
            continue;
        }
        let mine = request_properties(&ours, &method, &path);
        for name in request_properties(&theirs, &method, &path) {
            let key = (method.clone(), path.clone(), name.clone());
            match (mine.contains(&name), listed_props.contains(&key)) {
                (false, false) => problems.push(format!(
                    "{method} {path}: `{name}` is taken by langgraph-api; take it, or list it with the reason"
                )),
                (true, true) => problems.push(format!(
                    "{method} {path}: `{name}` is taken, but listed as not: take it off the list"
                )),
                _ => {}
            }
        }
    }
    for o in &list.operation {
        if !operations(&theirs).contains(&(o.method.clone(), o.path.clone())) {
            problems.push(format!(
                "{} {}: listed, but not langgraph-api's",
                o.method, o.path
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// The README's list of what langgraph-api serves and we do not, from not-served.toml.
fn not_served_markdown() -> String {
    let list = not_served();
    let mut out = String::new();
    out.push_str("<!-- not-served:start (generated by `cargo xtask codegen` from agent-server/openapi/not-served.toml) -->\n");
    let mut ops: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for o in &list.operation {
        ops.entry(o.reason.as_str())
            .or_default()
            .push(format!("`{} {}`", o.method, o.path));
    }
    for (reason, names) in ops {
        out.push_str(&format!("- {}: {reason}\n", names.join(", ")));
    }
    for p in &list.property {
        out.push_str(&format!(
            "- `{}` of `{} {}`: {}\n",
            p.name, p.method, p.path, p.reason
        ));
    }
    if list.operation.is_empty() && list.property.is_empty() {
        out.push_str(&format!(
            "- none: every operation and request field of langgraph-api {LANGGRAPH_API}'s document is served\n"
        ));
    }
    out.push_str("<!-- not-served:end -->");
    out
}

#[test]
fn codegen_readme_not_served_list() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme
        .find("<!-- not-served:start")
        .expect("README.md has a `<!-- not-served:start -->` … `<!-- not-served:end -->` block in its differences section");
    let end = readme[start..].find("<!-- not-served:end -->").unwrap()
        + start
        + "<!-- not-served:end -->".len();
    let wanted = format!(
        "{}{}{}",
        &readme[..start],
        not_served_markdown(),
        &readme[end..]
    );
    xtask::sourcegen::ensure_file_in(xtask::sourcegen::Mode::from_env(), &path, &wanted)
        .unwrap_or_else(|e| panic!("{e}"));
}
