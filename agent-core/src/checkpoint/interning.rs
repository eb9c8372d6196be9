//! The table of [`Shared`](crate::Shared) values a thread's checkpoints store once.
//!
//! While a checkpoint's fields are encoded, the run's [`Interner`] sits in a thread-local slot:
//! each `Shared` met is looked up by its allocation; a new one gets the next entry of the table
//! (its own MessagePack encoding) and every occurrence is written as a reference, a MessagePack
//! extension of type [`TAG`] holding the entry's index (big-endian `u32`). The table is stored
//! as one more field, [`FIELD`], an array that only grows, so each checkpoint stores the entries
//! it added as a delta. While a checkpoint is decoded, a [`Resolver`] sits in the slot instead
//! and decodes each entry once, on first reference, so references to one entry share one `Arc`.
//!
//! Encoding and decoding run synchronously on the caller's thread (no `.await` inside), which
//! is what makes a thread-local slot sound. The interner keeps each value it numbered alive, so
//! an allocation address is never reused for another value while the run can still meet it.
//!
//! A stored table is untrusted on read: an entry that references itself, directly or through
//! others, is an error (not a recursion until the stack overflows), and so is an expansion for
//! an untyped reader past [`MAX_EXPANSION`] (entries that each reference the one before twice
//! expand to 2^n copies; typed decoding shares one `Arc` per entry and does not expand).

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::FieldBlob;
use super::codec;

/// The pseudo-field that holds the table in a checkpoint's field versions.
pub(crate) const FIELD: &str = "__shared__";

/// The MessagePack extension type of a reference ('S').
pub(crate) const TAG: i8 = 0x53;

/// The MessagePack extension type of a value stored with a table of its own ('T').
const LOCAL_TAG: i8 = 0x54;

/// What an untyped reader's expansion of one value may cost: 64 MiB, each value in it counted
/// as its bytes plus [`VALUE_COST`] (what it takes decoded as JSON), so at most two million
/// values. A state whose shared values, written out everywhere they appear, come to more is
/// still read by its own type (which shares them); only an untyped view of it is refused.
pub(crate) const MAX_EXPANSION: usize = 64 << 20;

/// The size of a decoded `serde_json::Value`, charged per value expanded.
const VALUE_COST: usize = 32;

/// How deep an expansion may nest, its shared values included (as a decode may: see
/// [`nesting`](super::nesting)).
const MAX_EXPANSION_DEPTH: usize = super::nesting::MAX_DEPTH;

type AnyArc = Arc<dyn Any + Send + Sync>;

/// Entry index by allocation address, with the value kept alive. Hashed with foldhash: every
/// reference a checkpoint writes is one lookup, and SipHash was a quarter of encoding a wide
/// state's references.
type Ids = HashMap<usize, (u32, AnyArc), foldhash::fast::RandomState>;

/// A run's table of shared values, as its stored checkpoints know it.
#[derive(Default)]
pub(crate) struct Interner {
    /// Entry index by allocation address, with the value kept alive (`None` until the first
    /// entry: an empty interner, made for every checkpoint, allocates nothing).
    ids: Option<Arc<Ids>>,
    /// For a pending write: the thread's entries already stored (the first `.1`), which it
    /// references instead of carrying them.
    base: Option<(Arc<Ids>, u32)>,
    /// Whether any reference was written.
    used: bool,
    /// The last value looked up and its index: a list holding one value many times (a
    /// message appended to several lists) is written without a lookup per element.
    last: Option<(usize, u32)>,
    /// Entries numbered so far (stored or fresh).
    len: u32,
    /// Entries already stored.
    stored: u32,
    /// Encodings of entries numbered since the last stored checkpoint, by index - `stored`
    /// (`None` while a nested value is still being encoded).
    fresh: Vec<Option<Vec<u8>>>,
    /// The version of the stored table.
    version: Option<Arc<str>>,
}

impl Interner {
    /// A table for a value stored on its own next to the thread's checkpoints (a pending
    /// write): it references `thread`'s stored entries and numbers new ones after them.
    pub(crate) fn over(thread: &Interner) -> Self {
        Interner {
            base: thread.ids.clone().map(|ids| (ids, thread.stored)),
            len: thread.stored,
            stored: thread.stored,
            ..Interner::default()
        }
    }

    /// Moves the entries numbered since the last checkpoint into a blob of the table at
    /// `version`: the first one holds the whole array, later ones the new entries.
    pub(crate) fn take_blob(&mut self, version: &Arc<str>) -> Result<Option<FieldBlob>, String> {
        if self.fresh.is_empty() {
            return Ok(None);
        }
        let mut data = Vec::new();
        let base = match self.version.take() {
            Some(previous) => Some((previous, u64::from(self.stored))),
            None => {
                codec::write_array_header(&mut data, self.fresh.len());
                None
            }
        };
        for entry in self.fresh.drain(..) {
            data.extend(entry.ok_or("a shared value was still being encoded")?);
        }
        self.stored = self.len;
        self.version = Some(version.clone());
        Ok(Some(FieldBlob {
            field: FIELD.into(),
            version: version.clone(),
            base,
            data,
        }))
    }

    /// The stored table's version, when there is one (for the checkpoint's field versions).
    pub(crate) fn version(&self) -> Option<&Arc<str>> {
        self.version.as_ref()
    }

    /// Forgets entries numbered since the last stored checkpoint (their checkpoint failed to
    /// encode, so no stored reference points at them).
    pub(crate) fn discard_fresh(&mut self) {
        if self.fresh.is_empty() {
            return;
        }
        let stored = self.stored;
        self.last = None;
        if let Some(ids) = &mut self.ids {
            Arc::make_mut(ids).retain(|_, (id, _)| *id < stored);
        }
        self.fresh.clear();
        self.len = stored;
    }
}

/// A reference to entry `.0`, as it is written.
pub(crate) struct Ref(pub(crate) u32);

impl Ref {
    /// Reads a reference from an extension's type and bytes.
    pub(crate) fn parse(tag: i8, bytes: &[u8]) -> Result<u32, String> {
        match (tag, <[u8; 4]>::try_from(bytes)) {
            (TAG, Ok(id)) => Ok(u32::from_be_bytes(id)),
            _ => Err(format!(
                "expected a shared-value reference (extension {TAG}, 4 bytes), found extension {tag} of {} bytes",
                bytes.len()
            )),
        }
    }
}

struct IdBytes([u8; 4]);

impl Serialize for IdBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl Serialize for Ref {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(
            rmp_serde::MSGPACK_EXT_STRUCT_NAME,
            &(TAG, IdBytes(self.0.to_be_bytes())),
        )
    }
}

/// A checkpoint's table while its fields decode: entries as bytes, decoded on first use.
pub(crate) struct Resolver {
    bytes: Vec<u8>,
    ranges: Vec<Range<usize>>,
    decoded: Vec<Option<AnyArc>>,
    /// Entries being decoded, outermost first: one met again inside itself is a cycle.
    decoding: Vec<u32>,
    version: Option<Arc<str>>,
}

impl Resolver {
    /// The table from its whole encoding (an array) at `version`.
    pub(crate) fn new(bytes: Vec<u8>, version: Option<Arc<str>>) -> Result<Self, String> {
        let ranges = codec::split_array(&bytes).ok_or("the shared-value table is not an array")?;
        Ok(Resolver {
            decoded: vec![None; ranges.len()],
            bytes,
            ranges,
            decoding: Vec::new(),
            version,
        })
    }

    /// No table (a checkpoint that stored no shared value).
    pub(crate) fn empty() -> Self {
        Resolver {
            bytes: Vec::new(),
            ranges: Vec::new(),
            decoded: Vec::new(),
            decoding: Vec::new(),
            version: None,
        }
    }

    /// The entry's bytes with every reference inside replaced by the entry it names (for
    /// readers that decode without the state's types). An error past [`MAX_EXPANSION`], for a
    /// reference cycle, and when shared values nest too deep.
    pub(crate) fn expand(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let mut expansion = Expansion {
            resolver: self,
            out: Vec::with_capacity(bytes.len()),
            cost: 0,
            open: vec![false; self.ranges.len()],
        };
        let end = expansion.value(bytes, 0, 0)?;
        if end != bytes.len() {
            return Err("trailing bytes after a value".to_owned());
        }
        Ok(expansion.out)
    }

    /// The run's interner after this checkpoint: every entry decoded so far keeps its index.
    pub(crate) fn into_interner(self) -> Interner {
        let len = self.ranges.len() as u32;
        let ids = self
            .decoded
            .into_iter()
            .enumerate()
            .filter_map(|(i, arc)| arc.map(|arc| (address(&arc), (i as u32, arc))))
            .collect();
        Interner {
            ids: Some(Arc::new(ids)),
            base: None,
            used: false,
            last: None,
            len,
            stored: len,
            fresh: Vec::new(),
            version: self.version,
        }
    }
}

/// One [`Resolver::expand`]: the bytes written so far and what they cost.
struct Expansion<'a> {
    resolver: &'a Resolver,
    out: Vec<u8>,
    /// Bytes written plus [`VALUE_COST`] per value.
    cost: usize,
    /// Entries being expanded (a reference to one of them is a cycle).
    open: Vec<bool>,
}

impl Expansion<'_> {
    /// Writes the value at `at` in `bytes`, references expanded; returns where it ends.
    fn value(&mut self, bytes: &[u8], at: usize, depth: usize) -> Result<usize, String> {
        const MALFORMED: &str = "malformed MessagePack";
        if depth > MAX_EXPANSION_DEPTH {
            return Err(format!(
                "the value nests deeper than {MAX_EXPANSION_DEPTH} levels (shared values included)"
            ));
        }
        let marker = *bytes.get(at).ok_or(MALFORMED)?;
        // fixext4 (0xd6) with our type: a reference.
        if marker == 0xd6 && bytes.get(at + 1) == Some(&(TAG as u8)) {
            let id = bytes.get(at + 2..at + 6).ok_or(MALFORMED)?;
            let id = Ref::parse(TAG, id)? as usize;
            let resolver = self.resolver;
            let range = resolver.ranges.get(id).ok_or_else(|| {
                format!(
                    "reference to shared value {id} of {}",
                    resolver.ranges.len()
                )
            })?;
            if std::mem::replace(&mut self.open[id], true) {
                return Err(format!("shared value {id} contains itself"));
            }
            self.value(&resolver.bytes[range.clone()], 0, depth + 1)?;
            self.open[id] = false;
            return Ok(at + 6);
        }
        let (items, header) = match marker {
            0x80..=0x8f => (2 * (marker & 0x0f) as usize, 1),
            0x90..=0x9f => ((marker & 0x0f) as usize, 1),
            0xdc => (codec::read_be(bytes, at + 1, 2).ok_or(MALFORMED)?, 3),
            0xdd => (codec::read_be(bytes, at + 1, 4).ok_or(MALFORMED)?, 5),
            0xde => (2 * codec::read_be(bytes, at + 1, 2).ok_or(MALFORMED)?, 3),
            0xdf => (2 * codec::read_be(bytes, at + 1, 4).ok_or(MALFORMED)?, 5),
            _ => {
                let end = codec::skip_value(bytes, at).ok_or(MALFORMED)?;
                self.write(&bytes[at..end])?;
                return Ok(end);
            }
        };
        self.write(bytes.get(at..at + header).ok_or(MALFORMED)?)?;
        let mut at = at + header;
        for _ in 0..items {
            at = self.value(bytes, at, depth + 1)?;
        }
        Ok(at)
    }

    /// Appends one value's bytes (a scalar, or a container's header), charging its cost.
    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.cost = self.cost.saturating_add(bytes.len() + VALUE_COST);
        if self.cost > MAX_EXPANSION {
            return Err(format!(
                "the value with its shared values written out exceeds {} MiB",
                MAX_EXPANSION >> 20
            ));
        }
        self.out.extend_from_slice(bytes);
        Ok(())
    }
}

enum Slot {
    Empty,
    Encoding(Interner),
    Decoding(Resolver),
}

thread_local! {
    static SLOT: RefCell<Slot> = const { RefCell::new(Slot::Empty) };
}

/// Puts the slot back as it was, even when the closure panics.
struct Restore(Option<Slot>);

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(previous) = self.0.take() {
            SLOT.with(|slot| *slot.borrow_mut() = previous);
        }
    }
}

fn with_slot<R>(state: Slot, f: impl FnOnce() -> R) -> (R, Slot) {
    let previous = SLOT.with(|slot| std::mem::replace(&mut *slot.borrow_mut(), state));
    let mut guard = Restore(Some(previous));
    let out = f();
    let previous = guard.0.take().unwrap_or(Slot::Empty);
    let state = SLOT.with(|slot| std::mem::replace(&mut *slot.borrow_mut(), previous));
    (out, state)
}

/// Runs `f` (which encodes checkpoint fields) with `interner` numbering the shared values.
pub(crate) fn encoding<R>(interner: &mut Interner, f: impl FnOnce() -> R) -> R {
    let (out, state) = with_slot(Slot::Encoding(std::mem::take(interner)), f);
    if let Slot::Encoding(back) = state {
        *interner = back;
    }
    out
}

/// Runs `f` (which decodes checkpoint fields) with `resolver` answering references.
pub(crate) fn decoding<R>(resolver: &mut Resolver, f: impl FnOnce() -> R) -> R {
    let (out, state) = with_slot(
        Slot::Decoding(std::mem::replace(resolver, Resolver::empty())),
        f,
    );
    if let Slot::Decoding(back) = state {
        *resolver = back;
    }
    out
}

fn address(arc: &AnyArc) -> usize {
    Arc::as_ptr(arc) as *const () as usize
}

/// The index of the shared value at address `key` in the encoding run's table (numbered
/// now, kept alive by `value()` and encoded by `encode`, if it is new); `None` when no
/// checkpoint is being encoded on this thread.
pub(crate) fn intern(
    key: usize,
    value: impl FnOnce() -> AnyArc,
    encode: impl FnOnce() -> Result<Vec<u8>, String>,
) -> Option<Result<u32, String>> {
    let id = SLOT.with(|slot| match &mut *slot.borrow_mut() {
        Slot::Encoding(interner) => {
            interner.used = true;
            if let Some((last, id)) = interner.last
                && last == key
            {
                return Some(Ok(id));
            }
            let stored = interner
                .base
                .as_ref()
                .and_then(|(base, len)| base.get(&key).map(|(id, _)| *id).filter(|id| id < len));
            let found = stored.or_else(|| {
                interner
                    .ids
                    .as_ref()
                    .and_then(|ids| ids.get(&key))
                    .map(|(id, _)| *id)
            });
            let id = match found {
                Some(id) => Ok(id),
                None => {
                    let id = interner.len;
                    interner.len += 1;
                    let ids = interner.ids.get_or_insert_with(Default::default);
                    Arc::make_mut(ids).insert(key, (id, value()));
                    interner.fresh.push(None);
                    Err(id)
                }
            };
            interner.last = Some((key, id.unwrap_or_else(|new| new)));
            Some(id)
        }
        _ => None,
    })?;
    let new = match id {
        Ok(known) => return Some(Ok(known)),
        Err(new) => new,
    };
    // Encoded with the slot released: the value may hold shared values of its own.
    let bytes = match encode() {
        Ok(bytes) => bytes,
        Err(e) => return Some(Err(e)),
    };
    SLOT.with(|slot| {
        if let Slot::Encoding(interner) = &mut *slot.borrow_mut()
            && let Some(entry) = interner.fresh.get_mut((new - interner.stored) as usize)
        {
            *entry = Some(bytes);
        }
    });
    Some(Ok(new))
}

/// Whether a checkpoint is being decoded on this thread.
pub(crate) fn resolving() -> bool {
    SLOT.with(|slot| matches!(&*slot.borrow(), Slot::Decoding(_)))
}

/// The value of entry `id` as a `T`: decoded on first use, the same `Arc` after.
pub(crate) fn resolve<T>(id: u32) -> Result<Arc<T>, String>
where
    T: serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let index = id as usize;
    let bytes = SLOT.with(|slot| match &mut *slot.borrow_mut() {
        Slot::Decoding(resolver) => {
            if let Some(Some(arc)) = resolver.decoded.get(index)
                && let Ok(arc) = Arc::clone(arc).downcast::<T>()
            {
                return Ok(Err(arc));
            }
            let range = resolver.ranges.get(index).ok_or_else(|| {
                format!(
                    "reference to shared value {id}, but the table has {}",
                    resolver.ranges.len()
                )
            })?;
            if resolver.decoding.contains(&id) {
                return Err(format!("shared value {id} contains itself"));
            }
            let bytes = resolver.bytes[range.clone()].to_vec();
            resolver.decoding.push(id);
            Ok(Ok(bytes))
        }
        _ => Err("a shared-value reference outside a checkpoint".to_owned()),
    })?;
    let bytes = match bytes {
        Err(known) => return Ok(known),
        Ok(bytes) => bytes,
    };
    // Decoded with the slot released: the value may reference other entries (and nests in
    // the decode that met the reference: one depth budget for both).
    let value = codec::decode(&bytes).map(Arc::<T>::new);
    SLOT.with(|slot| {
        if let Slot::Decoding(resolver) = &mut *slot.borrow_mut() {
            resolver.decoding.pop();
            if let (Ok(value), Some(entry)) = (&value, resolver.decoded.get_mut(index))
                && entry.is_none()
            {
                *entry = Some(value.clone());
            }
        }
    });
    value
}

/// Encodes a value that is stored on its own (a pending write, a `Send` input): shared values
/// it holds are written as references, to `thread`'s stored entries when it is given, else to
/// a table of its own that travels with the value (an extension of type `LOCAL_TAG`: the
/// number of the thread's entries it may reference as a big-endian `u32`, its own entries
/// numbered after those, then the value). A value that holds no shared value encodes as plain
/// MessagePack.
pub(crate) fn encode_with_table<T: Serialize + ?Sized>(
    value: &T,
    thread: Option<&Interner>,
) -> Result<Vec<u8>, String> {
    let mut interner = thread.map_or_else(Interner::default, Interner::over);
    let body = encoding(&mut interner, || codec::encode(value))?;
    if !interner.used {
        return Ok(body);
    }
    let mut payload = Vec::with_capacity(body.len() + 16);
    payload.extend_from_slice(&interner.stored.to_be_bytes());
    codec::write_array_header(&mut payload, interner.fresh.len());
    for entry in interner.fresh {
        payload.extend(entry.ok_or("a shared value was still being encoded")?);
    }
    payload.extend(body);
    let len = u32::try_from(payload.len()).map_err(|_| "a value over 4 GiB".to_owned())?;
    let mut out = Vec::with_capacity(payload.len() + 6);
    out.push(0xc9);
    out.extend_from_slice(&len.to_be_bytes());
    out.push(LOCAL_TAG as u8);
    out.extend(payload);
    Ok(out)
}

/// Decodes what [`encode_with_table`] wrote (or plain MessagePack); `thread` is the table of
/// the checkpoint the value was stored next to.
pub(crate) fn decode_with_table<T>(bytes: &[u8], thread: Option<&Resolver>) -> Result<T, String>
where
    T: serde::de::DeserializeOwned,
{
    if !(bytes.len() >= 6 && bytes[0] == 0xc9 && bytes[5] == LOCAL_TAG as u8) {
        return codec::decode(bytes);
    }
    const MALFORMED: &str = "a value with its table of shared values is malformed";
    let len = codec::read_be(bytes, 1, 4).ok_or(MALFORMED)?;
    let payload = bytes.get(6..).filter(|p| p.len() == len).ok_or(MALFORMED)?;
    let base = codec::read_be(payload, 0, 4).ok_or(MALFORMED)?;
    let table_end = codec::skip_value(payload, 4).ok_or(MALFORMED)?;
    let own = Resolver::new(payload[4..table_end].to_vec(), None)?;
    let mut resolver = if base == 0 {
        own
    } else {
        let thread = thread.filter(|t| t.ranges.len() >= base).ok_or_else(|| {
            format!(
                "it references {base} shared values of its checkpoint, which has {}",
                thread.map_or(0, |t| t.ranges.len())
            )
        })?;
        let end = thread.ranges[base - 1].end;
        let mut bytes = thread.bytes[..end].to_vec();
        let mut ranges = thread.ranges[..base].to_vec();
        ranges.extend(own.ranges.iter().map(|r| r.start + end..r.end + end));
        bytes.extend_from_slice(&own.bytes);
        let mut decoded = thread.decoded[..base].to_vec();
        decoded.extend(own.decoded);
        Resolver {
            bytes,
            ranges,
            decoded,
            decoding: Vec::new(),
            version: None,
        }
    };
    decoding(&mut resolver, || codec::decode(&payload[table_end..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shared;

    type Pair = (Shared<Vec<u32>>, Shared<Vec<u32>>);

    #[test]
    fn a_value_on_its_own_stores_each_shared_value_once() {
        let doc = Shared::new("x".repeat(1000));
        let list = vec![doc.clone(), doc.clone(), Shared::new("y".to_owned()), doc];
        let bytes = encode_with_table(&list, None).unwrap();
        assert!(bytes.len() < 1100, "{} bytes", bytes.len());
        let back: Vec<Shared<String>> = decode_with_table(&bytes, None).unwrap();
        assert_eq!(back, list);
        assert!(Shared::ptr_eq(&back[0], &back[3]));
        // Without shared values: plain MessagePack, as before tables existed.
        let plain = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(
            encode_with_table(&plain, None).unwrap(),
            codec::encode(&plain).unwrap()
        );
    }

    #[test]
    fn references_expand_for_untyped_readers_and_inline_values_still_decode() {
        let doc = Shared::new(vec![1u32, 2, 3]);
        let mut interner = Interner::default();
        let body = encoding(&mut interner, || codec::encode(&(doc.clone(), doc.clone()))).unwrap();
        let table = interner.take_blob(&"v1".into()).unwrap().unwrap();
        assert_eq!(table.base, None);
        let resolver = Resolver::new(table.data, Some("v1".into())).unwrap();
        let whole: serde_json::Value = codec::decode(&resolver.expand(&body).unwrap()).unwrap();
        assert_eq!(whole, serde_json::json!([[1, 2, 3], [1, 2, 3]]));
        // A value stored inline (before it was a `Shared`) decodes while references resolve.
        let mut resolver = resolver;
        let inline = codec::encode(&(vec![7u32], vec![8u32])).unwrap();
        let back: Pair = decoding(&mut resolver, || codec::decode(&inline)).unwrap();
        assert_eq!((back.0.to_vec(), back.1.to_vec()), (vec![7], vec![8]));
        // A reference past the table is an error, not a panic.
        let mut empty = Resolver::empty();
        let bad: Result<Pair, String> = decoding(&mut empty, || codec::decode(&body));
        assert!(bad.unwrap_err().contains("shared value 0"));
    }

    #[test]
    fn later_checkpoints_store_only_new_entries() {
        let a = Shared::new("a".repeat(100));
        let b = Shared::new("b".repeat(100));
        let mut interner = Interner::default();
        encoding(&mut interner, || codec::encode(&vec![a.clone(), a.clone()])).unwrap();
        let first = interner.take_blob(&"v1".into()).unwrap().unwrap();
        encoding(&mut interner, || codec::encode(&vec![a.clone(), b.clone()])).unwrap();
        let second = interner.take_blob(&"v2".into()).unwrap().unwrap();
        assert_eq!(second.base, Some(("v1".into(), 1)));
        assert!(
            second.data.len() < 110,
            "only b: {} bytes",
            second.data.len()
        );
        encoding(&mut interner, || codec::encode(&vec![b])).unwrap();
        assert!(
            interner.take_blob(&"v3".into()).unwrap().is_none(),
            "nothing new"
        );
        assert!(first.data.len() < 110);
    }

    #[test]
    fn a_value_numbered_for_a_discarded_checkpoint_is_stored_with_the_next() {
        let a = Shared::new("a".repeat(100));
        let b = Shared::new("b".repeat(100));
        let mut interner = Interner::default();
        encoding(&mut interner, || codec::encode(&vec![a.clone()])).unwrap();
        let first = interner.take_blob(&"v1".into()).unwrap().unwrap();
        // b is numbered, then its checkpoint fails to encode: nothing stored refers to it.
        encoding(&mut interner, || codec::encode(&vec![b.clone(), b.clone()])).unwrap();
        interner.discard_fresh();
        let body = encoding(&mut interner, || codec::encode(&vec![b.clone(), a.clone()])).unwrap();
        let second = interner
            .take_blob(&"v2".into())
            .unwrap()
            .expect("b is stored now");
        assert_eq!(second.base, Some(("v1".into(), 1)));
        let mut table = first.data;
        table[0] += 1; // the array header: one entry more
        table.extend(second.data);
        let mut resolver = Resolver::new(table, Some("v2".into())).unwrap();
        let back: Vec<Shared<String>> = decoding(&mut resolver, || codec::decode(&body)).unwrap();
        assert_eq!(back, vec![b, a]);
    }
}
