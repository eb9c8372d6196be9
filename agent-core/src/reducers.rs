//! Built-in reducers: how a write to a field combines with its current value.
//!
//! Every reducer has the shape `fn(&mut T, T)` (or `fn(&mut T, T) -> Result<(), E>` when a write
//! can be rejected), so a custom reducer is just a function: `#[reducer(my_crate::keep_max)]`.
//!
//! A reducer may also say what it did, for checkpoints: returning [`Written::Appended`] (or
//! `Ok(Written::Appended)`) promises that the write only added elements after the existing
//! ones and left those untouched, so the next checkpoint encodes the new elements only
//! (linear in a conversation's length, not quadratic). [`append`] does this for `Vec` and
//! `VecDeque`.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, LinkedList, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::ops::AddAssign;

/// Last value wins (the default for a field without `#[reducer]`).
pub fn replace<T>(current: &mut T, update: T) {
    *current = update;
}

/// Extends the current collection with the update: `Vec`, `VecDeque`, `String`, sets, maps
/// (see [`Append`]).
///
/// Returns [`Written::Appended`] for collections that keep insertion order (`Vec`,
/// `VecDeque`), so checkpoints store only the new elements.
pub fn append<T: Append>(current: &mut T, update: T) -> Written {
    current.append_all(update);
    if T::KEEPS_ORDER {
        Written::Appended
    } else {
        Written::Rewritten
    }
}

/// What a reducer did to its field, for checkpoints (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Anything (the default): the next checkpoint encodes the field whole and compares it
    /// with the last stored version.
    Rewritten,
    /// Only added elements after the existing ones, which are untouched.
    Appended,
}

/// Collections that [`append`] knows how to extend: `Vec`, `VecDeque`, `LinkedList`,
/// `String`, `BinaryHeap`, the std sets and maps. Implement it for a collection of your own to
/// use `#[reducer(append)]` on it.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(append)]` cannot append to a `{Self}`",
    label = "append needs a collection, not `{Self}`",
    note = "append extends collections (Vec, VecDeque, String, sets and maps); for a number use `#[reducer(add)]`, for anything else a reducer fn `#[reducer(path::to::fn)]` (or implement `agent_core::reducers::Append` for the type)"
)]
pub trait Append {
    /// Whether appending only adds elements after the existing ones and the value serializes
    /// as a sequence of them (then checkpoints store only what was appended).
    const KEEPS_ORDER: bool = false;

    /// Adds the items of `other` at the end of `self`.
    fn append_all(&mut self, other: Self);
}

macro_rules! append_by_extend {
    ($(impl<$($p:ident $(: $b:path)?),*> for $ty:ty $(, keeps order $keeps:literal)?;)*) => {$(
        impl<$($p $(: $b)?),*> Append for $ty {
            $(const KEEPS_ORDER: bool = $keeps;)?
            fn append_all(&mut self, other: Self) {
                self.extend(other);
            }
        }
    )*};
}

append_by_extend! {
    impl<T> for Vec<T>, keeps order true;
    impl<T> for VecDeque<T>, keeps order true;
    impl<T> for LinkedList<T>;
    impl<T: Ord> for BinaryHeap<T>;
    impl<T: Ord> for BTreeSet<T>;
    impl<K: Ord, V> for BTreeMap<K, V>;
}

impl Append for String {
    fn append_all(&mut self, other: Self) {
        self.push_str(&other);
    }
}

impl<T: Eq + Hash, S: BuildHasher> Append for HashSet<T, S> {
    fn append_all(&mut self, other: Self) {
        self.extend(other);
    }
}

impl<K: Eq + Hash, V, S: BuildHasher> Append for HashMap<K, V, S> {
    fn append_all(&mut self, other: Self) {
        self.extend(other);
    }
}

/// Adds the update to the current value (token counts, scores).
pub fn add<T: AddAssign>(current: &mut T, update: T) {
    *current += update;
}

/// Key-wise merge of maps (the update's entries win), union of sets.
pub fn merge<T: Merge>(current: &mut T, update: T) {
    current.merge(update);
}

/// Values that [`merge`] knows how to combine.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(merge)]` does not know how to merge `{Self}`",
    note = "merge works on maps and sets (HashMap, BTreeMap, HashSet, BTreeSet, serde_json::Value objects, Option of those); use a custom reducer `#[reducer(path::to::fn)]` for other types"
)]
pub trait Merge {
    /// Folds `other` into `self`.
    fn merge(&mut self, other: Self);
}

impl<K: Eq + Hash, V, S: BuildHasher> Merge for HashMap<K, V, S> {
    fn merge(&mut self, other: Self) {
        self.extend(other);
    }
}

impl<K: Ord, V> Merge for BTreeMap<K, V> {
    fn merge(&mut self, other: Self) {
        self.extend(other);
    }
}

impl<T: Eq + Hash, S: BuildHasher> Merge for HashSet<T, S> {
    fn merge(&mut self, other: Self) {
        self.extend(other);
    }
}

impl<T: Ord> Merge for BTreeSet<T> {
    fn merge(&mut self, other: Self) {
        self.extend(other);
    }
}

impl Merge for serde_json::Value {
    /// Objects merge key-wise (recursively); anything else is replaced.
    fn merge(&mut self, other: Self) {
        match (self, other) {
            (serde_json::Value::Object(current), serde_json::Value::Object(update)) => {
                for (key, value) in update {
                    match current.get_mut(&key) {
                        Some(existing) => existing.merge(value),
                        None => {
                            current.insert(key, value);
                        }
                    }
                }
            }
            (current, other) => *current = other,
        }
    }
}

impl<T: Merge> Merge for Option<T> {
    fn merge(&mut self, other: Self) {
        match (self.as_mut(), other) {
            (Some(current), Some(update)) => current.merge(update),
            (None, Some(update)) => *self = Some(update),
            (_, None) => {}
        }
    }
}

/// What a reducer returns: nothing, or a `Result` whose error rejects the write.
///
/// Implemented for `()` and `Result<(), E>`; generated code calls [`ReducerOutput::into_result`].
pub trait ReducerOutput {
    /// Converts to a result.
    fn into_result(self) -> Result<(), crate::BoxError>;

    /// Whether the write only appended ([`Written::Appended`]).
    fn appended(&self) -> bool {
        false
    }
}

impl ReducerOutput for Written {
    fn into_result(self) -> Result<(), crate::BoxError> {
        Ok(())
    }

    fn appended(&self) -> bool {
        *self == Written::Appended
    }
}

impl<E> ReducerOutput for Result<Written, E>
where
    E: Into<crate::BoxError>,
{
    fn into_result(self) -> Result<(), crate::BoxError> {
        self.map(|_| ()).map_err(Into::into)
    }

    fn appended(&self) -> bool {
        matches!(self, Ok(Written::Appended))
    }
}

/// Which fields the reducers running on this thread reported as appended: the executor
/// turns it on around the writes a checkpoint will store.
pub(crate) mod journal {
    use std::cell::{Cell, RefCell};

    thread_local! {
        static APPENDED: RefCell<Option<Vec<&'static str>>> = const { RefCell::new(None) };
        /// The list a finished recording hands back for the next one (one allocation per
        /// thread, not one per task's writes).
        static SPARE: Cell<Vec<&'static str>> = const { Cell::new(Vec::new()) };
    }

    /// Runs `apply`, then calls `each` with every field whose reducer reported an append.
    pub(crate) fn record<T>(apply: impl FnOnce() -> T, mut each: impl FnMut(&'static str)) -> T {
        let list = SPARE.with(Cell::take);
        let outer = APPENDED.with(|a| a.borrow_mut().replace(list));
        let out = apply();
        let mut appended = APPENDED
            .with(|a| std::mem::replace(&mut *a.borrow_mut(), outer))
            .unwrap_or_default();
        for field in appended.drain(..) {
            each(field);
        }
        SPARE.with(|spare| spare.set(appended));
        out
    }

    /// Notes an append to `field`, when recording.
    pub(crate) fn appended(field: &'static str) {
        APPENDED.with(|a| {
            if let Some(list) = a.borrow_mut().as_mut() {
                list.push(field);
            }
        });
    }
}

impl ReducerOutput for () {
    fn into_result(self) -> Result<(), crate::BoxError> {
        Ok(())
    }
}

impl<E> ReducerOutput for Result<(), E>
where
    E: Into<crate::BoxError>,
{
    fn into_result(self) -> Result<(), crate::BoxError> {
        self.map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtins() {
        let mut v = vec![1, 2];
        assert_eq!(append(&mut v, vec![3]), Written::Appended);
        assert_eq!(v, vec![1, 2, 3]);
        let mut set = BTreeSet::from([1, 3]);
        assert_eq!(append(&mut set, BTreeSet::from([2])), Written::Rewritten);

        let mut text = String::from("ab");
        append(&mut text, "c".to_owned());
        assert_eq!(text, "abc");

        let mut queue = VecDeque::from([1]);
        append(&mut queue, VecDeque::from([2]));
        assert_eq!(queue, [1, 2]);

        let mut n = 2u64;
        add(&mut n, 40);
        assert_eq!(n, 42);

        let mut m = BTreeMap::from([("a", 1), ("b", 2)]);
        merge(&mut m, BTreeMap::from([("b", 3), ("c", 4)]));
        assert_eq!(m, BTreeMap::from([("a", 1), ("b", 3), ("c", 4)]));

        let mut s = BTreeSet::from([1, 2]);
        merge(&mut s, BTreeSet::from([2, 3]));
        assert_eq!(s, BTreeSet::from([1, 2, 3]));

        let mut x = "a";
        replace(&mut x, "b");
        assert_eq!(x, "b");
    }

    #[test]
    fn json_objects_merge_deeply() {
        let mut v = json!({"a": {"x": 1}, "b": 1});
        merge(&mut v, json!({"a": {"y": 2}, "b": [1]}));
        assert_eq!(v, json!({"a": {"x": 1, "y": 2}, "b": [1]}));
    }

    #[test]
    fn option_merge() {
        let mut o: Option<BTreeSet<i32>> = None;
        merge(&mut o, Some(BTreeSet::from([1])));
        merge(&mut o, None);
        merge(&mut o, Some(BTreeSet::from([2])));
        assert_eq!(o, Some(BTreeSet::from([1, 2])));
    }
}
