//! One conformance suite for every checkpointer: the same test code, three backends.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_core::checkpoint::{
    CheckpointRecord, Checkpointer, FieldBlob, ListFilter, PendingWrite, WriteKind,
};
use serde_json::json;

fn record(
    thread: &str,
    id: &str,
    parent: Option<&str>,
    step: i64,
    source: &str,
    versions: &[(&str, &str)],
) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.to_owned(),
        ns: String::new(),
        id: id.to_owned(),
        parent_id: parent.map(str::to_owned),
        step,
        created_at_ms: 1_700_000_000_000 + step,
        metadata: json!({"source": source, "step": step, "user": "ada"}),
        versions: versions
            .iter()
            .map(|(f, v)| (f.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        body: vec![1, 2, 3, step as u8],
    }
}

fn blob(field: &str, version: &str, base: Option<(&str, u64)>, data: &[u8]) -> FieldBlob {
    FieldBlob {
        field: field.to_owned(),
        version: version.to_owned(),
        base: base.map(|(b, n)| (b.to_owned(), n)),
        data: data.to_vec(),
    }
}

/// Ids sort by time like uuid v7 strings do.
fn id(n: u32) -> String {
    format!("0190{n:04}-0000-7000-8000-000000000000")
}

async fn put_get_list(name: &str, saver: &Arc<dyn Checkpointer>) {
    let thread = common::unique("conf");
    assert!(
        saver.get(&thread, "", None).await.unwrap().record.is_none(),
        "{name}"
    );
    let (a, b, c) = (id(1), id(2), id(3));
    saver
        .put(&record(&thread, &a, None, -1, "input", &[]), &[])
        .await
        .unwrap();
    saver
        .put(
            &record(&thread, &b, Some(&a), 0, "loop", &[("messages", &b)]),
            &[blob("messages", &b, None, b"full")],
        )
        .await
        .unwrap();
    saver
        .put(
            &record(
                &thread,
                &c,
                Some(&b),
                1,
                "loop",
                &[("messages", &c), ("count", &c)],
            ),
            &[
                blob("messages", &c, Some((&b, 1)), b"delta"),
                blob("count", &c, None, b"7"),
            ],
        )
        .await
        .unwrap();

    let latest = saver.get(&thread, "", None).await.unwrap();
    let r = latest.record.expect("latest");
    assert_eq!(r.id, c, "{name}");
    assert_eq!(r.parent_id.as_deref(), Some(b.as_str()));
    assert_eq!(r.metadata["source"], "loop");
    assert_eq!(r.body, vec![1, 2, 3, 1]);
    // The delta's base comes along.
    let mut keys: Vec<(String, String)> = latest
        .blobs
        .iter()
        .map(|b| (b.field.clone(), b.version.clone()))
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![
            ("count".into(), c.clone()),
            ("messages".into(), b.clone()),
            ("messages".into(), c.clone())
        ],
        "{name}"
    );
    let by_id = saver.get(&thread, "", Some(&a)).await.unwrap();
    assert_eq!(by_id.record.unwrap().step, -1);
    assert!(
        saver
            .get(&thread, "", Some("nope"))
            .await
            .unwrap()
            .record
            .is_none()
    );

    let all = saver
        .list(&thread, "", &ListFilter::default())
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        vec![c.clone(), b.clone(), a.clone()],
        "{name}"
    );
    let before = saver
        .list(
            &thread,
            "",
            &ListFilter {
                before: Some(c.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(before.len(), 2);
    let limited = saver
        .list(
            &thread,
            "",
            &ListFilter {
                limit: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(limited[0].id, c);
    let inputs = saver
        .list(
            &thread,
            "",
            &ListFilter {
                metadata: BTreeMap::from([("source".to_owned(), json!("input"))]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(inputs.len(), 1, "{name}");
    assert_eq!(inputs[0].id, a);
    let none = saver
        .list(
            &thread,
            "",
            &ListFilter {
                metadata: BTreeMap::from([("user".to_owned(), json!("bob"))]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(none.is_empty(), "{name}");
    // Namespaces are separate.
    assert!(
        saver
            .get(&thread, "sub", None)
            .await
            .unwrap()
            .record
            .is_none()
    );
}

async fn writes_replace_and_belong_to_a_checkpoint(name: &str, saver: &Arc<dyn Checkpointer>) {
    let thread = common::unique("writes");
    let cp = id(10);
    saver
        .put(&record(&thread, &cp, None, 0, "loop", &[]), &[])
        .await
        .unwrap();
    let w = |task: &str, kind, data: &[u8]| PendingWrite {
        task_id: task.to_owned(),
        node: "n".to_owned(),
        kind,
        data: data.to_vec(),
    };
    saver
        .put_writes(&thread, "", &cp, &[w("t1", WriteKind::Output, b"a")])
        .await
        .unwrap();
    saver
        .put_writes(
            &thread,
            "",
            &cp,
            &[
                w("t2", WriteKind::Interrupt, b"i"),
                w("t2", WriteKind::Resume, b"r1"),
            ],
        )
        .await
        .unwrap();
    saver
        .put_writes(&thread, "", &cp, &[w("t2", WriteKind::Resume, b"r2")])
        .await
        .unwrap();
    let loaded = saver.get(&thread, "", None).await.unwrap();
    let mut got: Vec<(String, WriteKind, Vec<u8>)> = loaded
        .writes
        .iter()
        .map(|w| (w.task_id.clone(), w.kind, w.data.clone()))
        .collect();
    got.sort_by_key(|a| (a.0.clone(), a.1.code()));
    assert_eq!(
        got,
        vec![
            ("t1".into(), WriteKind::Output, b"a".to_vec()),
            ("t2".into(), WriteKind::Interrupt, b"i".to_vec()),
            ("t2".into(), WriteKind::Resume, b"r2".to_vec()),
        ],
        "{name}"
    );
    // A newer checkpoint has no writes.
    saver
        .put(&record(&thread, &id(11), Some(&cp), 1, "loop", &[]), &[])
        .await
        .unwrap();
    assert!(
        saver
            .get(&thread, "", None)
            .await
            .unwrap()
            .writes
            .is_empty()
    );
}

async fn delete_and_prune(name: &str, saver: &Arc<dyn Checkpointer>) {
    let thread = common::unique("prune");
    let other = common::unique("keep");
    let mut parent: Option<String> = None;
    for n in 0..6u32 {
        let cp = id(100 + n);
        // messages grows by delta on the previous version; count is rewritten each time.
        let base = parent.clone();
        let blobs = vec![
            blob(
                "messages",
                &cp,
                base.as_deref().map(|b| (b, n as u64)),
                format!("m{n}").as_bytes(),
            ),
            blob("count", &cp, None, &[n as u8]),
        ];
        let blobs = if n == 0 {
            vec![
                blob("messages", &cp, None, b"m0"),
                blob("count", &cp, None, &[0]),
            ]
        } else {
            blobs
        };
        saver
            .put(
                &record(
                    &thread,
                    &cp,
                    parent.as_deref(),
                    n as i64,
                    "loop",
                    &[("messages", &cp), ("count", &cp)],
                ),
                &blobs,
            )
            .await
            .unwrap();
        parent = Some(cp);
    }
    saver
        .put(&record(&other, &id(1), None, 0, "loop", &[]), &[])
        .await
        .unwrap();

    let deleted = saver.prune(&thread, "", 2).await.unwrap();
    assert_eq!(deleted, 4, "{name}");
    let left = saver
        .list(&thread, "", &ListFilter::default())
        .await
        .unwrap();
    assert_eq!(left.len(), 2);
    // The newest still loads with its whole delta chain, though older checkpoints are gone.
    let latest = saver.get(&thread, "", None).await.unwrap();
    let messages = latest
        .blobs
        .iter()
        .filter(|b| b.field == "messages")
        .count();
    assert_eq!(messages, 6, "{name}: delta chain kept");
    let counts = latest.blobs.iter().filter(|b| b.field == "count").count();
    assert_eq!(counts, 1, "{name}");
    assert_eq!(saver.prune(&thread, "", 2).await.unwrap(), 0);

    saver.delete_thread(&thread).await.unwrap();
    assert!(
        saver.get(&thread, "", None).await.unwrap().record.is_none(),
        "{name}"
    );
    assert!(
        saver
            .list(&thread, "", &ListFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        saver.get(&other, "", None).await.unwrap().record.is_some(),
        "{name}: other thread kept"
    );
}

async fn concurrent_writers(name: &str, saver: &Arc<dyn Checkpointer>) {
    let thread = common::unique("concurrent");
    let mut handles = Vec::new();
    for w in 0..8u32 {
        let saver = saver.clone();
        let thread = thread.clone();
        handles.push(tokio::spawn(async move {
            for n in 0..10u32 {
                let cp = id(1000 + w * 100 + n);
                saver
                    .put(
                        &record(&thread, &cp, None, n as i64, "loop", &[("f", &cp)]),
                        &[blob("f", &cp, None, &[w as u8, n as u8])],
                    )
                    .await
                    .unwrap();
                saver
                    .put_writes(
                        &thread,
                        "",
                        &cp,
                        &[PendingWrite {
                            task_id: format!("t{w}"),
                            node: "n".into(),
                            kind: WriteKind::Output,
                            data: vec![1],
                        }],
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let all = saver
        .list(&thread, "", &ListFilter::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 80, "{name}");
    let latest = saver.get(&thread, "", None).await.unwrap();
    assert_eq!(latest.record.unwrap().id, id(1000 + 7 * 100 + 9));
    assert_eq!(latest.blobs.len(), 1);
    assert_eq!(latest.writes.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance() {
    for (name, saver) in common::backends().await {
        assert_eq!(saver.backend(), name);
        put_get_list(name, &saver).await;
        writes_replace_and_belong_to_a_checkpoint(name, &saver).await;
        delete_and_prune(name, &saver).await;
        concurrent_writers(name, &saver).await;
    }
}

#[tokio::test]
async fn sqlite_file_is_shared_by_two_savers() {
    let path = common::sqlite_path();
    let a = agent_core::SqliteSaver::open(&path).unwrap();
    let b = agent_core::SqliteSaver::open(&path).unwrap();
    a.put(&record("t", &id(1), None, 0, "loop", &[]), &[])
        .await
        .unwrap();
    assert!(b.get("t", "", None).await.unwrap().record.is_some());
}
