//! The checkpoint format: MessagePack (rmp-serde, struct fields by name), versioned, with
//! per-field blobs and two kinds of delta on a field's stored version.
//!
//! - Element deltas: a field whose encoding is an array, and whose previous stored version is
//!   a prefix of the new one, is stored as "the first n elements of version v, then these":
//!   the prefix check compares each element's bytes with the last stored version's, so it works
//!   for any sequence type and any reducer (a message replaced in place just moves the split
//!   point).
//! - Byte splices ([`splice`](super::splice)): any other new version that keeps at least half
//!   of its bytes from the stored one (a string that grew, a value edited in place) is stored
//!   as the ranges it keeps and the bytes it adds. A chain holds at most [`MAX_SPLICES`] of
//!   them before a whole value, so a load replays a bounded amount of work.
//!
//! Decoding never runs code from the data: it is plain serde into the state's own types, and
//! any mismatch is an error.

use std::collections::HashMap;
use std::mem::take;
use std::ops::Range;

use super::msgpack;
use super::{FieldBlob, compress, nesting, splice};

/// Byte splices a delta chain may hold before the next version is stored whole.
pub(crate) const MAX_SPLICES: u32 = 16;

/// Version of the body layout below; bump on incompatible changes.
pub(crate) const FORMAT: u32 = 1;

/// What a checkpoint needs besides field values, to resume exactly where it stopped.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Body {
    pub(crate) format: u32,
    /// Edge-triggered nodes of the next step.
    pub(crate) next: Vec<String>,
    /// `Send` tasks of the next step: node and its input (an encoded full update).
    pub(crate) sends: Vec<(String, serde_bytes_vec::Bytes)>,
    /// Join barriers: which sources have arrived.
    pub(crate) joins: Vec<Vec<bool>>,
    /// The field names of the state that wrote it (for compatibility checks).
    pub(crate) fields: Vec<String>,
    /// The nodes whose writes made this checkpoint's step (`__start__` for the input step);
    /// `update_state` without `as_node` acts as the one writer, when there is one.
    #[serde(default)]
    pub(crate) writers: Vec<String>,
    /// Positions in `sends` whose bytes are the target node's own input (a `Send::input`,
    /// encoded as that type), not a state update. Checkpoints from before typed inputs have
    /// none.
    #[serde(default)]
    pub(crate) input_sends: Vec<u32>,
}

/// [`Body`] as serde writes it: what the executor's own body encoder must match byte for byte.
#[cfg(test)]
#[derive(serde::Serialize)]
pub(crate) struct BodyRef<'a> {
    pub(crate) format: u32,
    pub(crate) next: Vec<&'a str>,
    pub(crate) sends: Vec<(&'a str, serde_bytes_vec::Bytes)>,
    pub(crate) joins: &'a [Vec<bool>],
    pub(crate) fields: FieldNames,
    pub(crate) writers: &'a [&'a str],
    pub(crate) input_sends: Vec<u32>,
}

/// A state's field names, encoded as a list without collecting them.
#[cfg(test)]
pub(crate) struct FieldNames(pub(crate) &'static [crate::state::FieldInfo]);

#[cfg(test)]
impl serde::Serialize for FieldNames {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|f| f.name))
    }
}

/// Byte vectors encoded as MessagePack bin (not arrays of numbers).
pub(crate) mod serde_bytes_vec {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Bytes that serialize as one binary blob.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub(crate) struct Bytes(pub(crate) Vec<u8>);

    impl Serialize for Bytes {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }

    impl<'de> Deserialize<'de> for Bytes {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Bytes;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                    Ok(Bytes(v.to_vec()))
                }
                fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                    Ok(Bytes(v))
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Bytes, A::Error> {
                    let mut out = Vec::new();
                    while let Some(b) = seq.next_element::<u8>()? {
                        out.push(b);
                    }
                    Ok(Bytes(out))
                }
            }
            d.deserialize_bytes(V)
        }
    }
}

/// Encodes a serde value as MessagePack with named struct fields.
pub(crate) fn encode<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, String> {
    msgpack::to_vec_named(value).map_err(|e| e.to_string())
}

/// Decodes MessagePack into a serde value (refused when it nests too deep: see
/// [`nesting`](super::nesting)).
pub(crate) fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let _nesting = nesting::enter(bytes)?;
    rmp_serde::from_slice(bytes).map_err(|e| e.to_string())
}

/// What the writer remembers of the last stored version of a field.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldCache {
    pub(crate) version: std::sync::Arc<str>,
    /// Its encoding: for an array, the elements' ranges too, so the next version is compared
    /// element by element and a delta is never based on a lookalike; for anything else, the
    /// whole encoding.
    encoding: Encoding,
    /// Byte splices in the delta chain that rebuilds this version.
    splices: u32,
    /// The buffers of the version before (emptied), for encoding the next one: a field
    /// rewritten every step (a growing reply, a joke bumped at each step) is encoded without
    /// allocating and freeing a buffer of its size every checkpoint.
    spare: Spare,
}

/// Emptied buffers kept for the next encoding of a field.
#[derive(Debug, Clone, Default)]
struct Spare {
    bytes: Vec<u8>,
    ranges: Vec<Range<usize>>,
}

/// A buffer larger than this is not kept as a spare (a large field would keep twice its
/// size for the run).
const SPARE_UP_TO: usize = 64 << 10;

impl Spare {
    /// The buffers of `encoding`, emptied, when they are small enough to keep.
    fn of(encoding: Encoding) -> Spare {
        let (mut bytes, mut ranges) = Spare::parts(encoding);
        if bytes.capacity() > SPARE_UP_TO {
            bytes = Vec::new();
        }
        if ranges.capacity() * std::mem::size_of::<Range<usize>>() > SPARE_UP_TO {
            ranges = Vec::new();
        }
        bytes.clear();
        ranges.clear();
        Spare { bytes, ranges }
    }

    /// The buffers `encoding` is made of.
    fn parts(encoding: Encoding) -> (Vec<u8>, Vec<Range<usize>>) {
        match encoding {
            Encoding::Unknown => (Vec::new(), Vec::new()),
            Encoding::Unsplit(bytes) | Encoding::Other(bytes) => (bytes, Vec::new()),
            Encoding::Array { bytes, ranges } => (bytes, ranges),
        }
    }
}

#[derive(Debug, Clone, Default)]
enum Encoding {
    #[default]
    Unknown,
    /// The whole encoding, not looked into yet: split on first use, so a version no later
    /// checkpoint compares against costs nothing beyond keeping its bytes.
    Unsplit(Vec<u8>),
    /// An array: its whole encoding (the header kept up to date as elements are appended) and
    /// the byte ranges of its elements.
    Array {
        bytes: Vec<u8>,
        ranges: Vec<Range<usize>>,
    },
    Other(Vec<u8>),
}

impl FieldCache {
    fn new(version: &std::sync::Arc<str>, bytes: Vec<u8>) -> Self {
        FieldCache {
            version: version.clone(),
            encoding: Encoding::Unsplit(bytes),
            splices: 0,
            spare: Spare::default(),
        }
    }

    /// An empty buffer for encoding the field's next version: the version before's, reused.
    pub(crate) fn take_buffer(&mut self) -> Vec<u8> {
        take(&mut self.spare.bytes)
    }

    /// The stored version's whole encoding, when kept.
    fn bytes(&self) -> Option<&[u8]> {
        match &self.encoding {
            Encoding::Unknown => None,
            Encoding::Unsplit(bytes) | Encoding::Other(bytes) | Encoding::Array { bytes, .. } => {
                Some(bytes)
            }
        }
    }

    /// Looks into an unsplit encoding: an array or something else.
    fn settle(&mut self) {
        if let Encoding::Unsplit(bytes) = &mut self.encoding {
            let bytes = take(bytes);
            self.encoding = match split_array(&bytes) {
                Some(ranges) => Encoding::Array { bytes, ranges },
                None => Encoding::Other(bytes),
            };
        }
    }

    /// The length of the stored version's whole encoding, when kept (a size hint for the
    /// next one).
    pub(crate) fn encoded_len(&self) -> Option<usize> {
        self.bytes().map(<[u8]>::len)
    }

    /// How many elements the stored version has, when it is an array.
    pub(crate) fn array_len(&mut self) -> Option<usize> {
        self.settle();
        match &self.encoding {
            Encoding::Array { ranges, .. } => Some(ranges.len()),
            _ => None,
        }
    }
}

/// Builds the blob for a new version of a field from its whole encoding and moves `cache`
/// onto it: `None` when it equals the stored version (the field keeps its version), an element
/// delta when the stored version is a prefix of it (compared element by element), a byte
/// splice when it keeps most of the stored version's bytes otherwise, else the whole value.
/// With `keep` false (no later checkpoint of this run will compare against it: the run's one
/// checkpoint with `Durability::Exit`) the cache is dropped and the bytes move into the blob
/// uncopied.
pub(crate) fn make_blob(
    field: &'static str,
    version: &std::sync::Arc<str>,
    bytes: Vec<u8>,
    cache: &mut Option<FieldCache>,
    keep: bool,
) -> Option<FieldBlob> {
    let mut kept = None;
    let mut spliced = None;
    let mut new_ranges = None;
    let mut splices = 0;
    if let Some(previous) = cache.as_mut() {
        previous.settle();
        match &previous.encoding {
            Encoding::Array {
                bytes: old_bytes,
                ranges: old,
            } => {
                let spare_ranges = take(&mut previous.spare.ranges);
                if let Some(new) = split_array_into(&bytes, spare_ranges) {
                    let common = old
                        .iter()
                        .zip(new.iter())
                        .take_while(|(a, b)| old_bytes[(*a).clone()] == bytes[(*b).clone()])
                        .count();
                    if common == old.len() && common == new.len() {
                        previous.spare = Spare::of(Encoding::Array { bytes, ranges: new });
                        return None;
                    }
                    // Worth it only when most of the old value is kept.
                    if common > 0 && common * 2 >= old.len() {
                        kept = Some((previous.version.clone(), common));
                    }
                    new_ranges = Some(new);
                }
            }
            Encoding::Other(old) if *old == bytes => {
                previous.spare = Spare::of(Encoding::Other(bytes));
                return None;
            }
            _ => {}
        }
        splices = previous.splices;
        if kept.is_none()
            && splices < MAX_SPLICES
            && let Some(old) = previous.bytes()
        {
            spliced = splice::diff(old, &bytes).map(|ops| {
                let base = (previous.version.clone(), splice::FLAG | old.len() as u64);
                (base, ops)
            });
        }
    }
    let (base, data) = match (kept, spliced) {
        (Some((v, common)), _) => {
            let start = new_ranges
                .as_ref()
                .and_then(|new| new.get(common))
                .map_or(bytes.len(), |r| r.start);
            (Some((v, common as u64)), bytes[start..].to_vec())
        }
        (None, Some((base, ops))) => {
            splices += 1;
            (Some(base), ops)
        }
        (None, None) => {
            splices = 0;
            if !keep {
                *cache = None;
                return Some(FieldBlob {
                    field: field.into(),
                    version: version.clone(),
                    base: None,
                    data: bytes,
                });
            }
            (None, bytes.clone())
        }
    };
    let blob = FieldBlob {
        field: field.into(),
        version: version.clone(),
        base,
        data,
    };
    let spare = cache
        .take()
        .map_or_else(Spare::default, |mut old| Spare::of(take(&mut old.encoding)));
    *cache = keep.then(|| FieldCache {
        version: version.clone(),
        encoding: match new_ranges {
            Some(ranges) => Encoding::Array { bytes, ranges },
            None => Encoding::Unsplit(bytes),
        },
        splices,
        spare,
    });
    Some(blob)
}

/// Stores `blob`'s data compressed when that pays (see [`compress`]), tried as its field's
/// `hint` says.
pub(crate) fn compressed(mut blob: FieldBlob, hint: &compress::Hint) -> FieldBlob {
    blob.data = compress::compress_hinted(blob.data, hint);
    blob
}

/// The elements a field gained by appends since its stored version, encoded alone: what
/// [`TailSerializer`] produced.
pub(crate) struct Tail {
    /// Elements of the new value.
    pub(crate) len: usize,
    /// Encodings of the elements past the stored version's, concatenated.
    pub(crate) bytes: Vec<u8>,
}

/// Builds the blob for a field that was only appended to since `cache`'s version was stored
/// and moves `cache` onto it: a delta holding the new elements (`None` when there are none).
/// `Err` when the tail does not fit the stored version (`cache` is untouched; the caller
/// encodes the field whole).
pub(crate) fn append_blob(
    field: &'static str,
    version: &std::sync::Arc<str>,
    tail: Tail,
    cache: &mut FieldCache,
) -> Result<Option<FieldBlob>, ()> {
    cache.settle();
    let Encoding::Array {
        bytes: elements,
        ranges,
    } = &mut cache.encoding
    else {
        return Err(());
    };
    let kept = ranges.len();
    if tail.len < kept {
        return Err(());
    }
    if tail.len == kept {
        return Ok(None);
    }
    let mut added = Vec::with_capacity(tail.len - kept);
    let mut at = 0;
    while at < tail.bytes.len() {
        let end = skip_value(&tail.bytes, at).ok_or(())?;
        added.push(at..end);
        at = end;
    }
    if kept + added.len() != tail.len {
        return Err(());
    }
    // The header now counts the new elements (a later splice is based on these exact bytes).
    set_array_len(elements, ranges, tail.len).ok_or(())?;
    let offset = elements.len();
    ranges.extend(added.into_iter().map(|r| r.start + offset..r.end + offset));
    elements.extend_from_slice(&tail.bytes);
    let base = std::mem::replace(&mut cache.version, version.clone());
    Ok(Some(FieldBlob {
        field: field.into(),
        version: version.clone(),
        base: Some((base, kept as u64)),
        data: tail.bytes,
    }))
}

/// A serializer for a sequence field that encodes only its elements past the first `skip`
/// (what appends added since the stored version), each as the whole encoding would. Anything
/// that is not a sequence is an error: the caller encodes the field whole.
pub(crate) struct TailSerializer {
    pub(crate) skip: usize,
}

/// Why [`TailSerializer`] gave up.
#[derive(Debug)]
pub(crate) struct TailError(String);

impl std::fmt::Display for TailError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TailError {}

impl serde::ser::Error for TailError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        TailError(msg.to_string())
    }
}

/// The elements of a [`TailSerializer`]'s sequence.
pub(crate) struct TailSeq {
    skip: usize,
    index: usize,
    bytes: Vec<u8>,
}

impl serde::ser::SerializeSeq for TailSeq {
    type Ok = Tail;
    type Error = TailError;

    fn serialize_element<T: ?Sized + serde::Serialize>(
        &mut self,
        value: &T,
    ) -> Result<(), TailError> {
        if self.index >= self.skip {
            value
                .serialize(&mut msgpack::Packer::named(&mut self.bytes))
                .map_err(|e| TailError(e.to_string()))?;
        }
        self.index += 1;
        Ok(())
    }

    fn end(self) -> Result<Tail, TailError> {
        Ok(Tail {
            len: self.index,
            bytes: self.bytes,
        })
    }
}

type Impossible = serde::ser::Impossible<Tail, TailError>;

impl serde::Serializer for TailSerializer {
    type Ok = Tail;
    type Error = TailError;
    type SerializeSeq = TailSeq;
    type SerializeTuple = Impossible;
    type SerializeTupleStruct = Impossible;
    type SerializeTupleVariant = Impossible;
    type SerializeMap = Impossible;
    type SerializeStruct = Impossible;
    type SerializeStructVariant = Impossible;

    fn serialize_seq(self, _len: Option<usize>) -> Result<TailSeq, TailError> {
        Ok(TailSeq {
            skip: self.skip,
            index: 0,
            bytes: Vec::new(),
        })
    }

    fn serialize_newtype_struct<T: ?Sized + serde::Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Tail, TailError> {
        // rmp-serde encodes a newtype struct as its content.
        value.serialize(self)
    }

    fn serialize_some<T: ?Sized + serde::Serialize>(self, _value: &T) -> Result<Tail, TailError> {
        Err(TailError("not a sequence".to_owned()))
    }

    fn serialize_newtype_variant<T: ?Sized + serde::Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<Tail, TailError> {
        Err(TailError("not a sequence".to_owned()))
    }

    refuse_serialize! {
        TailError("not a sequence".to_owned());
        serialize_bool(bool) -> Tail;
        serialize_i8(i8) -> Tail;
        serialize_i16(i16) -> Tail;
        serialize_i32(i32) -> Tail;
        serialize_i64(i64) -> Tail;
        serialize_u8(u8) -> Tail;
        serialize_u16(u16) -> Tail;
        serialize_u32(u32) -> Tail;
        serialize_u64(u64) -> Tail;
        serialize_f32(f32) -> Tail;
        serialize_f64(f64) -> Tail;
        serialize_char(char) -> Tail;
        serialize_str(&str) -> Tail;
        serialize_bytes(&[u8]) -> Tail;
        serialize_none() -> Tail;
        serialize_unit() -> Tail;
        serialize_unit_struct(&'static str) -> Tail;
        serialize_unit_variant(&'static str, u32, &'static str) -> Tail;
        serialize_tuple(usize) -> Impossible;
        serialize_tuple_struct(&'static str, usize) -> Impossible;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Impossible;
        serialize_map(Option<usize>) -> Impossible;
        serialize_struct(&'static str, usize) -> Impossible;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Impossible;
    }
}

/// `blobs` by (field, version): what [`reconstruct`] looks delta bases up in.
pub(crate) fn blob_index(blobs: &[FieldBlob]) -> HashMap<(&str, &str), &FieldBlob> {
    blobs
        .iter()
        .map(|b| ((&*b.field, &*b.version), b))
        .collect()
}

/// Rebuilds the full encoding of `field` at `version` from blobs (following delta bases).
/// Returns the bytes and the cache for writing later deltas.
pub(crate) fn reconstruct(
    field: &str,
    version: &str,
    blobs: &HashMap<(&str, &str), &FieldBlob>,
) -> Result<(Vec<u8>, FieldCache), String> {
    // Walk to the full blob, then replay forward.
    let mut chain: Vec<&FieldBlob> = Vec::new();
    let mut key = (field, version);
    let mut splices = 0;
    loop {
        let blob = blobs
            .get(&key)
            .ok_or_else(|| format!("blob of field `{}` version `{}` is missing", key.0, key.1))?;
        chain.push(blob);
        match &blob.base {
            Some((base, count)) => {
                // Longer than the blobs there are: it goes round in a cycle.
                if chain.len() > blobs.len() {
                    return Err(format!(
                        "the delta chain of version `{version}` goes round in a cycle"
                    ));
                }
                // The writer stores a whole value after MAX_SPLICES of them, so a longer run
                // is corrupt (and each splice replays its whole base).
                if splice::is_splice(*count) {
                    splices += 1;
                    if splices > MAX_SPLICES {
                        return Err(format!(
                            "the delta chain of version `{version}` holds more than {MAX_SPLICES} byte splices"
                        ));
                    }
                }
                key = (field, &**base);
            }
            None => break,
        }
    }
    // The version asked for, as the shared string its blob holds (the cache keeps it).
    let latest = chain.first().map(|blob| blob.version.clone());
    let (Some(latest), Some(full)) = (latest, chain.pop()) else {
        return Err("empty blob chain".to_owned());
    };
    let mut value = Rebuilt::Bytes(compress::expand(&full.data)?.into_owned());
    while let Some(delta) = chain.pop() {
        let Some((_, count)) = &delta.base else {
            return Err("broken delta chain".to_owned());
        };
        let data = compress::expand(&delta.data)?;
        if splice::is_splice(*count) {
            let base = value.into_bytes();
            let expected = count & !splice::FLAG;
            if base.len() as u64 != expected {
                return Err(format!(
                    "a splice of version `{}` expects a {expected}-byte base, found {}",
                    delta.version,
                    base.len()
                ));
            }
            value = Rebuilt::Bytes(splice::apply(&base, &data)?);
            continue;
        }
        let mut elements = value.into_elements()?;
        let keep = *count as usize;
        if keep > elements.len() {
            return Err(format!(
                "delta keeps {keep} elements but its base has {}",
                elements.len()
            ));
        }
        elements.truncate(keep);
        let mut at = 0;
        while at < data.len() {
            let end = skip_value(&data, at).ok_or("malformed delta elements")?;
            elements.push(data[at..end].to_vec());
            at = end;
        }
        value = Rebuilt::Elements(elements);
    }
    let bytes = value.into_bytes();
    let mut cache = FieldCache::new(&latest, bytes.clone());
    cache.splices = splices;
    Ok((bytes, cache))
}

/// A value being rebuilt from a delta chain: element deltas work on its elements, splices on
/// its bytes; it changes form only when the next delta's kind does.
enum Rebuilt {
    Bytes(Vec<u8>),
    Elements(Vec<Vec<u8>>),
}

impl Rebuilt {
    fn into_bytes(self) -> Vec<u8> {
        match self {
            Rebuilt::Bytes(bytes) => bytes,
            Rebuilt::Elements(elements) => {
                let mut bytes =
                    Vec::with_capacity(elements.iter().map(Vec::len).sum::<usize>() + 5);
                write_array_header(&mut bytes, elements.len());
                for e in &elements {
                    bytes.extend_from_slice(e);
                }
                bytes
            }
        }
    }

    fn into_elements(self) -> Result<Vec<Vec<u8>>, String> {
        match self {
            Rebuilt::Elements(elements) => Ok(elements),
            Rebuilt::Bytes(bytes) => {
                let ranges = split_array(&bytes).ok_or("delta base is not an array")?;
                Ok(ranges.iter().map(|r| bytes[r.clone()].to_vec()).collect())
            }
        }
    }
}

/// Rewrites the array header of `bytes` to count `len` elements (no fewer than it counts),
/// moving `ranges` when the header grows wider. `None` when `bytes` is no array.
fn set_array_len(bytes: &mut Vec<u8>, ranges: &mut [Range<usize>], len: usize) -> Option<()> {
    let width = match *bytes.first()? {
        0x90..=0x9f => 1,
        0xdc => 3,
        0xdd => 5,
        _ => return None,
    };
    let mut header = Vec::with_capacity(5);
    write_array_header(&mut header, len);
    let grown = header.len().checked_sub(width)?;
    if grown == 0 {
        bytes[..width].copy_from_slice(&header);
    } else {
        bytes.splice(..width, header);
        for r in ranges.iter_mut() {
            *r = r.start + grown..r.end + grown;
        }
    }
    Some(())
}

pub(crate) fn write_array_header(out: &mut Vec<u8>, len: usize) {
    if len <= 15 {
        out.push(0x90 | len as u8);
    } else if len <= u16::MAX as usize {
        out.push(0xdc);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdd);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

pub(crate) fn read_be(bytes: &[u8], at: usize, n: usize) -> Option<usize> {
    let slice = bytes.get(at..at + n)?;
    Some(slice.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize))
}

/// If `bytes` is one MessagePack array, the byte ranges of its elements.
pub(crate) fn split_array(bytes: &[u8]) -> Option<Vec<Range<usize>>> {
    split_array_into(bytes, Vec::new())
}

/// [`split_array`] into `ranges` (emptied first), a buffer to reuse.
fn split_array_into(bytes: &[u8], mut ranges: Vec<Range<usize>>) -> Option<Vec<Range<usize>>> {
    ranges.clear();
    let marker = *bytes.first()?;
    let (len, mut at) = match marker {
        0x90..=0x9f => ((marker & 0x0f) as usize, 1),
        0xdc => (read_be(bytes, 1, 2)?, 3),
        0xdd => (read_be(bytes, 1, 4)?, 5),
        _ => return None,
    };
    ranges.reserve(len.min(bytes.len()));
    for _ in 0..len {
        let end = skip_value(bytes, at)?;
        ranges.push(at..end);
        at = end;
    }
    (at == bytes.len()).then_some(ranges)
}

/// The end of the MessagePack value starting at `at`.
pub(crate) fn skip_value(bytes: &[u8], mut at: usize) -> Option<usize> {
    let mut pending: usize = 1;
    while pending > 0 {
        pending -= 1;
        let marker = *bytes.get(at)?;
        at += 1;
        let (skip, items) = match marker {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
            0x80..=0x8f => (0, 2 * (marker & 0x0f) as usize),
            0x90..=0x9f => (0, (marker & 0x0f) as usize),
            0xa0..=0xbf => ((marker & 0x1f) as usize, 0),
            0xc4 | 0xd9 => (1 + read_be(bytes, at, 1)?, 0),
            0xc5 | 0xda => (2 + read_be(bytes, at, 2)?, 0),
            0xc6 | 0xdb => (4 + read_be(bytes, at, 4)?, 0),
            0xc7 => (2 + read_be(bytes, at, 1)?, 0),
            0xc8 => (3 + read_be(bytes, at, 2)?, 0),
            0xc9 => (5 + read_be(bytes, at, 4)?, 0),
            0xca | 0xce | 0xd2 => (4, 0),
            0xcb | 0xcf | 0xd3 => (8, 0),
            0xcc | 0xd0 => (1, 0),
            0xcd | 0xd1 => (2, 0),
            0xd4 => (2, 0),
            0xd5 => (3, 0),
            0xd6 => (5, 0),
            0xd7 => (9, 0),
            0xd8 => (17, 0),
            0xdc => (2, read_be(bytes, at, 2)?),
            0xdd => (4, read_be(bytes, at, 4)?),
            0xde => (2, 2 * read_be(bytes, at, 2)?),
            0xdf => (4, 2 * read_be(bytes, at, 4)?),
            0xc1 => return None,
        };
        at = at.checked_add(skip)?;
        if at > bytes.len() {
            return None;
        }
        pending = pending.checked_add(items)?;
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version as the executor passes it.
    fn ver(version: &str) -> std::sync::Arc<str> {
        version.into()
    }
    use serde::Serialize;
    use serde_json::json;

    fn roundtrip(versions: &[serde_json::Value]) -> Vec<FieldBlob> {
        let mut cache: Option<FieldCache> = None;
        let mut blobs = Vec::new();
        for (i, v) in versions.iter().enumerate() {
            let bytes = encode(v).unwrap();
            blobs.extend(make_blob(
                "f",
                &ver(&format!("v{i}")),
                bytes,
                &mut cache,
                true,
            ));
        }
        let map = blob_index(&blobs);
        for (i, v) in versions.iter().enumerate() {
            let (bytes, _) = reconstruct("f", &format!("v{i}"), &map).unwrap();
            let back: serde_json::Value = decode(&bytes).unwrap();
            assert_eq!(&back, v, "version {i}");
        }
        blobs
    }

    #[test]
    fn growing_arrays_store_only_new_elements() {
        let versions: Vec<serde_json::Value> = (0..40)
            .map(|n| {
                json!(
                    (0..n)
                        .map(|i| json!({"id": i, "text": "hello ".repeat(10)}))
                        .collect::<Vec<_>>()
                )
            })
            .collect();
        let blobs = roundtrip(&versions);
        let total: usize = blobs.iter().map(|b| b.data.len()).sum();
        let last_full = encode(&versions[39]).unwrap().len();
        // Linear, not quadratic: about one full copy in all.
        assert!(total < last_full * 2, "{total} vs {last_full}");
    }

    #[test]
    fn replaced_elements_and_non_arrays_roundtrip() {
        roundtrip(&[
            json!([1, 2, 3]),
            json!([1, 2, 3, 4]),
            json!([1, 9, 3, 4, 5]),
            json!([]),
            json!({"a": [1, 2]}),
            json!("text"),
            json!([1.5, null, true, "x", {"k": [1, {"z": -3}]}, -100000, 1u64 << 40]),
            json!((0..70000).collect::<Vec<u32>>()),
            json!((0..70001).collect::<Vec<u32>>()),
        ]);
    }

    #[test]
    fn appended_elements_encode_alone_and_rebuild_the_whole_value() {
        let versions: Vec<Vec<serde_json::Value>> = (0..30)
            .map(|n| {
                (0..n * 3)
                    .map(|i| json!({"i": i, "text": "x".repeat(i)}))
                    .collect()
            })
            .collect();
        let mut cache = None;
        let mut blobs = Vec::new();
        let mut tail_bytes = 0;
        for (n, value) in versions.iter().enumerate() {
            let version = format!("v{n:02}");
            let blob = match cache.as_mut() {
                None => make_blob(
                    "f",
                    &ver(&version),
                    encode(value).unwrap(),
                    &mut cache,
                    true,
                ),
                Some(previous) => {
                    let skip = FieldCache::array_len(previous).unwrap();
                    let tail = value.serialize(TailSerializer { skip }).unwrap();
                    assert_eq!(tail.len, value.len());
                    tail_bytes += tail.bytes.len();
                    append_blob("f", &ver(&version), tail, previous).unwrap()
                }
            };
            blobs.extend(blob);
        }
        let map = blob_index(&blobs);
        for (n, value) in versions.iter().enumerate().skip(1) {
            let (bytes, mut rebuilt) = reconstruct("f", &format!("v{n:02}"), &map).unwrap();
            assert_eq!(bytes, encode(value).unwrap(), "version {n}");
            assert_eq!(rebuilt.array_len(), Some(value.len()));
        }
        let last = encode(versions.last().unwrap()).unwrap().len();
        assert!(
            tail_bytes <= last,
            "{tail_bytes} bytes of tails for a {last}-byte value"
        );
        assert!(
            "a string".serialize(TailSerializer { skip: 0 }).is_err(),
            "not a sequence"
        );
    }

    #[test]
    fn a_last_checkpoint_keeps_no_cache_and_stores_the_whole_value() {
        let first = encode(&serde_json::json!([1, 2, 3])).unwrap();
        let mut cache = None;
        let blob = make_blob("f", &ver("v1"), first.clone(), &mut cache, true).unwrap();
        assert_eq!(blob.data, first);
        assert!(cache.is_some());
        // Compared against the kept version: a delta of the new element, and no cache after.
        let second = encode(&serde_json::json!([1, 2, 3, 4])).unwrap();
        let blob = make_blob("f", &ver("v2"), second.clone(), &mut cache, false).unwrap();
        assert_eq!(blob.base, Some(("v1".into(), 3)));
        assert_eq!(blob.data, encode(&4).unwrap());
        assert!(cache.is_none());
        // Nothing to compare against: the whole value, moved.
        let blob = make_blob("f", &ver("v3"), second.clone(), &mut cache, false).unwrap();
        assert_eq!((blob.base, blob.data), (None, second));
        assert!(cache.is_none());
    }

    #[test]
    fn field_value_bytes_rebuilds_a_delta_from_its_base() {
        let first = encode(&serde_json::json!([1, 2, 3])).unwrap();
        let second = encode(&serde_json::json!([1, 2, 3, 4])).unwrap();
        let mut cache = None;
        let base = make_blob("f", &ver("v1"), first.clone(), &mut cache, true).unwrap();
        let delta = make_blob("f", &ver("v2"), second.clone(), &mut cache, true).unwrap();
        assert!(delta.base.is_some());
        let blobs = [delta, base];
        assert_eq!(
            super::super::field_value_bytes("f", "v2", &blobs).unwrap(),
            second
        );
        assert_eq!(
            super::super::field_value_bytes("f", "v1", &blobs).unwrap(),
            first
        );
        assert!(super::super::field_value_bytes("f", "v2", &blobs[..1]).is_err());
    }

    /// Writes `versions` through `make_blob`/`append_blob` as the executor does (appends when
    /// `appended` says so) and checks that every version rebuilds to the bytes the writer kept.
    fn write_and_rebuild(versions: &[serde_json::Value], appended: bool) -> Vec<FieldBlob> {
        let mut cache: Option<FieldCache> = None;
        let mut blobs = Vec::new();
        for (i, v) in versions.iter().enumerate() {
            let version = format!("v{i:03}");
            // The executor takes the tail path only for a field its reducer appended to.
            let grew = i > 0
                && match (&versions[i - 1], v) {
                    (serde_json::Value::Array(a), serde_json::Value::Array(b)) => b.starts_with(a),
                    _ => false,
                };
            let tail = match (appended && grew, cache.as_mut()) {
                (true, Some(previous)) => previous
                    .array_len()
                    .and_then(|skip| v.serialize(TailSerializer { skip }).ok())
                    .and_then(|tail| append_blob("f", &ver(&version), tail, previous).ok()),
                _ => None,
            };
            let blob = match tail {
                Some(blob) => blob,
                None => make_blob("f", &ver(&version), encode(v).unwrap(), &mut cache, true),
            };
            blobs.extend(blob);
            let map = blob_index(&blobs);
            let latest = cache.as_ref().unwrap().version.clone();
            let (bytes, rebuilt) = reconstruct("f", &latest, &map).unwrap();
            assert_eq!(
                bytes,
                cache.as_ref().unwrap().bytes().unwrap(),
                "version {i}"
            );
            assert_eq!(
                rebuilt.splices,
                cache.as_ref().unwrap().splices,
                "version {i}"
            );
            assert_eq!(
                &decode::<serde_json::Value>(&bytes).unwrap(),
                v,
                "version {i}"
            );
        }
        blobs
    }

    #[test]
    fn a_growing_text_is_stored_as_splices_up_to_the_bound() {
        // A one-element list whose element grows (a joke bumped every step) and a bare string.
        let base = "Joke about ".to_owned() + &"['a', 'b', 'c'] - hohoho ".repeat(200);
        for wrap in [true, false] {
            let versions: Vec<serde_json::Value> = (0..40)
                .map(|n| {
                    let text = base.clone() + &" a".repeat(n);
                    if wrap { json!([text]) } else { json!(text) }
                })
                .collect();
            let blobs = write_and_rebuild(&versions, false);
            let whole: Vec<usize> = blobs
                .iter()
                .enumerate()
                .filter(|(_, b)| b.base.is_none())
                .map(|(i, _)| i)
                .collect();
            // Whole at the start and after every MAX_SPLICES splices.
            let step = MAX_SPLICES as usize + 1;
            assert_eq!(whole, (0..40).step_by(step).collect::<Vec<_>>());
            let spliced: usize = blobs
                .iter()
                .filter(|b| b.base.as_ref().is_some_and(|(_, n)| splice::is_splice(*n)))
                .map(|b| b.data.len())
                .sum();
            assert!(spliced < 40 * 32, "{spliced} bytes of splices");
        }
    }

    #[test]
    fn splices_and_element_deltas_chain_in_any_order() {
        let text = |n: usize| "x".repeat(300) + &"y".repeat(n);
        let versions = vec![
            json!([text(0)]),
            json!([text(1)]),         // splice (the element changed)
            json!([text(1), "more"]), // element delta on a splice
            json!([text(2), "more"]), // splice on an element delta
            json!([text(2), "more", "and more"]),
            json!({"a": text(3)}), // another shape: a splice still fits
            json!(17),             // too short for a splice: whole
            json!([text(3)]),
        ];
        write_and_rebuild(&versions, false);
        write_and_rebuild(&versions, true);
        // Appends through the tail path keep the header exact, across its width changes.
        let lists: Vec<serde_json::Value> = (0..40)
            .map(|n| json!((0..n).map(|i| "z".repeat(i % 7)).collect::<Vec<_>>()))
            .collect();
        write_and_rebuild(&lists, true);
        let mut long: Vec<serde_json::Value> = vec![json!((0..65_534).collect::<Vec<u32>>())];
        long.push(json!((0..65_537).collect::<Vec<u32>>()));
        long.push(json!(
            (0..65_538)
                .map(|i| if i == 3 { 9 } else { i })
                .collect::<Vec<u32>>()
        ));
        write_and_rebuild(&long, true);
    }

    #[test]
    fn a_splice_on_a_base_of_the_wrong_length_is_an_error() {
        let text = "x".repeat(300);
        let blobs = write_and_rebuild(&[json!(text.clone()), json!(text.clone() + "y")], false);
        let mut broken = blobs.clone();
        broken[0].data.push(0xc0);
        let map = blob_index(&broken);
        let error = reconstruct("f", "v001", &map).unwrap_err();
        assert!(error.contains("expects a"), "{error}");
    }

    #[test]
    fn skip_rejects_truncated_input() {
        let bytes = encode(&json!(["abc", [1, 2, 3]])).unwrap();
        for cut in 1..bytes.len() {
            assert!(split_array(&bytes[..cut]).is_none(), "cut {cut}");
        }
        assert!(split_array(&[0xc1]).is_none());
    }
}
