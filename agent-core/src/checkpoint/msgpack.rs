//! MessagePack encoding on the checkpoint hot path: the same bytes as `rmp-serde`'s
//! serializer, written faster.
//!
//! Why our own: checkpoints encode states full of short strings (a message's fields, a list of
//! one-letter strings, JSON keys). `rmp-serde` spends ~11 ns on each one (an out-of-line
//! `write_str` behind `io::Write`, a generic error per byte written); this writer appends to a
//! `Vec<u8>` directly and spends ~1-2 ns. Decoding stays with `rmp-serde`, so the output must be
//! byte for byte what it writes: the tests compare the two on every shape serde has.
//!
//! Covered as `rmp-serde` 1.3 does it: the most compact int, str, bin, array and map markers;
//! structs as maps of field names ([`Packer::named`]) or as arrays; enums as the variant's name
//! (unit) or a one-entry map from the name to the content; `i128`/`u128` as 16 big-endian bytes;
//! sequences and maps of unknown length counted and their header put in front afterwards. Its
//! extension convention (a newtype struct named `_ExtStruct` around a `(type, bytes)` tuple) is
//! written by [`ExtWriter`], byte for byte as `rmp-serde` writes it.

use serde::ser::{self, Serialize};

use super::msgpack_chars::{self, CharProbe};
use super::msgpack_ext::ExtWriter;

/// Encodes `value`, struct fields by name (what the checkpoint formats store).
pub(crate) fn to_vec_named<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, PackError> {
    let mut out = Vec::new();
    value.serialize(&mut Packer::named(&mut out))?;
    Ok(out)
}

/// A serde serializer appending MessagePack to a byte vector.
pub(crate) struct Packer<'a> {
    out: &'a mut Vec<u8>,
    /// Structs as maps from field name to value (else as arrays of values).
    named: bool,
}

impl<'a> Packer<'a> {
    /// Structs as maps keyed by field name (`rmp-serde`'s `with_struct_map`).
    pub(crate) fn named(out: &'a mut Vec<u8>) -> Self {
        Packer { out, named: true }
    }

    /// Structs as arrays of their fields' values (`rmp-serde`'s default).
    pub(crate) fn compact(out: &'a mut Vec<u8>) -> Self {
        Packer { out, named: false }
    }

    /// A str.
    #[inline]
    pub(crate) fn str(&mut self, s: &str) {
        let len = s.len();
        if len < 32 {
            self.out.reserve(1 + len);
            self.out.push(0xa0 | len as u8);
        } else {
            self.header(len, [0xd9, 0xda, 0xdb]);
        }
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A length behind an 8-, 16- or 32-bit marker (str, bin, ext lengths).
    #[inline]
    fn header(&mut self, len: usize, markers: [u8; 3]) {
        if len < 256 {
            self.out.extend_from_slice(&[markers[0], len as u8]);
        } else if len < 65_536 {
            self.out.push(markers[1]);
            self.out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            self.out.push(markers[2]);
            self.out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }

    /// An array header.
    #[inline]
    pub(crate) fn array_len(&mut self, len: usize) {
        container_header(self.out, len, 0x90, [0xdc, 0xdd]);
    }

    /// A map header.
    #[inline]
    pub(crate) fn map_len(&mut self, len: usize) {
        container_header(self.out, len, 0x80, [0xde, 0xdf]);
    }

    /// An unsigned integer.
    #[inline]
    pub(crate) fn uint(&mut self, v: u64) {
        if v < 128 {
            self.out.push(v as u8);
        } else if v < 256 {
            self.out.extend_from_slice(&[0xcc, v as u8]);
        } else if v < 65_536 {
            self.out.push(0xcd);
            self.out.extend_from_slice(&(v as u16).to_be_bytes());
        } else if v < 1 << 32 {
            self.out.push(0xce);
            self.out.extend_from_slice(&(v as u32).to_be_bytes());
        } else {
            self.out.push(0xcf);
            self.out.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// A bin (raw bytes).
    pub(crate) fn bin(&mut self, v: &[u8]) {
        self.header(v.len(), [0xc4, 0xc5, 0xc6]);
        self.out.extend_from_slice(v);
    }

    /// A bool.
    #[inline]
    pub(crate) fn bool(&mut self, v: bool) {
        self.out.push(if v { 0xc3 } else { 0xc2 });
    }

    #[inline]
    fn sint(&mut self, v: i64) {
        if v >= 0 {
            return self.uint(v as u64);
        }
        if v >= -32 {
            self.out.push(v as i8 as u8);
        } else if v >= -128 {
            self.out.extend_from_slice(&[0xd0, v as i8 as u8]);
        } else if v >= -32_768 {
            self.out.push(0xd1);
            self.out.extend_from_slice(&(v as i16).to_be_bytes());
        } else if v >= -2_147_483_648 {
            self.out.push(0xd2);
            self.out.extend_from_slice(&(v as i32).to_be_bytes());
        } else {
            self.out.push(0xd3);
            self.out.extend_from_slice(&v.to_be_bytes());
        }
    }

    fn compound(&mut self, len: Option<usize>, map: bool) -> Compound<'_, 'a> {
        match len {
            Some(len) => {
                if map {
                    self.map_len(len);
                } else {
                    self.array_len(len);
                }
                Compound {
                    se: self,
                    unknown: None,
                }
            }
            None => {
                let start = self.out.len();
                Compound {
                    se: self,
                    unknown: Some(Unknown {
                        start,
                        items: 0,
                        map,
                    }),
                }
            }
        }
    }
}

/// A fix, 16-bit or 32-bit array or map header.
#[inline]
fn container_header(out: &mut Vec<u8>, len: usize, fix: u8, markers: [u8; 2]) {
    if len < 16 {
        out.push(fix | len as u8);
    } else if len < 65_536 {
        out.push(markers[0]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(markers[1]);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

/// What failed while encoding: a value's own `Serialize` error, or an extension of the wrong
/// shape.
#[derive(Debug)]
pub(crate) struct PackError(String);

impl std::fmt::Display for PackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PackError {}

impl From<&str> for PackError {
    fn from(message: &str) -> Self {
        PackError(message.to_owned())
    }
}

impl ser::Error for PackError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        PackError(msg.to_string())
    }
}

impl<'p, 'a> ser::Serializer for &'p mut Packer<'a> {
    type Ok = ();
    type Error = PackError;
    type SerializeSeq = Compound<'p, 'a>;
    type SerializeTuple = Compound<'p, 'a>;
    type SerializeTupleStruct = Compound<'p, 'a>;
    type SerializeTupleVariant = Compound<'p, 'a>;
    type SerializeMap = Compound<'p, 'a>;
    type SerializeStruct = Compound<'p, 'a>;
    type SerializeStructVariant = Compound<'p, 'a>;

    fn is_human_readable(&self) -> bool {
        false
    }

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), PackError> {
        self.out.push(if v { 0xc3 } else { 0xc2 });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<(), PackError> {
        self.sint(v.into());
        Ok(())
    }

    fn serialize_i16(self, v: i16) -> Result<(), PackError> {
        self.sint(v.into());
        Ok(())
    }

    fn serialize_i32(self, v: i32) -> Result<(), PackError> {
        self.sint(v.into());
        Ok(())
    }

    #[inline]
    fn serialize_i64(self, v: i64) -> Result<(), PackError> {
        self.sint(v);
        Ok(())
    }

    fn serialize_i128(self, v: i128) -> Result<(), PackError> {
        self.serialize_bytes(&v.to_be_bytes())
    }

    fn serialize_u8(self, v: u8) -> Result<(), PackError> {
        self.uint(v.into());
        Ok(())
    }

    fn serialize_u16(self, v: u16) -> Result<(), PackError> {
        self.uint(v.into());
        Ok(())
    }

    fn serialize_u32(self, v: u32) -> Result<(), PackError> {
        self.uint(v.into());
        Ok(())
    }

    #[inline]
    fn serialize_u64(self, v: u64) -> Result<(), PackError> {
        self.uint(v);
        Ok(())
    }

    fn serialize_u128(self, v: u128) -> Result<(), PackError> {
        self.serialize_bytes(&v.to_be_bytes())
    }

    fn serialize_f32(self, v: f32) -> Result<(), PackError> {
        self.out.push(0xca);
        self.out.extend_from_slice(&v.to_be_bytes());
        Ok(())
    }

    fn serialize_f64(self, v: f64) -> Result<(), PackError> {
        self.out.push(0xcb);
        self.out.extend_from_slice(&v.to_be_bytes());
        Ok(())
    }

    #[inline]
    fn serialize_char(self, v: char) -> Result<(), PackError> {
        if v.is_ascii() {
            self.out.extend_from_slice(&[0xa1, v as u8]);
        } else {
            self.str(v.encode_utf8(&mut [0; 4]));
        }
        Ok(())
    }

    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), PackError> {
        self.str(v);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), PackError> {
        self.header(v.len(), [0xc4, 0xc5, 0xc6]);
        self.out.extend_from_slice(v);
        Ok(())
    }

    #[inline]
    fn serialize_none(self) -> Result<(), PackError> {
        self.out.push(0xc0);
        Ok(())
    }

    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), PackError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), PackError> {
        self.out.push(0xc0);
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), PackError> {
        self.out.push(0x90);
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), PackError> {
        self.str(variant);
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), PackError> {
        if name == rmp_serde::MSGPACK_EXT_STRUCT_NAME {
            // An extension, in rmp-serde's convention.
            return ExtWriter::new(self.out).write(value);
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), PackError> {
        self.map_len(1);
        self.str(variant);
        value.serialize(self)
    }

    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'p, 'a>, PackError> {
        Ok(self.compound(len, false))
    }

    /// A sequence of known length straight into the buffer, room reserved for its elements
    /// (a list of a thousand one-letter strings is two thousand pushes otherwise grown into).
    fn collect_seq<I>(self, iter: I) -> Result<(), PackError>
    where
        I: IntoIterator,
        I::Item: Serialize,
    {
        let iter = iter.into_iter();
        let (len, upper) = iter.size_hint();
        if upper != Some(len) {
            let mut seq = ser::Serializer::serialize_seq(self, None)?;
            for item in iter {
                ser::SerializeSeq::serialize_element(&mut seq, &item)?;
            }
            return ser::SerializeSeq::end(seq);
        }
        self.array_len(len);
        self.out.reserve(len.saturating_mul(2));
        let mut iter = iter;
        let count = match iter.next() {
            None => 0,
            // A list of chars goes a chunk at a time (see `msgpack_chars`).
            Some(first) => match first.serialize(CharProbe) {
                Ok(c) => {
                    let named = self.named;
                    msgpack_chars::write_chars(self.out, c, iter, |out, item| {
                        item.serialize(&mut Packer { out, named })
                    })?
                }
                Err(_) => {
                    first.serialize(&mut *self)?;
                    let mut count = 1;
                    for item in iter {
                        item.serialize(&mut *self)?;
                        count += 1;
                    }
                    count
                }
            },
        };
        if count != len {
            return Err(PackError(format!(
                "a sequence said it had {len} elements and gave {count}"
            )));
        }
        Ok(())
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'p, 'a>, PackError> {
        Ok(self.compound(Some(len), false))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Compound<'p, 'a>, PackError> {
        Ok(self.compound(Some(len), false))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'p, 'a>, PackError> {
        self.map_len(1);
        self.str(variant);
        Ok(self.compound(Some(len), false))
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'p, 'a>, PackError> {
        Ok(self.compound(len, true))
    }

    #[inline]
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Compound<'p, 'a>, PackError> {
        let named = self.named;
        Ok(self.compound(Some(len), named))
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'p, 'a>, PackError> {
        self.map_len(1);
        self.str(variant);
        self.serialize_struct(name, len)
    }
}

/// A sequence, map, tuple or struct being written.
pub(crate) struct Compound<'p, 'a> {
    se: &'p mut Packer<'a>,
    /// Of unknown length: where its items start, and how many were written.
    unknown: Option<Unknown>,
}

struct Unknown {
    start: usize,
    items: usize,
    map: bool,
}

impl Compound<'_, '_> {
    #[inline]
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PackError> {
        if let Some(unknown) = &mut self.unknown {
            unknown.items += 1;
        }
        value.serialize(&mut *self.se)
    }

    #[inline]
    fn finish(self) -> Result<(), PackError> {
        if let Some(Unknown { start, items, map }) = self.unknown {
            // Now the count is known: its header goes in front of the items.
            let mut header = Vec::with_capacity(5);
            if map {
                container_header(&mut header, items / 2, 0x80, [0xde, 0xdf]);
            } else {
                container_header(&mut header, items, 0x90, [0xdc, 0xdd]);
            }
            self.se.out.splice(start..start, header);
        }
        Ok(())
    }
}

impl ser::SerializeSeq for Compound<'_, '_> {
    type Ok = ();
    type Error = PackError;

    #[inline]
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PackError> {
        self.item(value)
    }

    #[inline]
    fn end(self) -> Result<(), PackError> {
        self.finish()
    }
}

impl ser::SerializeTuple for Compound<'_, '_> {
    type Ok = ();
    type Error = PackError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PackError> {
        self.item(value)
    }

    fn end(self) -> Result<(), PackError> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = PackError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PackError> {
        self.item(value)
    }

    fn end(self) -> Result<(), PackError> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = PackError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PackError> {
        self.item(value)
    }

    fn end(self) -> Result<(), PackError> {
        self.finish()
    }
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = PackError;

    #[inline]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), PackError> {
        self.item(key)
    }

    #[inline]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PackError> {
        self.item(value)
    }

    fn end(self) -> Result<(), PackError> {
        self.finish()
    }
}

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = PackError;

    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), PackError> {
        if self.se.named {
            self.se.str(key);
        }
        value.serialize(&mut *self.se)
    }

    fn end(self) -> Result<(), PackError> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = PackError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), PackError> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }

    fn end(self) -> Result<(), PackError> {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::ser::{SerializeMap, SerializeSeq};
    use serde::{Serialize, Serializer};
    use serde_json::{Value, json};

    use super::*;

    /// Ours and rmp-serde's bytes, both struct layouts.
    fn same<T: Serialize + ?Sized + std::fmt::Debug>(value: &T) {
        let ours = to_vec_named(value).expect("ours encodes");
        let theirs = rmp_serde::to_vec_named(value).expect("rmp-serde encodes");
        assert_eq!(ours, theirs, "named: {value:?}");
        let mut ours = Vec::new();
        value
            .serialize(&mut Packer::compact(&mut ours))
            .expect("ours encodes");
        let theirs = rmp_serde::to_vec(value).expect("rmp-serde encodes");
        assert_eq!(ours, theirs, "compact: {value:?}");
    }

    #[test]
    fn integers_take_the_same_markers_at_every_boundary() {
        let signed = [
            i64::MIN,
            -(1 << 31) - 1,
            -(1 << 31),
            -32_769,
            -32_768,
            -129,
            -128,
            -33,
            -32,
            -1,
            0,
            1,
            127,
            128,
            255,
            256,
            65_535,
            65_536,
            (1 << 32) - 1,
            1 << 32,
            i64::MAX,
        ];
        for v in signed {
            same(&v);
            same(&(v as i32));
            same(&(v as i16));
            same(&(v as i8));
            same(&(v as u64));
            same(&(v as u32));
            same(&(v as u16));
            same(&(v as u8));
            same(&(v as i128));
            same(&(v as u128));
        }
        same(&u64::MAX);
        same(&(
            true,
            false,
            1.5f32,
            -0.0f64,
            f64::INFINITY,
            f64::NAN.is_nan(),
        ));
    }

    struct Bin(Vec<u8>);

    impl std::fmt::Debug for Bin {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Bin({})", self.0.len())
        }
    }

    impl Serialize for Bin {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }

    #[test]
    fn strings_chars_and_bytes_of_every_header_size() {
        for len in [0, 1, 31, 32, 255, 256, 65_535, 65_536] {
            same(&"x".repeat(len));
            same(&Bin(vec![7; len]));
        }
        same(&['a', 'é', '€', '😀', '\0', '\u{7f}']);
        same(&"ünïcödé and plain".to_owned());
    }

    #[derive(Serialize, Debug)]
    struct Unit;

    #[derive(Serialize, Debug)]
    struct Newtype(String);

    #[derive(Serialize, Debug)]
    struct Pair(u8, Option<String>);

    #[derive(Serialize, Debug)]
    enum Shape {
        Plain,
        Wrapped(i32),
        Pair(u8, char),
        Named { x: f64, tags: Vec<String> },
    }

    #[derive(Serialize, Debug)]
    struct Record {
        id: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        shapes: Vec<Shape>,
        unit: Unit,
        newtype: Newtype,
        pair: Pair,
        nothing: (),
        map: BTreeMap<String, Vec<u16>>,
        json: Value,
    }

    #[derive(Serialize, Debug)]
    struct Flattened {
        head: u8,
        #[serde(flatten)]
        rest: BTreeMap<String, i64>,
    }

    #[test]
    fn structs_enums_options_and_maps_in_both_layouts() {
        let record = |note: Option<&str>| Record {
            id: 1 << 40,
            note: note.map(str::to_owned),
            shapes: vec![
                Shape::Plain,
                Shape::Wrapped(-5),
                Shape::Pair(200, 'q'),
                Shape::Named {
                    x: 0.25,
                    tags: vec!["a".into(); 17],
                },
            ],
            unit: Unit,
            newtype: Newtype("inner".into()),
            pair: Pair(3, None),
            nothing: (),
            map: (0..20)
                .map(|i| (format!("k{i}"), vec![i; i as usize]))
                .collect(),
            json: json!({"a": [1, -2, 3.5, null, true, "s"], "b": {"c": {}}}),
        };
        same(&record(None));
        same(&record(Some("with a note")));
        for n in [0usize, 15, 16, 65_535, 65_536] {
            same(&vec![0u8; n]);
            same(&(0..n).map(|i| (i as u32, ())).collect::<BTreeMap<_, _>>());
        }
        same(&Flattened {
            head: 1,
            rest: (0..40).map(|i| (format!("f{i}"), -i)).collect(),
        });
    }

    /// A sequence that does not say its length up front, nested in itself.
    #[derive(Debug)]
    struct Unsized(usize, bool);

    impl Serialize for Unsized {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let (n, map) = (self.0, self.1);
            if map {
                let mut m = s.serialize_map(None)?;
                for i in 0..n {
                    m.serialize_entry(&i, &Unsized(i % 3, i % 2 == 0))?;
                }
                m.end()
            } else {
                let mut q = s.serialize_seq(None)?;
                for i in 0..n {
                    q.serialize_element(&Unsized(i % 4, i % 2 == 1))?;
                }
                q.end()
            }
        }
    }

    #[test]
    fn sequences_and_maps_of_unknown_length_get_their_header_afterwards() {
        for n in [0, 1, 15, 16, 17, 70_000] {
            same(&Unsized(n, false));
            same(&Unsized(n, true));
        }
    }

    #[test]
    fn extensions_are_written_as_rmp_serde_writes_them() {
        #[derive(Debug)]
        struct Ext(i8, Vec<u8>);
        impl Serialize for Ext {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_newtype_struct(
                    rmp_serde::MSGPACK_EXT_STRUCT_NAME,
                    &(self.0, Bin(self.1.clone())),
                )
            }
        }
        for len in [
            0, 1, 2, 3, 4, 5, 8, 15, 16, 17, 255, 256, 300, 65_535, 65_536, 70_000,
        ] {
            same(&vec![Ext(5, vec![9; len]), Ext(-3, vec![1; len])]);
        }
    }

    #[test]
    fn extensions_of_another_shape_are_refused_as_rmp_serde_refuses_them() {
        struct Wrapped<T>(T);
        impl<T: Serialize> Serialize for Wrapped<T> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_newtype_struct(rmp_serde::MSGPACK_EXT_STRUCT_NAME, &self.0)
            }
        }
        fn refused<T: Serialize>(value: T) {
            let value = Wrapped(value);
            assert!(to_vec_named(&value).is_err());
            assert!(rmp_serde::to_vec_named(&value).is_err());
        }
        refused(5u32);
        refused("text");
        refused((5i8,));
        refused((Bin(vec![1]), 5i8));
        refused((5u8, Bin(vec![1])));
        refused((5i8, 6i8));
    }

    /// A random JSON value: the shapes a checkpoint's metadata and `Value` fields take.
    fn random_value(rng: &mut fastrand::Rng, depth: u32) -> Value {
        match rng.u8(0..if depth > 3 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.bool()),
            2 => json!(rng.i64(..) >> rng.u32(0..64)),
            3 => json!(rng.u64(..) >> rng.u32(0..64)),
            4 => json!(rng.f64() * 1e6 - 5e5),
            5 => Value::String(
                (0..rng.usize(0..300))
                    .map(|_| rng.choice(['a', 'ß', '字', '🦀', ' ']).unwrap_or('a'))
                    .collect(),
            ),
            6 => Value::Array(
                (0..rng.usize(0..20))
                    .map(|_| random_value(rng, depth + 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..rng.usize(0..20))
                    .map(|i| (format!("key{i}"), random_value(rng, depth + 1)))
                    .collect(),
            ),
        }
    }

    #[test]
    fn random_json_values_encode_the_same() {
        let mut rng = fastrand::Rng::with_seed(17);
        for _ in 0..2_000 {
            same(&random_value(&mut rng, 0));
        }
    }
}
