//! Task running (LangGraph's `_runner.py`): a step's tasks run concurrently (up to
//! `max_concurrency`; a few on the run's own task, more spread over the runtime's workers),
//! each node call in its own span with panics caught, and every finished
//! task becomes one [`TaskWrites`] — the only shape the barrier, the stream, the checkpoint
//! metadata and the pending writes read. A node's [`NodeOutput`] is unpacked here and nowhere
//! else.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tracing::Instrument;

use crate::command::{Goto, SendArg};
use crate::context::NodeContext;
use crate::error::GraphError;
use crate::interrupt::Interrupted;
use crate::node::{NodeError, NodeOutput};
use crate::state::{FieldSet, GraphState};

use super::Run;
use super::algo::Task;

/// A step of at most this many tasks runs them concurrently on the run's own task; a wider one
/// spreads them over the runtime's workers. Why: a spawned task is queued for another worker,
/// which is woken for it (a system call) and hands the result back; for a few short nodes
/// that costs more than it saves (LangGraph runs a step's tasks concurrently on one event
/// loop), while a fan-out of many tasks keeps every core busy.
const SAME_TASK_UP_TO: usize = 3;

/// In a wide step, each task is first polled once on the run's own task, until these many
/// microseconds of such polls are spent; one that finishes there costs no spawn, no wake-up
/// and no hand-back (a fan-out of short nodes: most of a task's cost), one that waits is
/// spawned and goes on on any worker. Why a budget: a node that computes for long without
/// awaiting would otherwise hold the others back; past the budget, tasks are spawned unpolled,
/// so such a step loses at most this much of its parallelism.
const POLL_HERE_US: u64 = 50;

/// A node whose last first poll took at least this many microseconds is spawned unpolled in
/// a wide step. Why: polled here, the first such task runs alone while the other workers
/// wait for the budget to run out (a fan-out of ten 70 µs subgraph runs on two workers spent
/// a sixth of its time so); a spawn and its hand-back cost a few microseconds.
const LONG_POLL_US: u32 = 20;

/// Per node of a graph, whether the first poll of its last task in a wide step was long (see
/// [`LONG_POLL_US`]): what [`Running`] reads to choose between polling a task here and
/// spawning it. Shared by every run of the graph, so a fan-out learns from the one before it;
/// written only when a node's answer changes (no write traffic between concurrent runs).
#[derive(Debug)]
pub(crate) struct FirstPolls(Box<[std::sync::atomic::AtomicBool]>);

impl FirstPolls {
    pub(crate) fn new(nodes: usize) -> Self {
        FirstPolls((0..nodes).map(|_| Default::default()).collect())
    }

    fn long(&self, node: usize) -> bool {
        self.0
            .get(node)
            .is_some_and(|long| long.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn record(&self, node: usize, took: std::time::Duration) {
        if let Some(slot) = self.0.get(node) {
            let long = took.as_micros() >= u128::from(LONG_POLL_US);
            if slot.load(std::sync::atomic::Ordering::Relaxed) != long {
                slot.store(long, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// `task`, recording how long its first poll takes as `node`'s.
    async fn timed<T>(self: Arc<Self>, node: usize, task: impl Future<Output = T>) -> T {
        let mut task = std::pin::pin!(task);
        let mut first = true;
        std::future::poll_fn(|cx| {
            if !std::mem::take(&mut first) {
                return task.as_mut().poll(cx);
            }
            let started = std::time::Instant::now();
            let polled = task.as_mut().poll(cx);
            self.record(node, started.elapsed());
            polled
        })
        .await
    }
}

/// A step's running tasks: polled here, or spawned (see [`SAME_TASK_UP_TO`]).
enum Running<T> {
    Here(futures::stream::FuturesUnordered<futures::future::BoxFuture<'static, T>>),
    Spawned {
        set: tokio::task::JoinSet<T>,
        /// Tasks that finished when first polled here.
        finished: Vec<T>,
        /// What is left of [`POLL_HERE_US`].
        budget: std::time::Duration,
    },
}

impl<T: std::marker::Send + 'static> Running<T> {
    fn for_tasks(count: usize) -> Self {
        if count <= SAME_TASK_UP_TO {
            Running::Here(futures::stream::FuturesUnordered::new())
        } else {
            Running::Spawned {
                set: tokio::task::JoinSet::new(),
                finished: Vec::new(),
                budget: std::time::Duration::from_micros(POLL_HERE_US),
            }
        }
    }

    /// Starts `task`, a task of `node`: in a wide step, a node whose first polls are long is
    /// spawned unpolled (timed, so a node that got shorter is polled here again).
    fn push(
        &mut self,
        task: impl Future<Output = T> + std::marker::Send + 'static,
        node: usize,
        polls: &Arc<FirstPolls>,
    ) {
        match self {
            Running::Here(here) => here.push(Box::pin(task)),
            Running::Spawned {
                set,
                finished,
                budget,
            } => {
                if polls.long(node) {
                    set.spawn(polls.clone().timed(node, task));
                    return;
                }
                if budget.is_zero() {
                    set.spawn(task);
                    return;
                }
                let started = std::time::Instant::now();
                let mut task = Box::pin(task);
                // One poll, with a waker that does nothing: a task that waits is spawned, and
                // its first poll there registers the real waker and sees whatever happened
                // meanwhile (a sibling that released it, a timer that fired).
                let polled = task.as_mut().now_or_never();
                let took = started.elapsed();
                polls.record(node, took);
                *budget = budget.saturating_sub(took);
                match polled {
                    Some(output) => finished.push(output),
                    None => {
                        set.spawn(task);
                    }
                }
            }
        }
    }

    /// The next task to finish, `None` when none runs. Dropped, it cancels those still
    /// running.
    async fn next(&mut self) -> Option<Result<T, tokio::task::JoinError>> {
        match self {
            Running::Here(here) => futures::StreamExt::next(here).await.map(Ok),
            Running::Spawned { set, finished, .. } => match finished.pop() {
                Some(output) => Some(Ok(output)),
                None => set.join_next().await,
            },
        }
    }
}

/// The updates of one task, in the order they apply.
#[derive(Debug, Clone)]
pub(crate) enum Updates<U> {
    /// No update (a `Command` that only routes).
    None,
    /// One update (what most nodes return).
    One(U),
    /// Several, applied in order as one task's writes (a subgraph's output).
    Batch(Vec<U>),
}

impl<U> Updates<U> {
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, U> {
        match self {
            Updates::None => [].iter(),
            Updates::One(u) => std::slice::from_ref(u).iter(),
            Updates::Batch(list) => list.iter(),
        }
    }
}

impl<U> IntoIterator for Updates<U> {
    type Item = U;
    type IntoIter = std::iter::Chain<std::option::IntoIter<U>, std::vec::IntoIter<U>>;

    fn into_iter(self) -> Self::IntoIter {
        let (one, many) = match self {
            Updates::None => (None, Vec::new()),
            Updates::One(u) => (Some(u), Vec::new()),
            Updates::Batch(list) => (None, list),
        };
        one.into_iter().chain(many)
    }
}

/// What a finished task writes: its updates and where it routes. Every consumer of a task's
/// result reads this.
#[derive(Debug, Clone)]
pub(crate) struct TaskWrites<S: GraphState> {
    pub(crate) node: usize,
    pub(crate) updates: Updates<S::Update>,
    pub(crate) goto: Vec<Goto<S>>,
}

impl<S: GraphState> TaskWrites<S> {
    /// The writes of `node`'s output.
    pub(crate) fn new(node: usize, output: NodeOutput<S>) -> Self {
        let (updates, goto) = match output {
            NodeOutput::Update(update) => (Updates::One(update), Vec::new()),
            NodeOutput::Batch(batch) => (Updates::Batch(batch), Vec::new()),
            NodeOutput::Command(command) => (
                command.update.map_or(Updates::None, Updates::One),
                command.goto,
            ),
        };
        TaskWrites {
            node,
            updates,
            goto,
        }
    }

    /// Back to a node's output (a cached result).
    pub(crate) fn into_output(self) -> NodeOutput<S> {
        match (self.updates, self.goto.is_empty()) {
            (Updates::One(update), true) => NodeOutput::Update(update),
            (Updates::Batch(batch), true) => NodeOutput::Batch(batch),
            (Updates::None, true) => NodeOutput::Update(S::Update::default()),
            (updates, false) => NodeOutput::Command(crate::command::Command {
                update: match updates {
                    Updates::One(update) => Some(update),
                    _ => None,
                },
                goto: self.goto,
                resume: None,
                graph: crate::command::CommandGraph::Current,
            }),
        }
    }

    /// The fields the task writes.
    pub(crate) fn written(&self) -> FieldSet {
        self.updates
            .iter()
            .fold(FieldSet::EMPTY, |acc, u| acc.union(S::writes(u)))
    }

    /// The task's update as JSON (streams, metadata): the update, a list for a batch, `null`
    /// for none.
    pub(crate) fn update_json(&self) -> serde_json::Value {
        match &self.updates {
            Updates::None => serde_json::Value::Null,
            Updates::One(update) => to_json(update),
            Updates::Batch(list) => to_json(list),
        }
    }
}

/// How a task ended, short of an error.
pub(crate) enum Done<S: GraphState> {
    Output(TaskWrites<S>),
    Paused(Interrupted),
}

/// A step's results: the finished tasks' writes in task order, and the tasks that paused (by
/// index).
pub(crate) type StepDone<S> = (Vec<TaskWrites<S>>, Vec<(usize, Interrupted)>);

/// `done` (about `count` tasks, in task order) split into writes and pauses.
fn split<S: GraphState>(done: impl Iterator<Item = Done<S>>, count: usize) -> StepDone<S> {
    let mut writes = Vec::with_capacity(count);
    let mut paused = Vec::new();
    for (i, d) in done.enumerate() {
        match d {
            Done::Output(w) => writes.push(w),
            Done::Paused(interrupted) => paused.push((i, interrupted)),
        }
    }
    (writes, paused)
}

type Caught<S> =
    Result<Result<NodeOutput<S>, NodeError>, Box<dyn std::any::Any + std::marker::Send>>;

impl<S: GraphState> Run<'_, S> {
    /// Runs the step's tasks concurrently: the finished tasks' writes in task order, and the
    /// tasks that paused (by index). Tasks whose writes were kept from an earlier attempt of
    /// this step are not run again. With a checkpointer, a failing task lets its running
    /// siblings finish (their writes are kept, so a resume does not pay for them twice);
    /// without one, it stops the step at once. An owed `Async` checkpoint of the position the
    /// step starts from is written once its tasks have started (in a wide step, while they
    /// run on the other workers).
    pub(crate) async fn run_tasks(&mut self, tasks: &[Task<S>]) -> Result<StepDone<S>, GraphError> {
        if let [task] = tasks {
            self.step_started(tasks).await?;
            if let Some(kept) = self.kept_writes(task) {
                return Ok((vec![kept], Vec::new()));
            }
            let result = self.call(task).await;
            let result = self.keep_journal(task, result);
            let result = self.task_result(task.node, result);
            if let Some(stream) = &task.stream {
                self.task_finished(task.node, stream, &result).await?;
            }
            if let Err(error) = &result {
                self.record_failure(task, error);
            }
            return Ok(split(std::iter::once(result?), 1));
        }

        let count = tasks.len();
        let mut results: Vec<Option<Done<S>>> = (0..count).map(|_| None).collect();
        let mut to_run = Vec::with_capacity(count);
        for (i, task) in tasks.iter().enumerate() {
            match self.kept_writes(task) {
                Some(kept) => results[i] = Some(Done::Output(kept)),
                None => to_run.push(i),
            }
        }
        let max_concurrency = self.info.config.max_concurrency.unwrap_or(usize::MAX);
        let mut running = Running::for_tasks(to_run.len());
        let mut pending = to_run.into_iter();
        for _ in 0..max_concurrency.min(count) {
            self.start_next(&mut running, &mut pending, tasks);
        }
        self.step_started(tasks).await?;
        let mut failure: Option<GraphError> = None;
        while let Some(joined) = running.next().await {
            let (i, result) = joined.map_err(|error| GraphError::NodePanicked {
                // Tasks catch their own panics; this is a runtime shutting down.
                node: "unknown".to_owned(),
                step: self.step + 1,
                message: error.to_string(),
            })?;
            let task = &tasks[i];
            let result = self.keep_journal(task, result);
            let result = self.task_result(task.node, result);
            if let Some(stream) = &task.stream {
                self.task_finished(task.node, stream, &result).await?;
            }
            match result {
                Ok(done) => {
                    if let Done::Output(writes) = &done {
                        // Kept at once, so a crash or a failing sibling does not lose it.
                        self.keep_writes(task, writes)?;
                    }
                    results[i] = Some(done);
                }
                Err(error) => {
                    self.record_failure(task, &error);
                    if self.durable.is_none() {
                        // Dropping the others cancels them.
                        return Err(error);
                    }
                    failure.get_or_insert(error);
                    continue;
                }
            }
            if failure.is_none() {
                self.start_next(&mut running, &mut pending, tasks);
            }
        }
        if let Some(error) = failure {
            let finished: Vec<(&Task<S>, &TaskWrites<S>)> = tasks
                .iter()
                .zip(&results)
                .filter_map(|(task, done)| match done {
                    Some(Done::Output(writes)) => Some((task, writes)),
                    _ => None,
                })
                .collect();
            self.keep_finished(&finished)?;
            return Err(error);
        }
        Ok(split(results.into_iter().flatten(), count))
    }

    /// Starts the next of the step's `pending` tasks, if any.
    fn start_next(
        &self,
        running: &mut Running<(usize, Caught<S>)>,
        pending: &mut std::vec::IntoIter<usize>,
        tasks: &[Task<S>],
    ) {
        if let Some(i) = pending.next() {
            let fut = self.call(&tasks[i]);
            let polls = &self.graph.first_polls;
            running.push(async move { (i, fut.await) }, tasks[i].node, polls);
        }
    }

    /// The node call of one task, in its span, with panics caught. A node with a cache
    /// policy, in a graph with a cache, answers from the cache when it can (and is not
    /// called at all), and fills it when it runs.
    fn call(
        &self,
        task: &Task<S>,
    ) -> impl Future<Output = Caught<S>> + std::marker::Send + 'static {
        let step = self.step + 1;
        let remaining = self
            .info
            .config
            .recursion_limit
            .saturating_sub(self.steps_run);
        let name = &self.graph.names[task.node];
        let ctx = NodeContext::new(
            task.node,
            step,
            remaining,
            self.info.clone(),
            self.resume_values(task),
            task.stream.clone(),
            task.id.clone(),
        )
        .with_fresh_namespace(self.durable.as_ref().is_some_and(|d| d.fresh_tasks()));
        let ctx = match &task.input {
            Some(SendArg::Input(input)) => ctx.with_input(input.clone()),
            _ => ctx,
        };
        // A node with its own input gets it through the context; it is handed the step's
        // state like any node (and does not read it).
        let (input, own_input) = match &task.input {
            Some(SendArg::State(state)) => (state.clone(), None),
            Some(SendArg::Input(input)) => (self.state.clone(), Some(input.clone())),
            None => (self.state.clone(), None),
        };
        let span = crate::telemetry::node_span(name, step);
        let cached = match (&self.graph.cache_policies[task.node], &self.cache) {
            (Some(policy), Some(cache)) => Some((policy.clone(), cache.clone())),
            _ => None,
        };
        let node = task.node;
        // A pause keeps the task's journal (`NodeContext::record`).
        let journal = ctx.clone();
        let call = match cached {
            None => futures::future::Either::Left(caught(self.graph.nodes[node].call(input, ctx))),
            Some((policy, cache)) => {
                let callee = self.graph.nodes[node].clone();
                let name = name.clone();
                let names = self.graph.names.clone();
                let inputs = self.graph.inputs.clone();
                // Boxed: the cached path's future is large, and an `Either` is as large as
                // its larger side (every task's future is copied into its spawned task).
                futures::future::Either::Right(Box::pin(async move {
                    let key = match &own_input {
                        Some(own) => policy.key_of_input(own).ok(),
                        None => policy.key_of(&input).ok(),
                    };
                    if let Some(key) = &key
                        && let Ok(Some(bytes)) = cache.get(&name, key).await
                        && let Ok(writes) = super::durable::decode_writes::<S>(
                            &|target: &str| input_of(&names, &inputs, target),
                            node,
                            &bytes,
                            None,
                        )
                    {
                        tracing::Span::current().record("agentgraph.cache.hit", true);
                        return Ok(Ok(writes.into_output()));
                    }
                    tracing::Span::current().record("agentgraph.cache.hit", false);
                    let result = caught(callee.call(input, ctx)).await;
                    if let (Some(key), Ok(Ok(output))) = (&key, &result) {
                        let writes = TaskWrites::new(node, output.clone());
                        if let Ok(bytes) = super::durable::encode_writes(&writes, None)
                            && let Err(error) = cache.set(&name, key, bytes, policy.ttl).await
                        {
                            tracing::warn!(%error, node = %name, "could not cache a node's result");
                        }
                    }
                    result
                }))
            }
        };
        call.map(move |result| with_journal(result, &journal))
            .instrument(span)
    }

    /// A failed task's result without its journal, which is kept for the task (so running
    /// the thread on replays what the task recorded).
    fn keep_journal(&self, task: &Task<S>, mut result: Caught<S>) -> Caught<S> {
        if let Ok(Err(NodeError::Failed(source))) = &mut result
            && source.is::<Journaled>()
        {
            let boxed = std::mem::replace(source, Box::new(std::fmt::Error));
            if let Ok(journaled) = boxed.downcast::<Journaled>() {
                let Journaled {
                    source: inner,
                    journal,
                } = *journaled;
                self.record_journal(task, journal);
                *source = inner;
            }
        }
        result
    }

    /// A node's result as a task's: its writes, a pause, or the error naming node and step.
    fn task_result(&self, node: usize, result: Caught<S>) -> Result<Done<S>, GraphError> {
        let name = || self.graph.names[node].to_string();
        let step = self.step + 1;
        match result {
            // For the parent graph: it leaves this run as LangGraph's `ParentCommand` does, and
            // the subgraph's node in the parent takes it (`run_child`).
            Ok(Ok(NodeOutput::Command(command)))
                if command.graph == crate::command::CommandGraph::Parent =>
            {
                Err(GraphError::ParentCommand(crate::error::ParentCommand {
                    node: name(),
                    command: Box::new(command),
                }))
            }
            Ok(Ok(output)) => Ok(Done::Output(TaskWrites::new(node, output))),
            Ok(Err(NodeError::TimedOut(after))) => Err(GraphError::NodeTimeout {
                node: name(),
                step,
                after,
            }),
            Ok(Err(NodeError::Failed(source))) => match source.downcast::<Interrupted>() {
                Ok(interrupted) if self.info.can_pause => Ok(Done::Paused(*interrupted)),
                Ok(_) => Err(GraphError::NoCheckpointer(format!(
                    "interrupt() in node `{}` (compile with a checkpointer and run with a thread_id)",
                    name()
                ))),
                Err(source) => Err(GraphError::Node {
                    node: name(),
                    step,
                    source,
                }),
            },
            Ok(Err(error)) => Err(GraphError::Node {
                node: name(),
                step,
                source: Box::new(error),
            }),
            Err(panic) => Err(GraphError::NodePanicked {
                node: name(),
                step,
                message: panic_message(panic.as_ref()),
            }),
        }
    }
}

/// A paused task's result with its journal attached (what the node recorded before the
/// interrupt's slot), so the pause keeps it.
/// A failed task's result carries its journal too ([`Journaled`]), taken off again with the
/// task at hand (`Run::keep_journal`).
fn with_journal<S: GraphState>(mut result: Caught<S>, ctx: &NodeContext) -> Caught<S> {
    if let Ok(Err(NodeError::Failed(source))) = &mut result {
        if let Some(interrupted) = source.downcast_mut::<Interrupted>() {
            interrupted.journal = ctx.journal_before(interrupted.index);
        } else {
            let journal = ctx.journal();
            if !journal.is_empty() {
                let inner = std::mem::replace(source, Box::new(std::fmt::Error));
                *source = Box::new(Journaled {
                    source: inner,
                    journal,
                });
            }
        }
    }
    result
}

/// A failed task's error with the journal it recorded before failing.
#[derive(Debug)]
pub(crate) struct Journaled {
    pub(crate) source: crate::error::BoxError,
    pub(crate) journal: Vec<serde_json::Value>,
}

impl std::fmt::Display for Journaled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}

impl std::error::Error for Journaled {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.source()
    }
}

/// The input type of the node named `target`, when it takes one.
pub(crate) fn input_of(
    names: &[std::sync::Arc<str>],
    inputs: &[Option<crate::node_input::InputType>],
    target: &str,
) -> Option<crate::node_input::InputType> {
    let index = names.iter().position(|n| &**n == target)?;
    inputs.get(index).copied().flatten()
}

/// Runs a node's future with panics caught, logging how long it took, and records how it
/// ended on its span (the current one: the node's).
async fn caught<S: GraphState>(
    fut: crate::node::BoxFuture<Result<NodeOutput<S>, NodeError>>,
) -> Caught<S> {
    // The clock is read only for a subscriber that records the event.
    let started = tracing::enabled!(tracing::Level::DEBUG).then(std::time::Instant::now);
    let result = AssertUnwindSafe(fut).catch_unwind().await;
    if let Some(started) = started {
        tracing::debug!(
            elapsed_us = started.elapsed().as_micros() as u64,
            ok = matches!(result, Ok(Ok(_))),
            "node finished"
        );
    }
    if !matches!(result, Ok(Ok(_))) {
        record_outcome(&tracing::Span::current(), &result);
    }
    result
}

/// Records a node call that did not return an output on its span: a pause, or a failure
/// with its `error.type`.
fn record_outcome<S: GraphState>(span: &tracing::Span, result: &Caught<S>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(Ok(_)) => {}
        Ok(Err(NodeError::Failed(source))) if source.is::<Interrupted>() => {
            span.record("agentgraph.interrupted", true);
        }
        Ok(Err(error)) => {
            crate::telemetry::record_error(span, crate::telemetry::node_error_type(error), error)
        }
        Err(panic) => crate::telemetry::record_error(
            span,
            "panic",
            &format_args!("panicked: {}", panic_message(panic.as_ref())),
        ),
    }
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

fn panic_message(panic: &(dyn std::any::Any + std::marker::Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::FirstPolls;

    #[test]
    fn a_node_is_long_from_a_long_first_poll_until_a_short_one() {
        let polls = FirstPolls::new(2);
        assert!(!polls.long(0), "a node never polled is polled here");
        polls.record(0, Duration::from_micros(70));
        assert!(polls.long(0));
        assert!(!polls.long(1), "each node has its own");
        polls.record(0, Duration::from_micros(3));
        assert!(!polls.long(0));
        // A node index past the graph's is never long (and records nothing).
        polls.record(9, Duration::from_secs(1));
        assert!(!polls.long(9));
    }

    #[tokio::test]
    async fn a_timed_task_records_its_first_poll_only() {
        let polls = Arc::new(FirstPolls::new(1));
        let task = async {
            std::thread::sleep(Duration::from_millis(1));
            tokio::task::yield_now().await;
            7
        };
        assert_eq!(polls.clone().timed(0, task).await, 7);
        assert!(polls.long(0), "the first poll slept past the threshold");

        // A later short first poll makes the node short again; its second poll, however
        // long, is not what is recorded.
        let task = async {
            tokio::task::yield_now().await;
            std::thread::sleep(Duration::from_millis(1));
        };
        polls.clone().timed(0, task).await;
        assert!(!polls.long(0));
    }
}
