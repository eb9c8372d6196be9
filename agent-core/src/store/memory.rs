//! `InMemoryStore`: items in a map of namespaces, for tests and single-process programs.
//! Gone when the process ends. A batch holds the map's lock while it applies its ops (never
//! while embedding), so batches are atomic with respect to each other. A single op (`get`,
//! `put`, `search`...) skips the batch's lists, and a `get` copies nothing but the item it
//! returns: these calls cost about as much as the map access and the item's clone.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use super::prepare::config_builders;
use super::prepare::{Prepared, StoreConfig};
use super::rank;
use super::{Item, Op, OpResult, Store, StoreError, TtlConfig, validate_namespace};

/// One stored item and what the store keeps beside it.
#[derive(Debug, Clone)]
struct Entry {
    item: Item,
    ttl_ms: Option<i64>,
    expires_at_ms: Option<i64>,
    vectors: Vec<(String, Vec<f32>)>,
}

impl Entry {
    fn live(&self, now: i64) -> bool {
        self.expires_at_ms.is_none_or(|at| at > now)
    }

    fn refresh(&mut self, now: i64) {
        if let Some(ttl) = self.ttl_ms {
            self.expires_at_ms = Some(now.saturating_add(ttl));
        }
    }
}

/// The items of one namespace, by key.
type Space = HashMap<String, Entry>;

/// The items, by namespace and key in hash maps (a get or a put is two hash lookups, where a
/// tree walk would compare keys that each live elsewhere on the heap), and the namespaces
/// in order for the prefix scans of searches.
#[derive(Debug, Default)]
struct Data {
    spaces: HashMap<Vec<String>, Space>,
    order: BTreeSet<Vec<String>>,
}

impl Data {
    fn space_mut(&mut self, namespace: &[String]) -> Option<&mut Space> {
        self.spaces.get_mut(namespace)
    }

    fn remove_space(&mut self, namespace: &[String]) {
        self.spaces.remove(namespace);
        self.order.remove(namespace);
    }

    /// The namespaces under `prefix` (all of them for an empty one) with their items.
    fn under<'a>(
        &'a self,
        prefix: &'a [String],
    ) -> impl Iterator<Item = (&'a [String], &'a Space)> {
        self.order
            .range::<[String], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |namespace| super::namespace::has_prefix(namespace, prefix))
            .filter_map(|namespace| Some((namespace.as_slice(), self.spaces.get(namespace)?)))
    }
}

/// A store in the process's memory.
#[derive(Debug, Clone, Default)]
pub struct InMemoryStore {
    config: StoreConfig,
    data: Arc<Mutex<Data>>,
}

impl InMemoryStore {
    /// An empty store without index or TTL defaults.
    pub fn new() -> Self {
        Self::default()
    }

    config_builders!();

    fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The live item under `namespace` and `key`, its TTL refreshed when `refresh`.
fn read(data: &mut Data, namespace: &[String], key: &str, refresh: bool, now: i64) -> Option<Item> {
    let entry = data
        .space_mut(namespace)
        .and_then(|items| items.get_mut(key))
        .filter(|e| e.live(now))?;
    if refresh {
        entry.refresh(now);
    }
    Some(entry.item.clone())
}

fn apply(data: &mut Data, op: Prepared, now: i64) -> OpResult {
    match op {
        Prepared::Get {
            namespace,
            key,
            refresh,
        } => OpResult::Item(read(data, &namespace, &key, refresh, now)),
        Prepared::Put(put) => {
            let Some(value) = put.value else {
                if let Some(items) = data.space_mut(&put.namespace) {
                    items.remove(&put.key);
                    if items.is_empty() {
                        data.remove_space(&put.namespace);
                    }
                }
                return OpResult::Done;
            };
            // The namespace's labels are copied for the maps only when it is new to them.
            let items = match data.spaces.get_mut(&put.namespace) {
                Some(items) => items,
                None => {
                    data.order.insert(put.namespace.clone());
                    data.spaces.entry(put.namespace.clone()).or_default()
                }
            };
            let created = items
                .get(&put.key)
                .filter(|e| e.live(now))
                .map_or(now, |e| e.item.created_at_ms);
            items.insert(
                put.key.clone(),
                Entry {
                    item: Item {
                        namespace: put.namespace,
                        key: put.key,
                        value,
                        created_at_ms: created,
                        updated_at_ms: now,
                    },
                    ttl_ms: put.ttl_ms,
                    expires_at_ms: put.ttl_ms.map(|t| now.saturating_add(t)),
                    vectors: put.vectors.unwrap_or_default(),
                },
            );
            OpResult::Done
        }
        Prepared::Search(search) => {
            let candidates = data
                .under(&search.prefix)
                .flat_map(|(_, items)| items.values())
                .filter(|e| e.live(now))
                .map(|e| (&e.item, e.vectors.iter().map(|(_, v)| v.as_slice())));
            let found = rank::rank(candidates, &search);
            if search.refresh {
                for hit in &found {
                    if let Some(e) = data
                        .space_mut(&hit.namespace)
                        .and_then(|i| i.get_mut(&hit.key))
                    {
                        e.refresh(now);
                    }
                }
            }
            OpResult::Items(found)
        }
        Prepared::List(list) => {
            let live = data
                .under(&[])
                .filter(|(_, items)| items.values().any(|e| e.live(now)))
                .map(|(ns, _)| ns.to_vec());
            OpResult::Namespaces(rank::list(live, &list))
        }
    }
}

#[async_trait::async_trait]
impl Store for InMemoryStore {
    fn backend(&self) -> &str {
        "memory"
    }

    fn ttl_config(&self) -> Option<&TtlConfig> {
        self.config.ttl.as_ref()
    }

    async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        let prepared = self.config.prepare(ops).await?;
        let now = self.config.now_ms();
        let mut data = self.lock();
        Ok(prepared
            .into_iter()
            .map(|op| apply(&mut data, op, now))
            .collect())
    }

    async fn apply(&self, op: Op) -> Result<OpResult, StoreError> {
        let op = self.config.prepare_one(op).await?;
        let now = self.config.now_ms();
        Ok(apply(&mut self.lock(), op, now))
    }

    async fn get(&self, namespace: &[String], key: &str) -> Result<Option<Item>, StoreError> {
        validate_namespace(namespace)?;
        let refresh = self.config.refresh(None);
        let now = self.config.now_ms();
        Ok(read(&mut self.lock(), namespace, key, refresh, now))
    }

    async fn sweep_expired(&self) -> Result<usize, StoreError> {
        let now = self.config.now_ms();
        let mut data = self.lock();
        let Data { spaces, order } = &mut *data;
        let mut swept = 0;
        spaces.retain(|namespace, items| {
            let before = items.len();
            items.retain(|_, e| e.live(now));
            swept += before - items.len();
            let keep = !items.is_empty();
            if !keep {
                order.remove(namespace);
            }
            keep
        });
        Ok(swept)
    }
}
