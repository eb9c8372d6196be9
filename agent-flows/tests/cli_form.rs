//! The `form` flow through the `agent` binary: a conversation in two processes on one
//! thread, the seed's four traces through `agent chat form` (node by node with `--stream
//! updates`) in Spanish and English, `--form FILE` and its errors, the diagram.

mod common;

use common::{Scratch, run, run_with_stdin};

const NODES: &[&str] = &[
    "check_escalation",
    "check_correction",
    "check_off_topic",
    "extract_field",
    "validate",
    "prompt_next",
    "escalate",
    "complete",
];

/// Each turn of a `chat --stream updates` session: the nodes that ran, then the reply.
fn turns(stdout: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut nodes = Vec::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let first = line.split(' ').next().unwrap_or_default();
        if NODES.contains(&first) {
            nodes.push(first.to_owned());
        } else {
            out.push((std::mem::take(&mut nodes), line.to_owned()));
        }
    }
    out
}

fn nodes(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_conversation_continues_in_a_second_process() {
    let s = Scratch::new("form-thread");
    let first = run(s.agent(&["run", "form", "Mi nombre es Juan", "--thread", "f1"]));
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.stdout.trim(), "¡Encantado, Juan! ¿Cuál es tu email?");
    let second = run(s.agent(&[
        "run",
        "form",
        "juan@ejemplo.com",
        "--thread",
        "f1",
        "--json",
    ]));
    assert_eq!(second.code, 0, "{}", second.stderr);
    let report = second.json();
    assert_eq!(
        report["path"],
        serde_json::json!([
            ["check_escalation"],
            ["check_correction"],
            ["check_off_topic"],
            ["extract_field"],
            ["validate"],
            ["complete"]
        ])
    );
    let conversation = &report["state"]["conversation"];
    assert_eq!(conversation["status"], "completed");
    assert_eq!(conversation["values"]["name"], "Juan");
    assert_eq!(conversation["values"]["email"], "juan@ejemplo.com");
    assert_eq!(conversation["turns"], 2);
    assert_eq!(
        report["response"],
        "¡Gracias, Juan! Ya tenemos todo lo necesario: nombre: Juan; email: juan@ejemplo.com."
    );
    // A third process: the form is complete and keeps its values; the message counts.
    let third = run(s.agent(&["run", "form", "hola otra vez", "--thread", "f1", "--json"]));
    let report = third.json();
    let after = &report["state"]["conversation"];
    for key in ["values", "status", "finished_at", "corrections"] {
        assert_eq!(after[key], conversation[key], "{key}");
    }
    assert_eq!(after["turns"], 3);
    assert!(
        report["response"]
            .as_str()
            .unwrap()
            .starts_with("Tu formulario ya está completo")
    );
    // A fourth: a correction after the summary is applied (seed 001: `check_correction`
    // still runs), and the reply shows the updated summary.
    let fourth = run(s.agent(&[
        "run",
        "form",
        "No, en realidad me llamo Ana Gómez",
        "--thread",
        "f1",
    ]));
    assert_eq!(fourth.code, 0, "{}", fourth.stderr);
    assert_eq!(
        fourth.stdout.trim(),
        "Listo, corregí tu nombre: ahora es Ana Gómez (antes Juan). Tu formulario queda así: nombre: Ana Gómez; email: juan@ejemplo.com."
    );
}

const HAPPY_1: &[&str] = &[
    "check_escalation",
    "check_correction",
    "check_off_topic",
    "extract_field",
    "validate",
    "prompt_next",
];
const HAPPY_2: &[&str] = &[
    "check_escalation",
    "check_correction",
    "check_off_topic",
    "extract_field",
    "validate",
    "complete",
];
const CORRECTION: &[&str] = &[
    "check_escalation",
    "check_correction",
    "extract_field",
    "validate",
    "prompt_next",
];
const OFF_TOPIC: &[&str] = &[
    "check_escalation",
    "check_correction",
    "check_off_topic",
    "prompt_next",
];
const ESCALATION: &[&str] = &["check_escalation", "escalate"];

#[test]
fn the_seeds_traces_through_agent_chat_form() {
    let s = Scratch::new("form-chat");
    let chat = |thread: &str, extra: &[&str], input: &str| {
        let mut args = vec!["chat", "form", "--thread", thread, "--stream", "updates"];
        args.extend_from_slice(extra);
        let out = run_with_stdin(s.agent(&args), input.as_bytes());
        assert_eq!(out.code, 0, "{}", out.stderr);
        turns(&out.stdout)
    };

    // Happy path, Spanish then English.
    let t = chat(
        "happy-es",
        &[],
        "Mi nombre es Juan\njuan@ejemplo.com\n/exit\n",
    );
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!(
        (t[0].0.clone(), t[0].1.as_str()),
        (nodes(HAPPY_1), "¡Encantado, Juan! ¿Cuál es tu email?")
    );
    assert_eq!(t[1].0, nodes(HAPPY_2));
    assert!(t[1].1.starts_with("¡Gracias, Juan!"), "{}", t[1].1);
    let t = chat("happy-en", &[], "My name is John\njohn@example.com\n");
    assert_eq!(
        (t[0].0.clone(), t[1].0.clone()),
        (nodes(HAPPY_1), nodes(HAPPY_2))
    );
    assert!(t[1].1.starts_with("Thank you, John!"), "{}", t[1].1);

    // Correction, on the three-field form.
    for (thread, input, reply) in [
        (
            "fix-es",
            "Mi nombre es Juan\njuan@ejemplo.com\nNo, mi email es juan.nuevo@ejemplo.com\n",
            "Listo, corregí tu email: ahora es juan.nuevo@ejemplo.com (antes juan@ejemplo.com). ¿Cuál es tu número de teléfono?",
        ),
        (
            "fix-en",
            "My name is John\njohn@example.com\nNo, my email is john.new@example.com\n",
            "Done, I've corrected your email: it is now john.new@example.com (it was john@example.com). What is your phone number?",
        ),
    ] {
        let t = chat(thread, &["--form", "contact"], input);
        assert_eq!(t.len(), 3, "{t:?}");
        assert_eq!(t[2].0, nodes(CORRECTION));
        assert_eq!(t[2].1, reply);
    }

    // Off topic, then escalation, on one thread each language.
    for (thread, input, redirect, handover) in [
        (
            "other-es",
            "¿Cómo está el clima?\nNecesito hablar con un humano\n",
            "¿Cuál es tu nombre?",
            "Entendido, te paso con una persona.",
        ),
        (
            "other-en",
            "What's the weather like?\nI need to talk to a human\n",
            "What is your name?",
            "Understood, I'll put you through to a person.",
        ),
    ] {
        let t = chat(thread, &[], input);
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(t[0].0, nodes(OFF_TOPIC));
        assert!(t[0].1.ends_with(redirect), "{}", t[0].1);
        assert_eq!(t[1].0, nodes(ESCALATION));
        assert!(t[1].1.starts_with(handover), "{}", t[1].1);
    }
}

#[test]
fn form_files_and_their_errors() {
    let s = Scratch::new("form-file");
    let good = s.path("club.toml");
    std::fs::write(
        &good,
        "name = \"club\"\nlanguage = \"es\"\n[[fields]]\nname = \"age\"\ntype = \"number\"\nlabel = { es = \"edad\", en = \"age\" }\n",
    )
    .unwrap();
    let out = run(s.agent(&[
        "run",
        "form",
        "tengo treinta y cinco",
        "--form",
        good.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["state"]["conversation"]["form"], "club");
    assert_eq!(report["state"]["conversation"]["values"]["age"], "35");

    let bad = s.path("bad.json");
    std::fs::write(&bad, r#"{"fields": [{"name": "email", "type": "mail"}]}"#).unwrap();
    let out = run(s.agent(&["run", "form", "hola", "--form", bad.to_str().unwrap()]));
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(
            "field 1 (`email`): unknown type `mail`; use email, phone, url, number or text"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn the_graph_is_the_seeds() {
    let s = Scratch::new("form-graph");
    let out = run(s.agent(&["graph", "form", "--ascii"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for edge in [
        "check_escalation -.-> escalate  [if escalate]",
        "check_correction -.-> extract_field  [if extract_field]",
        "check_off_topic -.-> complete  [if complete]",
        "check_off_topic -.-> extract_field  [if extract_field]",
        "check_off_topic -.-> prompt_next  [if prompt_next]",
        "validate -.-> complete  [if complete]",
    ] {
        assert!(out.stdout.contains(edge), "{edge}\n{}", out.stdout);
    }
}
