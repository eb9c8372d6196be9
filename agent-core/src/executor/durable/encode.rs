//! Encoding a run's position as a checkpoint: the blobs of the fields written since the last
//! one (new elements only for a field only appended to), the table of shared values, and the
//! body (next tasks, pending sends, joins, writers), written straight into MessagePack.

use std::sync::Arc;

use crate::checkpoint::codec::{self, FieldCache};
use crate::checkpoint::interning;
use crate::checkpoint::msgpack;
use crate::checkpoint::{CheckpointMetadata, CheckpointRecord, FieldBlob, Source, StoreOp};
use crate::command::SendArg;
use crate::compiled::Graph;
use crate::config::Durability;
use crate::constants::START;
use crate::error::GraphError;
use crate::node_input::AnyInput;
use crate::state::{FieldSet, GraphState};
use crate::stream::{DebugEvent, StreamMode, StreamPart};

use super::super::Run;
use super::super::algo::{FROM_START, Frontier, Task};
use super::Encoded;
use super::ids::now_ms;
use super::task_writes::state_to_update;

impl<S: GraphState> Run<'_, S> {
    /// The checkpoint of the run's position, and the run moved onto it. Its next tasks are
    /// the frontier's, or the tasks taken from it when the next step has `started`.
    pub(super) fn encode_checkpoint(
        &mut self,
        source: Source,
        writes: Option<serde_json::Value>,
        written: FieldSet,
        writers: &[usize],
        started: Option<&[Task<S>]>,
    ) -> Result<Option<Encoded<S>>, GraphError> {
        let Some(durable) = &mut self.durable else {
            return Ok(None);
        };
        // The parent is the last checkpoint (taken below, when this one replaces it), or the
        // one planned with this id.
        let (id, created_at_ms, planned_parent) = match durable.planned.take() {
            Some((id, parent)) => (id, now_ms(), Some(parent)),
            None => {
                let (id, ms) = crate::ids::new_shared_id_at();
                (id, ms, None)
            }
        };
        // Nothing later compares against the run's last checkpoint (with `Exit` its only one;
        // otherwise the one after which nothing is triggered): its fields' encodings move
        // into their blobs instead of being copied for a cache (a run that resumes the thread
        // rebuilds its caches from the stored blobs).
        let keep_caches = durable.durability != Durability::Exit
            && (started.is_some() || !self.frontier.is_empty());
        let mut interner = std::mem::take(&mut durable.interner);
        // The version of every blob written here, shared by their entries and caches.
        let version = id.clone();
        let blobs = interning::encoding(&mut interner, || {
            self.encode_fields(written, &version, keep_caches)
        })
        .and_then(|mut blobs| {
            // The table of shared values has the last compression hint, after the fields'.
            let hint = &self.graph.compress_hints[S::fields().len()];
            blobs.extend(
                interner
                    .take_blob(&version)?
                    .map(|blob| codec::compressed(blob, hint)),
            );
            Ok(blobs)
        });
        if blobs.is_err() {
            interner.discard_fresh();
        }
        let shared_version = interner.version().cloned();
        let Some(durable) = &mut self.durable else {
            return Ok(None);
        };
        durable.interner = interner;
        let blobs = blobs.map_err(|e| durable.encode_error(e))?;
        durable.rewritten = FieldSet::EMPTY;
        let next = match started {
            Some(tasks) => Next::Started(tasks),
            None => Next::Frontier(&self.frontier),
        };
        let body = encode_body(
            self.graph,
            next,
            &self.frontier.joins,
            durable.pending_input.is_some(),
            writers,
        )
        .map_err(|e| durable.encode_error(e))?;
        let metadata = CheckpointMetadata {
            source: Some(source),
            step: Some(self.step),
            run_id: Some(self.info.run_id.clone()),
            parents: Default::default(),
            writes,
            extra: self.info.config.metadata.clone(),
        };
        let versions = self
            .graph
            .fields
            .versions(&durable.versions, shared_version.as_ref());
        let previous = durable.checkpoint_id.replace(id.clone());
        let parent_id = planned_parent.unwrap_or(previous);
        let record = CheckpointRecord {
            thread_id: durable.thread_id.clone(),
            ns: durable.ns.clone(),
            id,
            parent_id,
            step: self.step,
            created_at_ms,
            metadata,
            versions,
            body,
        };
        durable.clear_step();
        let event = self.streams(StreamMode::Debug).then(|| {
            StreamPart::Debug(DebugEvent::Checkpoint {
                step: self.step,
                checkpoint_id: record.id.to_string(),
                next: self.frontier.next_names(self.graph),
            })
        });
        Ok(Some((StoreOp::Checkpoint { record, blobs }, event)))
    }

    /// The blobs of the fields written since the last checkpoint (new elements only for a
    /// field only appended to; large ones compressed when that pays), each field's cache and
    /// version moved onto `id`.
    fn encode_fields(
        &mut self,
        written: FieldSet,
        version: &Arc<str>,
        keep_caches: bool,
    ) -> Result<Vec<FieldBlob>, String> {
        let Some(durable) = &mut self.durable else {
            return Ok(Vec::new());
        };
        let fields = S::fields();
        let mut blobs = Vec::new();
        if written.is_empty() {
            return Ok(blobs);
        }
        for index in written.iter() {
            let field = fields[index].name;
            let cache = &mut durable.caches[index];
            // Only appended to since its stored version: encode the new elements alone.
            let appended = match cache.as_mut() {
                Some(previous) if !durable.rewritten.contains(index) => {
                    match previous.array_len().map(|skip| {
                        self.state
                            .serialize_field(index, codec::TailSerializer { skip })
                    }) {
                        Some(Ok(tail)) => codec::append_blob(field, version, tail, previous).ok(),
                        _ => None,
                    }
                }
                _ => None,
            };
            let blob = match appended {
                Some(blob) => blob,
                None => {
                    // Sized from the stored version when there is one.
                    let size = cache
                        .as_ref()
                        .and_then(|c| c.encoded_len())
                        .map_or(0, |len| len + len / 8 + 16);
                    let mut bytes = cache
                        .as_mut()
                        .map(FieldCache::take_buffer)
                        .filter(|spare| spare.capacity() > 0)
                        .unwrap_or_default();
                    bytes.reserve(size);
                    self.state
                        .serialize_field(index, &mut msgpack::Packer::named(&mut bytes))
                        .map_err(|e| format!("encoding field `{field}`: {e}"))?;
                    codec::make_blob(field, version, bytes, cache, keep_caches)
                }
            };
            if let Some(blob) = blob {
                durable.versions[index] = Some(version.clone());
                // Large ones stored compressed when that pays, tried as the field's hint says.
                blobs.push(codec::compressed(blob, &self.graph.compress_hints[index]));
            }
        }
        Ok(blobs)
    }
}

/// The body of a checkpoint at a run's position, written straight into MessagePack: the
/// bytes `codec::Body` reads (what serde writes for it, a map by field name), without
/// collecting names into vectors first. `writers` are node indices, in any order, repeated
/// or not.
fn encode_body<S: GraphState>(
    graph: &Graph<S>,
    next: Next<'_, S>,
    joins: &[Vec<bool>],
    pending_input: bool,
    writers: &[usize],
) -> Result<Vec<u8>, String> {
    let name = |n: usize| -> &str {
        match n {
            FROM_START => START,
            n => &graph.names[n],
        }
    };
    // Each `Send`: its node, its payload's bytes, and whether it is a node's own input.
    let mut sends = Vec::new();
    let mut send = |node: usize, payload: Payload<'_, S>| {
        let (bytes, input) = match payload {
            Payload::State(state) => (
                interning::encode_with_table(&state_to_update(state), None)?,
                false,
            ),
            Payload::Input(input) => (input.encode()?, true),
        };
        sends.push((node, bytes, input));
        Ok::<_, String>(())
    };
    // Edge-triggered nodes in name order (their run order): started tasks are in it already.
    let mut pulls = Pulls::default();
    match next {
        Next::Frontier(frontier) => {
            for (node, arg) in &frontier.pushes {
                send(*node, Payload::of(arg))?;
            }
            in_rank_order(&frontier.pulls, &graph.rank, |n| pulls.push(n));
        }
        Next::Started(tasks) => {
            for task in tasks {
                match &task.input {
                    Some(arg) => send(task.node, Payload::of(arg))?,
                    None => pulls.push(task.node),
                }
            }
        }
    }
    let pulls = pulls.as_slice();
    let input_sends = sends.iter().filter(|(_, _, input)| *input).count();
    let fields = S::fields();
    let unique = |i: usize| !writers[..i].contains(&writers[i]);
    // Room for everything: one allocation.
    let size = 96
        + fields.iter().map(|f| f.name.len() + 2).sum::<usize>()
        + pulls
            .iter()
            .chain(writers)
            .map(|&n| name(n).len() + 2)
            .sum::<usize>()
        + sends
            .iter()
            .map(|(n, b, _)| name(*n).len() + b.len() + 8)
            .sum::<usize>()
        + joins.iter().map(|j| j.len() + 3).sum::<usize>();
    let mut bytes = Vec::with_capacity(size);
    let mut out = msgpack::Packer::named(&mut bytes);
    out.map_len(7);
    out.str("format");
    out.uint(u64::from(codec::FORMAT));
    // The input first, then edge-triggered nodes in name order (their run order).
    out.str("next");
    out.array_len(usize::from(pending_input) + pulls.len());
    if pending_input {
        out.str(START);
    }
    for &n in pulls {
        out.str(name(n));
    }
    out.str("sends");
    out.array_len(sends.len());
    for (node, data, _) in &sends {
        out.array_len(2);
        out.str(name(*node));
        out.bin(data);
    }
    out.str("joins");
    out.array_len(joins.len());
    for join in joins {
        out.array_len(join.len());
        for &arrived in join {
            out.bool(arrived);
        }
    }
    out.str("fields");
    out.array_len(fields.len());
    for field in fields {
        out.str(field.name);
    }
    out.str("writers");
    out.array_len((0..writers.len()).filter(|&i| unique(i)).count());
    for i in (0..writers.len()).filter(|&i| unique(i)) {
        out.str(name(writers[i]));
    }
    out.str("input_sends");
    out.array_len(input_sends);
    for (position, (_, _, input)) in sends.iter().enumerate() {
        if *input {
            out.uint(position as u64);
        }
    }
    Ok(bytes)
}

/// A `Send`'s payload, borrowed from the frontier's pushes (a state) or from a started
/// task's input (an `Arc` of one).
enum Payload<'a, S> {
    State(&'a S),
    Input(&'a AnyInput),
}

impl<'a, S> Payload<'a, S> {
    fn of<T: std::borrow::Borrow<S>>(arg: &'a SendArg<T>) -> Self {
        match arg {
            SendArg::State(state) => Payload::State(state.borrow()),
            SendArg::Input(input) => Payload::Input(input),
        }
    }
}

/// The next step's tasks, as a checkpoint body lists them: the frontier's, or the tasks taken
/// from it once the step has started (an `Async` checkpoint encoded while they run).
pub(crate) enum Next<'a, S> {
    Frontier(&'a Frontier<S>),
    Started(&'a [Task<S>]),
}

/// The edge-triggered nodes a checkpoint's body lists: a step's few on the stack (most steps
/// trigger one or two), more in a vector.
#[derive(Default)]
struct Pulls {
    few: [usize; 8],
    len: usize,
    many: Vec<usize>,
}

impl Pulls {
    fn push(&mut self, node: usize) {
        if self.len < self.few.len() {
            self.few[self.len] = node;
        } else {
            if self.len == self.few.len() {
                self.many.extend_from_slice(&self.few);
            }
            self.many.push(node);
        }
        self.len += 1;
    }

    fn as_slice(&self) -> &[usize] {
        if self.len <= self.few.len() {
            &self.few[..self.len]
        } else {
            &self.many
        }
    }
}

/// Calls `f` on `nodes` in `rank` order, without sorting a copy (a step triggers few nodes;
/// more than a handful are sorted in a vector).
fn in_rank_order(nodes: &[usize], rank: &[u32], mut f: impl FnMut(usize)) {
    if nodes.len() > 8 {
        let mut sorted = nodes.to_vec();
        sorted.sort_unstable_by_key(|&n| rank[n]);
        sorted.into_iter().for_each(f);
        return;
    }
    let mut last = None;
    for _ in 0..nodes.len() {
        let next = nodes
            .iter()
            .copied()
            .filter(|&n| last.is_none_or(|l| rank[n] > l))
            .min_by_key(|&n| rank[n]);
        let Some(n) = next else { break };
        last = Some(rank[n]);
        f(n);
    }
}

#[cfg(test)]
mod tests {
    /// A body written before typed inputs (no `input_sends`) still reads: its sends are states.
    #[test]
    fn bodies_without_input_sends_still_read() {
        use crate::checkpoint::codec::{self, Body, serde_bytes_vec::Bytes};
        #[derive(serde::Serialize)]
        struct OldBody {
            format: u32,
            next: Vec<String>,
            sends: Vec<(String, Bytes)>,
            joins: Vec<Vec<bool>>,
            fields: Vec<String>,
            writers: Vec<String>,
        }
        let old = OldBody {
            format: codec::FORMAT,
            next: vec!["a".to_owned()],
            sends: vec![("w".to_owned(), Bytes(vec![0x80]))],
            joins: Vec::new(),
            fields: vec!["x".to_owned()],
            writers: Vec::new(),
        };
        let body: Body = codec::decode(&codec::encode(&old).unwrap()).unwrap();
        assert_eq!(body.sends.len(), 1);
        assert!(body.input_sends.is_empty());
    }

    /// The body encoder writes what serde writes for the body (which `Body` decodes), for
    /// frontiers with pulls in any order, sends of states and of inputs, joins and writers;
    /// and the same bytes from the tasks taken from the frontier (an `Async` checkpoint
    /// encoded once its step started).
    #[test]
    fn bodies_are_written_byte_for_byte_as_serde_writes_them() {
        use super::super::task_writes::state_to_update;
        use super::{FROM_START, Frontier, Next, encode_body};
        use crate::checkpoint::codec::{self, Body, BodyRef, FieldNames, serde_bytes_vec::Bytes};
        use crate::checkpoint::{interning, msgpack};
        use crate::command::SendArg;
        use crate::state::GraphState;
        use crate::{END, START, StateGraph};
        use serde::Serialize;

        #[derive(crate::GraphState, Clone, Default, Debug)]
        struct Fan {
            topic: String,
            #[reducer(append)]
            notes: Vec<String>,
        }
        let nodes = [
            "zeta", "alpha", "mid", "beta", "omega", "gamma", "delta", "eta", "theta", "iota",
        ];
        let mut graph = StateGraph::<Fan>::new();
        for name in nodes {
            graph = graph.add_node(name, |_: std::sync::Arc<Fan>| async {
                FanUpdate::default()
            });
        }
        graph = graph
            .add_node_with_input("worker", |i: u32| async move {
                FanUpdate::default().notes(vec![i.to_string()])
            })
            .add_edge(["alpha", "beta"], "gamma")
            .add_conditional_edges(START, |_: &Fan| END, ["worker", END])
            .add_edge("worker", END);
        for name in nodes {
            graph = graph.add_edge(START, name).add_edge(name, END);
        }
        let compiled = graph.compile().unwrap();
        let g = &*compiled.inner;
        let index = |n: &str| g.index[n];
        for (pulls, pending_input, writers) in [
            (vec![], false, vec![]),
            (vec!["zeta", "alpha", "mid"], true, vec![FROM_START]),
            (
                nodes.to_vec(),
                false,
                vec![index("beta"), index("alpha"), index("beta")],
            ),
        ] {
            let make = || {
                let mut frontier = Frontier::new(g, false);
                frontier.pulls = pulls.iter().map(|n| index(n)).collect();
                frontier.pushes = vec![
                    (
                        index("worker"),
                        SendArg::Input(crate::node_input::AnyInput::new(7u32)),
                    ),
                    (
                        index("mid"),
                        SendArg::State(Fan {
                            topic: "t".into(),
                            notes: vec!["n".into()],
                        }),
                    ),
                    (
                        index("worker"),
                        SendArg::Input(crate::node_input::AnyInput::new(9u32)),
                    ),
                ];
                frontier.joins = vec![vec![true, false]];
                frontier
            };
            let frontier = make();
            let encode =
                |next| encode_body(g, next, &frontier.joins, pending_input, &writers).unwrap();
            let ours = encode(Next::Frontier(&frontier));
            let tasks = make().take_tasks(g);
            let started = encode(Next::Started(&tasks));
            assert_eq!(started, ours, "from started tasks, pulls {pulls:?}");

            let mut next: Vec<usize> = frontier.pulls.clone();
            next.sort_unstable_by_key(|&n| g.rank[n]);
            let mut names: Vec<&str> = if pending_input { vec![START] } else { vec![] };
            names.extend(next.iter().map(|&n| &*g.names[n]));
            let mut writer_names: Vec<&str> = Vec::new();
            for &w in &writers {
                let name = if w == FROM_START { START } else { &*g.names[w] };
                if !writer_names.contains(&name) {
                    writer_names.push(name);
                }
            }
            let sends = frontier
                .pushes
                .iter()
                .map(|(n, arg)| {
                    let bytes = match arg {
                        SendArg::State(s) => {
                            interning::encode_with_table(&state_to_update(s), None).unwrap()
                        }
                        SendArg::Input(i) => i.encode().unwrap(),
                    };
                    (&*g.names[*n], Bytes(bytes))
                })
                .collect();
            let mut theirs = Vec::new();
            BodyRef {
                format: codec::FORMAT,
                next: names,
                sends,
                joins: &frontier.joins,
                fields: FieldNames(Fan::fields()),
                writers: &writer_names,
                input_sends: vec![0, 2],
            }
            .serialize(&mut msgpack::Packer::named(&mut theirs))
            .unwrap();
            assert_eq!(ours, theirs, "pulls {pulls:?}");
            let body: Body = codec::decode(&ours).unwrap();
            assert_eq!(body.input_sends, [0, 2]);
        }
    }
}
