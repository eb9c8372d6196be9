//! Sequences of `char`s written a chunk at a time.
//!
//! Why: a list of one-letter strings (LangGraph's `list[str]` of characters, a `Vec<char>`
//! in Rust) is thousands of two-byte MessagePack strings, and written one `serialize_char` at
//! a time each pays for a round trip through the output vector's length in memory: ~2 ns a
//! letter, the cost of a `fanout_to_subgraph` run's input before its first task starts. Here a
//! sequence whose first element serializes as a `char` is written through a stack buffer and
//! appended a chunk at a time. [`CharProbe`] asks an element for its `char` without knowing its
//! type: inlined, for a `&char` that is a load, and anything that serializes otherwise is
//! refused at its first call and written by the [`Packer`](super::msgpack::Packer) as before.
//! The bytes are the ones `rmp-serde` writes (a char is a str of its UTF-8 bytes).

use serde::Serialize;
use serde::ser::{self, Impossible};

/// Bytes in the stack buffer: room for 256 ASCII letters.
const CHUNK: usize = 512;
/// The most one char takes: a fixstr marker and four bytes of UTF-8.
const WIDEST: usize = 5;

/// Writes the elements of a sequence of known length whose `first` element is `first_char`,
/// chars through the stack buffer, anything else through `other`. Returns how many elements
/// it wrote (with the first).
pub(super) fn write_chars<I, E>(
    out: &mut Vec<u8>,
    first_char: char,
    rest: I,
    mut other: impl FnMut(&mut Vec<u8>, &I::Item) -> Result<(), E>,
) -> Result<usize, E>
where
    I: Iterator,
    I::Item: Serialize,
{
    let mut chunk = [0u8; CHUNK];
    let mut at = put(&mut chunk, 0, first_char);
    let mut count = 1;
    for item in rest {
        count += 1;
        match item.serialize(CharProbe) {
            Ok(c) => {
                if at > CHUNK - WIDEST {
                    out.extend_from_slice(&chunk[..at]);
                    at = 0;
                }
                at = put(&mut chunk, at, c);
            }
            Err(NotChar) => {
                out.extend_from_slice(&chunk[..at]);
                at = 0;
                other(out, &item)?;
            }
        }
    }
    out.extend_from_slice(&chunk[..at]);
    Ok(count)
}

/// Writes `c` as a MessagePack str at `at` (at most `CHUNK - WIDEST`); the position after it.
#[inline(always)]
fn put(chunk: &mut [u8; CHUNK], at: usize, c: char) -> usize {
    if c.is_ascii() {
        chunk[at..at + 2].copy_from_slice(&[0xa1, c as u8]);
        at + 2
    } else {
        let len = c.len_utf8();
        chunk[at] = 0xa0 | len as u8;
        c.encode_utf8(&mut chunk[at + 1..at + 1 + len]);
        at + 1 + len
    }
}

/// The value was not a `char`.
#[derive(Debug)]
pub(super) struct NotChar;

impl std::fmt::Display for NotChar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a char")
    }
}

impl std::error::Error for NotChar {}

impl ser::Error for NotChar {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NotChar
    }
}

/// A serializer that accepts one `char` and refuses everything else.
pub(super) struct CharProbe;

type Refused = Impossible<char, NotChar>;

impl ser::Serializer for CharProbe {
    type Ok = char;
    type Error = NotChar;
    type SerializeSeq = Refused;
    type SerializeTuple = Refused;
    type SerializeTupleStruct = Refused;
    type SerializeTupleVariant = Refused;
    type SerializeMap = Refused;
    type SerializeStruct = Refused;
    type SerializeStructVariant = Refused;

    #[inline]
    fn serialize_char(self, v: char) -> Result<char, NotChar> {
        Ok(v)
    }

    /// As the Packer answers: a value that writes itself differently for people (a char)
    /// than for machines (a number) must be asked the same question.
    #[inline]
    fn is_human_readable(&self) -> bool {
        false
    }

    #[inline]
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<char, NotChar> {
        Err(NotChar)
    }

    #[inline]
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<char, NotChar> {
        // A newtype is written as its content, but the Packer gives extension newtypes
        // their own bytes: leave every newtype to it.
        Err(NotChar)
    }

    #[inline]
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<char, NotChar> {
        Err(NotChar)
    }

    refuse_serialize! {
        NotChar;
        serialize_bool(bool) -> char;
        serialize_i8(i8) -> char;
        serialize_i16(i16) -> char;
        serialize_i32(i32) -> char;
        serialize_i64(i64) -> char;
        serialize_i128(i128) -> char;
        serialize_u8(u8) -> char;
        serialize_u16(u16) -> char;
        serialize_u32(u32) -> char;
        serialize_u64(u64) -> char;
        serialize_u128(u128) -> char;
        serialize_f32(f32) -> char;
        serialize_f64(f64) -> char;
        serialize_str(&str) -> char;
        serialize_bytes(&[u8]) -> char;
        serialize_none() -> char;
        serialize_unit() -> char;
        serialize_unit_struct(&'static str) -> char;
        serialize_unit_variant(&'static str, u32, &'static str) -> char;
        serialize_seq(Option<usize>) -> Refused;
        serialize_tuple(usize) -> Refused;
        serialize_tuple_struct(&'static str, usize) -> Refused;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Refused;
        serialize_map(Option<usize>) -> Refused;
        serialize_struct(&'static str, usize) -> Refused;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Refused;
    }
}

#[cfg(test)]
mod tests {
    use serde::{Serialize, Serializer};

    /// A char for some values, a string for others: a sequence of it mixes the two paths.
    struct Either(u32);

    impl Serialize for Either {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match char::from_u32(self.0) {
                Some(c) if !self.0.is_multiple_of(7) => s.serialize_char(c),
                _ => s.serialize_str("seven"),
            }
        }
    }

    /// A char for people, its code for machines.
    struct Code(char);

    impl Serialize for Code {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            if s.is_human_readable() {
                s.serialize_char(self.0)
            } else {
                s.serialize_u32(self.0 as u32)
            }
        }
    }

    fn ours<T: Serialize>(value: &T) -> Vec<u8> {
        crate::checkpoint::msgpack::to_vec_named(value).unwrap()
    }

    fn theirs<T: Serialize>(value: &T) -> Vec<u8> {
        rmp_serde::to_vec_named(value).unwrap()
    }

    #[test]
    fn char_sequences_are_written_as_rmp_serde_writes_them() {
        let mut rng = fastrand::Rng::with_seed(3);
        let ascii: Vec<char> = (0..10_000).map(|_| rng.lowercase()).collect();
        let wide: Vec<char> = (0..3_000)
            .map(|i| ['a', 'é', '中', '🦀', '\0', '\u{7f}', '\u{80}'][i % 7])
            .collect();
        let nested = vec![ascii[..300].to_vec(), Vec::new(), wide[..700].to_vec()];
        for chars in [&ascii, &wide, &ascii[..1].to_vec(), &Vec::new()] {
            assert_eq!(ours(chars), theirs(chars), "{} chars", chars.len());
        }
        assert_eq!(ours(&nested), theirs(&nested));
        let deque: std::collections::VecDeque<char> = wide.iter().copied().collect();
        assert_eq!(ours(&deque), theirs(&deque));
        // The first element decides the path; later ones that are not chars still go through
        // the Packer, and a first one that is not a char leaves the rest to it.
        let mixed: Vec<Either> = (1..2_000).map(Either).collect();
        assert_eq!(ours(&mixed), theirs(&mixed));
        let seven_first: Vec<Either> = (0..500).map(Either).collect();
        assert_eq!(ours(&seven_first), theirs(&seven_first));
        let options: Vec<Option<char>> = vec![Some('a'), None, Some('b')];
        assert_eq!(ours(&options), theirs(&options));
        // Asked as the Packer asks: a value that is a char only for people stays a number.
        let codes: Vec<Code> = "abc".chars().map(Code).collect();
        assert_eq!(ours(&codes), theirs(&codes));
    }

    #[test]
    fn shared_chars_are_stored_once_and_come_back_shared() {
        use crate::Shared;
        use crate::checkpoint::interning::{decode_with_table, encode_with_table};
        // The probe meets a shared value first (as the Packer does, not as people read it):
        // it is numbered once, and every occurrence is a reference to that number.
        let (a, b) = (Shared::new('a'), Shared::new('é'));
        let list = vec![a.clone(), b.clone(), a.clone(), a, b];
        let bytes = encode_with_table(&list, None).unwrap();
        let back: Vec<Shared<char>> = decode_with_table(&bytes, None).unwrap();
        assert_eq!(back, list);
        assert!(Shared::ptr_eq(&back[0], &back[2]) && Shared::ptr_eq(&back[0], &back[3]));
        assert!(Shared::ptr_eq(&back[1], &back[4]));
    }
}
