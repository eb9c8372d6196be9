//! MessagePack extensions written by [`Packer`](super::msgpack::Packer) itself, in
//! `rmp-serde`'s convention: a newtype struct named `_ExtStruct` around a `(i8, bytes)` tuple.
//!
//! Why not hand them to `rmp-serde`: every [`Shared`](crate::Shared) value a checkpoint meets
//! again is written as an extension (a four-byte reference), thousands per checkpoint of a
//! wide state; going through `rmp-serde`'s generic serializer cost about a third of encoding
//! such a checkpoint. This writer takes the tuple's type as it comes, writes the header when
//! the bytes arrive, and copies them: the same bytes, no intermediate value.

use serde::ser::{self, Serialize};

use super::msgpack::PackError;

/// Writes one extension into `out` from the `(type, bytes)` tuple it is serialized as.
pub(super) struct ExtWriter<'a> {
    out: &'a mut Vec<u8>,
    /// The extension's type, once the tuple's first element has been seen.
    tag: Option<i8>,
    /// Whether the bytes have been written.
    written: bool,
}

impl<'a> ExtWriter<'a> {
    pub(super) fn new(out: &'a mut Vec<u8>) -> Self {
        ExtWriter {
            out,
            tag: None,
            written: false,
        }
    }

    /// Writes `value` (the newtype's content) as an extension.
    pub(super) fn write<T: Serialize + ?Sized>(mut self, value: &T) -> Result<(), PackError> {
        value.serialize(&mut self)?;
        if !self.written {
            return Err(shape());
        }
        Ok(())
    }

    /// The header (the most compact marker for the length, as `rmp-serde` picks it), the
    /// type, the bytes.
    fn bytes(&mut self, data: &[u8]) -> Result<(), PackError> {
        let (Some(tag), false) = (self.tag, self.written) else {
            return Err(shape());
        };
        let len = data.len();
        let out = &mut *self.out;
        if let Ok(&[a, b, c, d]) = <&[u8; 4]>::try_from(data) {
            // A shared-value reference: one six-byte write.
            out.extend_from_slice(&[0xd6, tag as u8, a, b, c, d]);
            self.written = true;
            return Ok(());
        }
        out.reserve(6 + len);
        match len {
            1 => out.push(0xd4),
            2 => out.push(0xd5),
            // 4 (fixext 4, 0xd6) took the path above.
            8 => out.push(0xd7),
            16 => out.push(0xd8),
            0..256 => out.extend_from_slice(&[0xc7, len as u8]),
            256..65_536 => {
                out.push(0xc8);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                let len = u32::try_from(len)
                    .map_err(|_| PackError::from("an extension longer than 4 GiB"))?;
                out.push(0xc9);
                out.extend_from_slice(&len.to_be_bytes());
            }
        }
        out.push(tag as u8);
        out.extend_from_slice(data);
        self.written = true;
        Ok(())
    }
}

fn shape() -> PackError {
    PackError::from("an extension must be a tuple of its type (i8) and its bytes")
}

impl ser::Serializer for &mut ExtWriter<'_> {
    type Ok = ();
    type Error = PackError;
    type SerializeSeq = ser::Impossible<(), PackError>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = ser::Impossible<(), PackError>;
    type SerializeTupleVariant = ser::Impossible<(), PackError>;
    type SerializeMap = ser::Impossible<(), PackError>;
    type SerializeStruct = ser::Impossible<(), PackError>;
    type SerializeStructVariant = ser::Impossible<(), PackError>;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_i8(self, v: i8) -> Result<(), PackError> {
        if self.tag.is_some() {
            return Err(shape());
        }
        self.tag = Some(v);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), PackError> {
        self.bytes(v)
    }

    fn serialize_tuple(self, len: usize) -> Result<Self, PackError> {
        if len != 2 || self.tag.is_some() {
            return Err(shape());
        }
        Ok(self)
    }

    // Everything but the tuple, its `i8` and its bytes.
    refuse_serialize! {
        shape();
        serialize_bool(bool) -> ();
        serialize_i16(i16) -> ();
        serialize_i32(i32) -> ();
        serialize_i64(i64) -> ();
        serialize_u8(u8) -> ();
        serialize_u16(u16) -> ();
        serialize_u32(u32) -> ();
        serialize_u64(u64) -> ();
        serialize_f32(f32) -> ();
        serialize_f64(f64) -> ();
        serialize_char(char) -> ();
        serialize_str(&str) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(&'static str) -> ();
        serialize_unit_variant(&'static str, u32, &'static str) -> ();
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct(&'static str, usize) -> Self::SerializeStruct;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), PackError> {
        Err(shape())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), PackError> {
        Err(shape())
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), PackError> {
        Err(shape())
    }
}

impl ser::SerializeTuple for &mut ExtWriter<'_> {
    type Ok = ();
    type Error = PackError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), PackError> {
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), PackError> {
        Ok(())
    }
}
