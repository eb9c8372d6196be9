//! Graph state: the [`GraphState`] trait that `#[derive(GraphState)]` implements.
//!
//! A state is a plain struct. Each field is a channel with a reducer that says how a write
//! combines with the current value: replace (the default, "last value"), append, merge, add, or
//! any `fn(&mut T, T)`. Nodes never mutate the state; they return a partial update (the derived
//! `<Name>Update`, every field optional) and the executor applies all updates of a super-step at
//! the barrier, in task order.
//!
//! The trait is written by the derive, but it is an ordinary trait: hand-written impls work too.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// How a field combines writes. Only [`ReducerKind::Replace`] fields reject two writes in one
/// super-step; every other kind folds them in task order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReducerKind {
    /// Last value wins; two writes in one super-step are an error.
    Replace,
    /// `Extend` the current collection with the written one.
    Append,
    /// Key-wise merge of maps, union of sets.
    Merge,
    /// `+=` for numbers.
    Add,
    /// A user function `fn(&mut T, T)`.
    Custom,
}

impl ReducerKind {
    /// The name used in `#[reducer(...)]` and in diagrams.
    pub fn as_str(self) -> &'static str {
        match self {
            ReducerKind::Replace => "replace",
            ReducerKind::Append => "append",
            ReducerKind::Merge => "merge",
            ReducerKind::Add => "add",
            ReducerKind::Custom => "custom",
        }
    }
}

/// Static description of one state field (channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name in the struct.
    pub name: &'static str,
    /// Its reducer.
    pub reducer: ReducerKind,
    /// For custom reducers, the path as written in `#[reducer(...)]`; otherwise the kind's name.
    pub reducer_name: &'static str,
}

/// The most fields a state may have: a [`FieldSet`] is a 128-bit mask.
pub const MAX_FIELDS: usize = 128;

/// A set of field indices (bit `i` is `GraphState::fields()[i]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FieldSet(pub u128);

impl FieldSet {
    /// The empty set.
    pub const EMPTY: FieldSet = FieldSet(0);

    /// A set with only field `index`.
    pub const fn single(index: usize) -> FieldSet {
        FieldSet(1u128 << index)
    }

    /// Adds field `index`.
    pub fn insert(&mut self, index: usize) {
        self.0 |= 1u128 << index;
    }

    /// Whether field `index` is in the set.
    pub const fn contains(self, index: usize) -> bool {
        self.0 & (1u128 << index) != 0
    }

    /// Whether no field is in the set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Fields in both sets.
    pub const fn intersection(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 & other.0)
    }

    /// Fields in either set.
    pub const fn union(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 | other.0)
    }

    /// Iterates the indices in the set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let index = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Some(index)
        })
    }

    /// Number of fields in the set.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }
}

/// An error from a reducer (for example removing a message id that does not exist).
#[derive(Debug, thiserror::Error)]
#[error("reducer `{reducer}` of field `{field}` rejected the update: {source}")]
pub struct ReducerError {
    /// The field whose reducer failed.
    pub field: &'static str,
    /// The reducer's name.
    pub reducer: &'static str,
    /// What the reducer said.
    #[source]
    pub source: crate::BoxError,
}

/// The value a graph state starts from (a fresh thread, a fork before any write): the state's
/// `Default`.
///
/// `#[derive(GraphState)]` implements it with the struct's `Default` impl; a hand-written
/// [`GraphState`] impl writes `fn default() -> Self { Default::default() }`. It is a trait of
/// its own, not a `Default` bound on [`GraphState`], so that a state without `Default` is one
/// error at the derive instead of one at every place that names the state.
pub trait StateDefault: Sized {
    /// The initial state.
    fn default() -> Self;
}

/// Typed graph state. Derive it with `#[derive(GraphState)]`.
///
/// The derive also writes `<Name>Update` (the partial update, every field an `Option`), the
/// conversion of a full state into an update (so a state can be an input), and per-field serde
/// for checkpoints.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a graph state",
    note = "add `#[derive(agent_core::GraphState, Clone, Default)]` to the struct"
)]
pub trait GraphState: Clone + StateDefault + Send + Sync + 'static {
    /// The partial update nodes return.
    type Update: StateUpdate;

    /// The fields, in declaration order.
    fn fields() -> &'static [FieldInfo];

    /// Fields whose reducer is [`ReducerKind::Replace`]: at most one write per super-step.
    fn last_value_fields() -> FieldSet {
        let mut set = FieldSet::EMPTY;
        for (index, field) in Self::fields().iter().enumerate() {
            if field.reducer == ReducerKind::Replace {
                set.insert(index);
            }
        }
        set
    }

    /// The fields an update writes.
    fn writes(update: &Self::Update) -> FieldSet;

    /// Applies every field the update sets, each through its reducer.
    fn apply(&mut self, update: Self::Update) -> Result<(), ReducerError>;

    /// The update that writes every field with this state's values.
    fn into_update(self) -> Self::Update;

    /// Serializes field `index` (checkpoints store fields separately, so a field that did not
    /// change is not stored again).
    fn serialize_field<S: serde::Serializer>(
        &self,
        index: usize,
        serializer: S,
    ) -> Result<S::Ok, S::Error>;

    /// Replaces field `index` with a value read from `deserializer`.
    fn deserialize_field<'de, D: serde::Deserializer<'de>>(
        &mut self,
        index: usize,
        deserializer: D,
    ) -> Result<(), D::Error>;
}

/// The partial update of a state: cheap to build, serializable for checkpoints.
pub trait StateUpdate:
    Clone + Default + Send + Sync + Serialize + DeserializeOwned + 'static
{
}

impl<T> StateUpdate for T where
    T: Clone + Default + Send + Sync + Serialize + DeserializeOwned + 'static
{
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_set_iterates_in_order() {
        let mut set = FieldSet::EMPTY;
        set.insert(3);
        set.insert(0);
        set.insert(127);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![0, 3, 127]);
        assert_eq!(set.len(), 3);
        assert!(set.contains(127));
        assert!(!set.contains(1));
        assert!(set.intersection(FieldSet::single(3)).contains(3));
    }
}
