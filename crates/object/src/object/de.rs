//! The typed decoder: a serde deserializer over the scanner's structural index.
//!
//! Why: a typed decode ([`Object::get`](super::Object::get), [`Object::decode`](super::Object::decode))
//! is most of what a handler that reads objects costs. serde_json steps through the document a
//! byte at a time: finding where each string ends, skipping whitespace, looking for the next
//! comma, colon or brace (a third of a pod's decode).
//!
//! How: stage 1 of the [scanner](super::scan) classifies the document 64 bytes at a time and the
//! deserializer takes its tokens from the structurals: a string's end is the next unescaped
//! quote (one bit operation, no byte loop), the next member is the next structural. Strings
//! without escapes are handed to the target borrowed, others decoded into one scratch buffer.
//!
//! Invariant: the result is exactly what `serde_json::from_str` gives for the same document, or
//! [`Fallback`], which means "decode with serde_json instead" (the caller then does, and gets
//! serde_json's value or error). The target is called exactly as serde_json calls it: borrowed
//! strings where serde_json borrows, `visit_u64`/`visit_i64` for integers that fit, `visit_unit`
//! for null, `visit_some` after a peek, no size hints, serde_json's map-key rules (keys read as
//! numbers or booleans), unit variants named by a string and variants written as one-member
//! maps, structs written as arrays, byte strings borrowed. Numbers it does not parse itself
//! (fractions, exponents, `-0`, integers beyond 64 bits, `i128`/`u128`) are handed to serde_json's
//! number parser on the number's text, so floats are serde_json's to the bit.
//!
//! It refuses (and the decode falls back) what it does not reproduce: documents holding any byte
//! below 0x20 (checked before anything is read: control characters, which serde_json refuses
//! inside strings, and the whitespace of pretty-printed JSON; API servers send compact JSON),
//! raw values, byte strings with escapes, targets that read nothing where serde_json would look
//! at the next token, and whatever serde_json refuses too (nesting deeper than [`MAX_DEPTH`],
//! numbers out of range, every error). A refusal reaches the target as an error, so it is left for
//! what serde_json also refuses or for rare target types. Any error that passed through this
//! deserializer (its refusals, its visitors' errors) makes the decode fall back even if the target
//! caught it and went on, since serde_json's error would have differed (errors are counted per
//! thread, see [`Error`]); errors the target makes and catches itself (serde's untagged enums
//! trying their variants on buffered content) read exactly as serde_json's and do not. What
//! serde_json checks in values the target skips (number syntax, literals, escapes) the strict
//! scanner checks too, so a document serde_json refuses never decodes here.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

use super::scan::Scanner;

/// Containers nested deeper than this are refused, as serde_json refuses them (its recursion
/// limit: 128 levels, the 128th refused; values the target skips are not limited).
pub(crate) const MAX_DEPTH: usize = 127;

/// serde_json's marker for capturing a value as raw JSON text.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// "Decode this document with serde_json instead": this deserializer does not reproduce what
/// serde_json would do with it (see the module docs), or the document or target failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fallback;

/// The error of this deserializer. One the target makes and keeps to itself (serde's untagged
/// enums trying their variants, a flattened optional struct that is absent) is not counted and
/// renders as serde_json's would (its message: serde_json positions only errors that pass through
/// its deserializer); one that passes through this deserializer's methods is counted (see
/// [`counted`]), and so is every refusal ([`refuse`]): a decode that counted any falls back, as
/// the target may have caught it and gone on with something serde_json's error would not have
/// led to.
///
/// One pointer wide (as serde_json's), so that a `Result` of it costs the hot path nothing.
pub(crate) struct Error(Box<ErrorImpl>);

struct ErrorImpl {
    msg: Box<str>,
    line: usize,
    column: usize,
}

impl Error {
    /// As serde_json's `make_error`: a message ending in " at line L column C" (an error turned
    /// into a message and back) keeps its position apart.
    fn new(mut msg: String) -> Self {
        let (line, column) = split_position(&mut msg).unwrap_or((0, 0));
        Error(Box::new(ErrorImpl { msg: msg.into_boxed_str(), line, column }))
    }
}

/// Splits " at line L column C" off the end of `msg`, as serde_json does.
fn split_position(msg: &mut String) -> Option<(usize, usize)> {
    let at = msg.rfind(" at line ")?;
    let (line, rest) = msg[at + " at line ".len()..]
        .split_at_checked(msg[at + " at line ".len()..].bytes().take_while(u8::is_ascii_digit).count())?;
    let column = rest.strip_prefix(" column ")?;
    if column.is_empty() || !column.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let position = (line.parse().ok()?, column.parse().ok()?);
    msg.truncate(at);
    Some(position)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        if e.line == 0 { f.write_str(&e.msg) } else { write!(f, "{} at line {} column {}", e.msg, e.line, e.column) }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        write!(f, "Error({:?}, line: {}, column: {})", e.msg, e.line, e.column)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    #[cold]
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(msg.to_string())
    }

    #[cold]
    fn invalid_type(unexp: de::Unexpected, exp: &dyn de::Expected) -> Self {
        Error::custom(format_args!("invalid type: {}, expected {}", Unexpected(unexp), exp))
    }

    #[cold]
    fn invalid_value(unexp: de::Unexpected, exp: &dyn de::Expected) -> Self {
        Error::custom(format_args!("invalid value: {}, expected {}", Unexpected(unexp), exp))
    }
}

/// An unexpected value as serde_json names it: `null` for the unit. (serde_json formats floats
/// its own way; this decoder hands out none, and an error naming one is counted.)
struct Unexpected<'a>(de::Unexpected<'a>);

impl fmt::Display for Unexpected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            de::Unexpected::Unit => f.write_str("null"),
            de::Unexpected::Float(_) => {
                note_error();
                fmt::Display::fmt(&self.0, f)
            }
            other => fmt::Display::fmt(&other, f),
        }
    }
}

thread_local! {
    /// Errors counted on this thread by this decoder (and by the substituted decode's proxy).
    static ERRORS: Cell<u64> = const { Cell::new(0) };
}

/// This decoder's refusal ("serde_json may do otherwise here"), counted.
#[cold]
pub(super) fn refuse() -> Error {
    note_error();
    Error::new("decode with serde_json instead".into())
}

/// A visitor's result, its error counted: serde_json would have given the error its position,
/// so a target that catches it and keeps its text would see another text. Counted where
/// serde_json positions errors: values read by the deserializer (strings, numbers, literals,
/// maps, sequences), not what it hands back to the target (`visit_some`, newtypes, enums, map
/// keys read as strings), whose errors are positioned, and here counted, where they leave the
/// enclosing map or sequence.
#[inline(always)]
fn counted<T>(r: R<T>) -> R<T> {
    if r.is_err() {
        note_error();
    }
    r
}

/// Counts an error made during a decode on this thread (see [`Error`]).
#[cold]
pub(super) fn note_error() {
    ERRORS.with(|e| e.set(e.get().wrapping_add(1)));
}

/// The count of errors made on this thread, to compare before and after a decode.
pub(super) fn errors_made() -> u64 {
    ERRORS.with(Cell::get)
}

type R<T> = Result<T, Error>;

/// Decodes `doc` with `f` (which deserializes the document's one value from the deserializer it
/// is given), then checks that nothing but whitespace follows.
pub(crate) fn decode<'a, T>(doc: &'a str, f: impl FnOnce(&mut De<'a>) -> R<T>) -> Result<T, Fallback> {
    if has_control(doc.as_bytes()) {
        return Err(Fallback);
    }
    let errors = errors_made();
    let mut de = De {
        s: Scanner::strict(doc.as_bytes()),
        doc,
        peeked: None,
        unclosed: None,
        failed: false,
        depth: 0,
        scratch: Vec::new(),
    };
    let v = f(&mut de).map_err(|_| Fallback)?;
    if let Some(closer) = de.unclosed.take()
        && de.s.tok() != closer
    {
        return Err(Fallback);
    }
    if de.failed || de.peeked.is_some() || de.s.end("trailing characters").is_err() || errors_made() != errors {
        return Err(Fallback);
    }
    Ok(v)
}

/// Decodes `doc` into `T` (see [`decode`]).
pub(crate) fn from_str<'a, T: de::Deserialize<'a>>(doc: &'a str) -> Result<T, Fallback> {
    decode(doc, |de| T::deserialize(de))
}

/// Whether `b` holds a byte below 0x20.
fn has_control(b: &[u8]) -> bool {
    let (chunks, rest) = b.as_chunks::<32>();
    chunks.iter().any(|c| c.iter().fold(false, |any, &x| any | (x < 0x20))) || rest.iter().any(|&x| x < 0x20)
}

/// The deserializer's state: the strict scanner over the document and a token taken but not yet
/// used.
pub(crate) struct De<'a> {
    s: Scanner<'a>,
    doc: &'a str,
    /// A token taken to look at and put back (its first byte; the scanner is still at it).
    peeked: Option<u8>,
    /// The closing bracket of a map or sequence whose visitor returned before reading it: the
    /// next token must be that bracket (serde_json's end-of-map check, made when the next token
    /// is read so that the visitor's value is returned without a copy).
    unclosed: Option<u8>,
    /// A check that cannot fail the call it is made in failed (see [`Access`]'s drop).
    failed: bool,
    /// Containers entered and not yet left.
    depth: usize,
    /// Strings with escapes, decoded.
    scratch: Vec<u8>,
}

impl<'a> De<'a> {
    /// The next token's first byte (0 at the end of the input or at an error stage 1 found).
    #[inline(always)]
    fn next(&mut self) -> u8 {
        if let Some(c) = self.peeked.take() {
            return c;
        }
        if self.unclosed.is_some() {
            return self.next_after_unclosed();
        }
        self.s.tok()
    }

    /// Reads the closing bracket a visitor left, then the next token.
    #[cold]
    fn next_after_unclosed(&mut self) -> u8 {
        if self.unclosed.take().is_some_and(|closer| self.s.tok() == closer) {
            self.depth -= 1;
            return self.s.tok();
        }
        self.failed = true;
        0
    }

    /// `raw`, a slice of the document between a string's quotes, as text.
    #[inline(always)]
    fn text(&self, raw: &'a [u8]) -> R<&'a str> {
        // Both ends are next to an ASCII quote, so on character boundaries (checked anyway).
        let start = (raw.as_ptr() as usize).wrapping_sub(self.doc.as_ptr() as usize);
        self.doc.get(start..start + raw.len()).ok_or_else(refuse)
    }

    /// Visits the string whose opening quote is the token just taken: borrowed when it has no
    /// escapes, as serde_json does, else decoded. (The visitor's error is not counted here: a
    /// value's string is counted by the caller, a key's is not, as serde_json positions errors
    /// of values and not of keys.)
    #[inline]
    fn string<V: Visitor<'a>>(&mut self, visitor: V) -> R<V::Value> {
        if let Some(raw) = self.s.plain_string() {
            return visitor.visit_borrowed_str(self.text(raw)?);
        }
        match self.s.string_or_decoded(&mut self.scratch) {
            Ok(Some(raw)) => visitor.visit_borrowed_str(self.text(raw)?),
            Ok(None) => visitor.visit_str(std::str::from_utf8(&self.scratch).map_err(|_| refuse())?),
            Err(_) => Err(refuse()),
        }
    }

    /// Visits the number whose first byte `c` is the token just taken, as serde_json does:
    /// integers that fit 64 bits here (`visit_u64`, or `visit_i64` when negative), anything else
    /// (fractions, exponents, `-0`, integers beyond 64 bits: serde_json's float paths) by
    /// serde_json's own number parser on the number's text.
    #[inline(never)]
    fn number<V: Visitor<'a>>(&mut self, c: u8, visitor: V) -> R<V::Value> {
        let (start, n) = self.number_text(c)?;
        let (negative, digits) = match n.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, n),
        };
        // (The strict scanner checked the grammar: no sign or leading zero in `digits`.)
        let mut v: u64 = 0;
        for &d in digits {
            match v.checked_mul(10).and_then(|v| v.checked_add(u64::from(d.wrapping_sub(b'0')))) {
                Some(next) if d.is_ascii_digit() => v = next,
                _ => return self.serde_json_number(start, n.len(), |de| de.deserialize_any(visitor)),
            }
        }
        if !negative {
            counted(visitor.visit_u64(v))
        } else if (1..=1 << 63).contains(&v) {
            counted(visitor.visit_i64((v as i64).wrapping_neg()))
        } else {
            self.serde_json_number(start, n.len(), |de| de.deserialize_any(visitor))
        }
    }

    /// The number whose first byte `c` is the token just taken: where it starts, and its text
    /// (checked against JSON's grammar by the strict scanner).
    #[inline(always)]
    fn number_text(&mut self, c: u8) -> R<(usize, &'a [u8])> {
        if !(c == b'-' || c.is_ascii_digit()) {
            return Err(refuse());
        }
        let start = self.s.i;
        let end = self.s.number().map_err(|_| refuse())?;
        let doc: &'a str = self.doc;
        Ok((start, &doc.as_bytes()[start..end]))
    }

    /// Deserializes the `len` bytes of number text at `start` with serde_json's deserializer
    /// (`f` calls the method serde_json would call at this position).
    #[cold]
    fn serde_json_number<T>(
        &self,
        start: usize,
        len: usize,
        f: impl FnOnce(&mut serde_json::Deserializer<serde_json::de::StrRead<'a>>) -> serde_json::Result<T>,
    ) -> R<T> {
        let text = self.doc.get(start..start + len).ok_or_else(refuse)?;
        let mut de = serde_json::Deserializer::from_str(text);
        // The whole text must be the number (serde_json would find the rest where it expects a
        // comma or a bracket). (An error here has serde_json's position within the number's text,
        // not the document's: counted.)
        let v = f(&mut de).map_err(|_| refuse())?;
        de.end().map_err(|_| refuse())?;
        Ok(v)
    }

    /// Visits the literal `true` or `false` whose first byte `c` is the token just taken.
    #[inline]
    fn boolean<V: Visitor<'a>>(&mut self, c: u8, visitor: V) -> R<V::Value> {
        match c {
            b't' => {
                self.literal(b"true")?;
                counted(visitor.visit_bool(true))
            }
            b'f' => {
                self.literal(b"false")?;
                counted(visitor.visit_bool(false))
            }
            _ => Err(refuse()),
        }
    }

    /// The number whose first byte `c` is the token just taken, by serde_json's parser (`f`).
    fn number_by_serde_json<T>(
        &mut self,
        c: u8,
        f: impl FnOnce(&mut serde_json::Deserializer<serde_json::de::StrRead<'a>>) -> serde_json::Result<T>,
    ) -> R<T> {
        let (start, n) = self.number_text(c)?;
        self.serde_json_number(start, n.len(), f)
    }

    /// Checks the literal at the token just taken.
    #[inline]
    fn literal<const N: usize>(&mut self, lit: &[u8; N]) -> R<()> {
        self.s.literal(lit).map_err(|_| refuse())
    }

    #[inline(always)]
    fn enter(&mut self) -> R<()> {
        if self.depth >= MAX_DEPTH {
            return Err(refuse());
        }
        self.depth += 1;
        Ok(())
    }

    /// Visits the map whose `{` is the token just taken. The map must be over once the visitor
    /// returns (serde_json's end-of-map check): see [`Access`]'s drop.
    fn map<V: Visitor<'a>>(&mut self, visitor: V) -> R<V::Value> {
        self.enter()?;
        let mut access = Access { de: self, state: State::First, closer: b'}' };
        let r = visitor.visit_map(&mut access);
        drop(access);
        if r.is_err() {
            note_error();
        }
        r
    }

    /// Visits the sequence whose `[` is the token just taken (as [`De::map`]).
    fn seq<V: Visitor<'a>>(&mut self, visitor: V) -> R<V::Value> {
        self.enter()?;
        let mut access = Access { de: self, state: State::First, closer: b']' };
        let r = visitor.visit_seq(&mut access);
        drop(access);
        if r.is_err() {
            note_error();
        }
        r
    }
}

/// Deserializer methods for numbers: serde_json reads every one as whatever number is there
/// (its `deserialize_number`).
macro_rules! numbers {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
            let c = self.next();
            self.number(c, visitor)
        }
    )*};
}

impl<'a> Deserializer<'a> for &mut De<'a> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.next() {
            b'"' => counted(self.string(visitor)),
            b'{' => self.map(visitor),
            b'[' => self.seq(visitor),
            c @ (b't' | b'f') => self.boolean(c, visitor),
            b'n' => {
                self.literal(b"null")?;
                counted(visitor.visit_unit())
            }
            c => self.number(c, visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        let c = self.next();
        self.boolean(c, visitor)
    }

    numbers! {
        deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64, deserialize_u8, deserialize_u16,
        deserialize_u32, deserialize_u64, deserialize_f32, deserialize_f64,
    }

    // serde_json parses these its own way: by its parser, on the number's text.
    fn deserialize_i128<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        let c = self.next();
        self.number_by_serde_json(c, |de| de.deserialize_i128(visitor))
    }

    fn deserialize_u128<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        let c = self.next();
        self.number_by_serde_json(c, |de| de.deserialize_u128(visitor))
    }

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.next() {
            b'"' => counted(self.string(visitor)),
            _ => Err(refuse()),
        }
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        self.deserialize_str(visitor)
    }

    // serde_json hands over a string's bytes (borrowed when it has no escapes; decoding escapes
    // without checking them is not reproduced) or reads an array as a sequence.
    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.next() {
            b'"' => match self.s.string_or_decoded(&mut self.scratch) {
                Ok(Some(raw)) => counted(visitor.visit_borrowed_bytes(raw)),
                _ => Err(refuse()),
            },
            b'[' => self.seq(visitor),
            _ => Err(refuse()),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.next() {
            b'n' => {
                self.literal(b"null")?;
                visitor.visit_none()
            }
            c => {
                self.peeked = Some(c);
                visitor.visit_some(self)
            }
        }
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.next() {
            b'n' => {
                self.literal(b"null")?;
                counted(visitor.visit_unit())
            }
            _ => Err(refuse()),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(self, _name: &'static str, visitor: V) -> R<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(self, name: &'static str, visitor: V) -> R<V::Value> {
        if name == RAW_VALUE_TOKEN {
            return Err(refuse());
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.next() {
            b'[' => self.seq(visitor),
            _ => Err(refuse()),
        }
    }

    fn deserialize_tuple<V: Visitor<'a>>(self, _len: usize, visitor: V) -> R<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(self, _name: &'static str, _len: usize, visitor: V) -> R<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.next() {
            b'{' => self.map(visitor),
            _ => Err(refuse()),
        }
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> R<V::Value> {
        // (serde_json also reads a struct written as an array.)
        match self.next() {
            b'{' => self.map(visitor),
            b'[' => self.seq(visitor),
            _ => Err(refuse()),
        }
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> R<V::Value> {
        match self.next() {
            b'"' => {
                self.peeked = Some(b'"');
                visitor.visit_enum(UnitVariant { de: self })
            }
            b'{' => {
                self.enter()?;
                let v = visitor.visit_enum(Variant { de: &mut *self })?;
                // The variant's value must be the map's only member.
                if self.next() != b'}' {
                    return Err(refuse());
                }
                self.depth -= 1;
                Ok(v)
            }
            _ => Err(refuse()),
        }
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.next() {
            // A string must end (the scanner skips strings as one token; inside a container an
            // unterminated one leaves the container open, but not at the top level).
            b'"' => {
                self.s.closing_quote().map_err(|_| refuse())?;
            }
            c => self.s.skip_value(c, self.depth + 1).map_err(|_| refuse())?,
        }
        visitor.visit_unit()
    }
}

/// Where a map or sequence is.
#[derive(Clone, Copy)]
enum State {
    /// Nothing read yet.
    First,
    /// A key was read, its value is next (maps only).
    Value,
    /// After a member or element.
    Rest,
    /// The closing bracket was read.
    Done,
}

/// The members of a map or the elements of a sequence. Dropped before its closing bracket was
/// read (the visitor returned early), it leaves the bracket to be read with the next token.
struct Access<'x, 'a> {
    de: &'x mut De<'a>,
    state: State,
    /// `}` or `]`.
    closer: u8,
}

impl Access<'_, '_> {
    /// The closing bracket was read.
    #[inline(always)]
    fn done(&mut self) {
        self.state = State::Done;
        self.de.depth -= 1;
    }
}

impl Drop for Access<'_, '_> {
    fn drop(&mut self) {
        match self.state {
            State::Done => {}
            // A key read without its value: serde_json's end-of-map check finds the `:` (already
            // taken here).
            State::Value => self.de.failed = true,
            State::First | State::Rest => {
                // At most one bracket waits (a second one, or a token put back, is not followed).
                if self.de.unclosed.is_some() || self.de.peeked.is_some() {
                    self.de.failed = true;
                }
                self.de.unclosed = Some(self.closer);
            }
        }
    }
}

impl<'a> MapAccess<'a> for Access<'_, 'a> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'a>>(&mut self, seed: K) -> R<Option<K::Value>> {
        let c = match self.state {
            State::First => self.de.next(),
            State::Rest => match self.de.next() {
                b',' => self.de.next(),
                b'}' => {
                    self.done();
                    return Ok(None);
                }
                _ => return Err(refuse()),
            },
            State::Done => return Ok(None),
            State::Value => return Err(refuse()),
        };
        match c {
            b'"' => {}
            b'}' if matches!(self.state, State::First) => {
                self.done();
                return Ok(None);
            }
            _ => return Err(refuse()),
        }
        // A key the target did not read leaves the scanner at its opening quote: serde_json would
        // then look for the `:` there.
        let at = self.de.s.i;
        let key = seed.deserialize(Key { de: &mut *self.de })?;
        if self.de.s.i == at || self.de.next() != b':' {
            return Err(refuse());
        }
        self.state = State::Value;
        Ok(Some(key))
    }

    fn next_value_seed<T: DeserializeSeed<'a>>(&mut self, seed: T) -> R<T::Value> {
        if !matches!(self.state, State::Value) {
            return Err(refuse());
        }
        self.state = State::Rest;
        // (A value the target does not read leaves its first token, put back or not, where the
        // next read expects `,` or `}`: a value never starts with either, so that read refuses,
        // as serde_json does.)
        seed.deserialize(&mut *self.de)
    }
}

impl<'a> SeqAccess<'a> for Access<'_, 'a> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'a>>(&mut self, seed: T) -> R<Option<T::Value>> {
        match self.state {
            State::First => match self.de.next() {
                b']' => {
                    self.done();
                    return Ok(None);
                }
                c => self.de.peeked = Some(c),
            },
            State::Rest => match self.de.next() {
                // An element must follow (serde_json: "trailing comma").
                b',' => match self.de.next() {
                    b']' | 0 => return Err(refuse()),
                    c => self.de.peeked = Some(c),
                },
                b']' => {
                    self.done();
                    return Ok(None);
                }
                _ => return Err(refuse()),
            },
            State::Done => return Ok(None),
            State::Value => return Err(refuse()),
        }
        self.state = State::Rest;
        // (An element the target does not read leaves its first token put back where the next
        // read expects `,` or `]`, as for map values.)
        seed.deserialize(&mut *self.de).map(Some)
    }
}

/// A map key (its opening quote is the token just taken), as serde_json's map-key deserializer:
/// read as a string whatever the target asks for, except numbers and booleans (which serde_json
/// parses out of the key: not reproduced), `Option` (always `Some`), newtypes, enums and bytes.
struct Key<'x, 'a> {
    de: &'x mut De<'a>,
}

macro_rules! key_as_string {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'a>>(self, $(_: $ty,)* visitor: V) -> R<V::Value> {
            self.de.string(visitor)
        }
    )*};
}

macro_rules! key_as_number {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
            self.number(|de| de.deserialize_f64(visitor))
        }
    )*};
}

impl<'a> Key<'_, 'a> {
    /// A key read as a number, as serde_json reads it: the key's text (no escapes) must be a
    /// JSON number from quote to quote, parsed by serde_json's number parser (`f`).
    fn number<T>(
        self,
        f: impl FnOnce(&mut serde_json::Deserializer<serde_json::de::StrRead<'a>>) -> serde_json::Result<T>,
    ) -> R<T> {
        let start = self.de.s.i + 1;
        match self.de.s.string_or_decoded(&mut self.de.scratch) {
            Ok(Some(text)) if super::scan::is_json_number(text) => self.de.serde_json_number(start, text.len(), f),
            _ => Err(refuse()),
        }
    }
}

impl<'a> Deserializer<'a> for Key<'_, 'a> {
    type Error = Error;

    key_as_string! {
        deserialize_any(), deserialize_char(), deserialize_str(), deserialize_string(), deserialize_unit(),
        deserialize_unit_struct(name: &'static str), deserialize_seq(), deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize), deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]), deserialize_identifier(),
        deserialize_ignored_any(),
    }

    key_as_number! {
        deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64, deserialize_u8, deserialize_u16,
        deserialize_u32, deserialize_u64, deserialize_f32, deserialize_f64,
    }

    fn deserialize_i128<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        self.number(|de| de.deserialize_i128(visitor))
    }

    fn deserialize_u128<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        self.number(|de| de.deserialize_u128(visitor))
    }

    /// serde_json reads `"true"` and `"false"` keys as booleans (written out, no escapes).
    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        match self.de.s.string_or_decoded(&mut self.de.scratch) {
            Ok(Some(b"true")) => counted(visitor.visit_bool(true)),
            Ok(Some(b"false")) => counted(visitor.visit_bool(false)),
            _ => Err(refuse()),
        }
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        self.de.peeked = Some(b'"');
        self.de.deserialize_bytes(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> R<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(self, name: &'static str, visitor: V) -> R<V::Value> {
        if name == RAW_VALUE_TOKEN {
            return Err(refuse());
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> R<V::Value> {
        self.de.peeked = Some(b'"');
        visitor.visit_enum(UnitVariant { de: self.de })
    }
}

/// An enum written as a map of one member, the variant's name to its value (its `{` taken), as
/// serde_json reads it.
struct Variant<'x, 'a> {
    de: &'x mut De<'a>,
}

impl<'a> EnumAccess<'a> for Variant<'_, 'a> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'a>>(self, seed: T) -> R<(T::Value, Self)> {
        if self.de.next() != b'"' {
            return Err(refuse());
        }
        // (A name the target did not read: serde_json would look for the `:` at its quote.)
        let at = self.de.s.i;
        let v = seed.deserialize(Key { de: &mut *self.de })?;
        if self.de.s.i == at || self.de.next() != b':' {
            return Err(refuse());
        }
        Ok((v, self))
    }
}

impl<'a> VariantAccess<'a> for Variant<'_, 'a> {
    type Error = Error;

    fn unit_variant(self) -> R<()> {
        de::Deserialize::deserialize(&mut *self.de)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(self, seed: T) -> R<T::Value> {
        seed.deserialize(&mut *self.de)
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, visitor: V) -> R<V::Value> {
        self.de.deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'a>>(self, fields: &'static [&'static str], visitor: V) -> R<V::Value> {
        self.de.deserialize_struct("", fields, visitor)
    }
}

/// An enum named by a string (the next token): unit variants only, as serde_json.
struct UnitVariant<'x, 'a> {
    de: &'x mut De<'a>,
}

impl<'a> EnumAccess<'a> for UnitVariant<'_, 'a> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'a>>(self, seed: T) -> R<(T::Value, Self)> {
        let v = seed.deserialize(&mut *self.de)?;
        Ok((v, self))
    }
}

impl<'a> VariantAccess<'a> for UnitVariant<'_, 'a> {
    type Error = Error;

    fn unit_variant(self) -> R<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(self, _seed: T) -> R<T::Value> {
        Err(refuse())
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, _visitor: V) -> R<V::Value> {
        Err(refuse())
    }

    fn struct_variant<V: Visitor<'a>>(self, _fields: &'static [&'static str], _visitor: V) -> R<V::Value> {
        Err(refuse())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Debug;

    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Pod, Secret, Service};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::core::{DynamicObject, PartialObjectMeta};
    use proptest::prelude::*;
    use serde::Deserialize;
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    use super::*;

    fn w1_pod() -> String {
        let v: Value = serde_json::from_str(include_str!("../../../bench/data/w1-pod.json")).unwrap();
        serde_json::to_string(&v).unwrap()
    }

    /// Pods exactly as a kube-apiserver 1.35 sent them.
    fn captured_pods() -> Vec<String> {
        include_str!("../testdata/kube-apiserver-1.35-watch-initial-events.jsonl")
            .lines()
            .filter_map(|l| {
                let v: Value = serde_json::from_str(l).ok()?;
                (v["object"]["kind"] == "Pod").then(|| v["object"].to_string())
            })
            .collect()
    }

    /// Decodes `doc` both ways: when this decoder gives a value, serde_json gives the same one.
    /// Returns whether this decoder gave one.
    fn agrees<T: DeserializeOwned + PartialEq + Debug>(doc: &str) -> bool {
        let reference = serde_json::from_str::<T>(doc);
        match from_str::<T>(doc) {
            Ok(v) => {
                assert_eq!(reference.as_ref().ok(), Some(&v), "serde_json: {reference:?} for {doc:?}");
                true
            }
            Err(Fallback) => false,
        }
    }

    /// [`agrees`] for targets without `PartialEq` (compared by their debug output).
    fn agrees_debug<T: DeserializeOwned + Debug>(doc: &str) -> bool {
        let reference = serde_json::from_str::<T>(doc).map(|v| format!("{v:?}"));
        match from_str::<T>(doc) {
            Ok(v) => {
                assert_eq!(reference.as_ref().ok(), Some(&format!("{v:?}")), "for {doc:?}");
                true
            }
            Err(Fallback) => false,
        }
    }

    /// Every shape of target serde offers, for arbitrary documents.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Shapes {
        #[serde(default)]
        s: Option<String>,
        #[serde(default)]
        i: Option<i32>,
        #[serde(default)]
        u: Option<u8>,
        #[serde(default)]
        x: Option<i64>,
        #[serde(default)]
        f: Option<f64>,
        #[serde(default)]
        b: Option<bool>,
        #[serde(default)]
        c: Option<char>,
        #[serde(default)]
        v: Vec<u64>,
        #[serde(default)]
        m: BTreeMap<String, Value>,
        #[serde(default)]
        k: BTreeMap<u32, bool>,
        #[serde(default)]
        e: Option<Unit>,
        #[serde(default)]
        t: Option<(u8, String)>,
        #[serde(default)]
        n: Option<Newtype>,
        #[serde(default)]
        unit: Option<()>,
        #[serde(default)]
        either: Option<Either>,
        #[serde(default)]
        tagged: Option<Tagged>,
        #[serde(default)]
        bytes: Option<serde_bytes_like::Bytes>,
        #[serde(default)]
        raw: Option<Raw>,
        #[serde(default)]
        first: Option<FirstOnly>,
    }

    #[derive(Debug, Deserialize)]
    struct Raw(Box<serde_json::value::RawValue>);

    impl PartialEq for Raw {
        fn eq(&self, other: &Self) -> bool {
            self.0.get() == other.0.get()
        }
    }

    impl PartialEq for FirstOnly {
        fn eq(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }

    #[derive(Debug, PartialEq, Deserialize)]
    enum Unit {
        A,
        B,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Newtype(String);

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Either {
        N(i64),
        S(String),
        L(Vec<Either>),
        M(BTreeMap<String, Either>),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "kind")]
    enum Tagged {
        One { a: u32 },
        Two(BTreeMap<String, String>),
    }

    /// A map visitor that stops after its first member (serde_json then requires the map's end).
    #[derive(Debug)]
    struct FirstOnly(Option<(String, Value)>);

    impl<'de> Deserialize<'de> for FirstOnly {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = FirstOnly;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a map")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<FirstOnly, A::Error> {
                    Ok(FirstOnly(m.next_entry()?))
                }
            }
            d.deserialize_map(V)
        }
    }

    /// A byte buffer read through `deserialize_bytes` (strings and arrays, as serde_json).
    mod serde_bytes_like {
        #[derive(Debug, PartialEq)]
        pub struct Bytes(pub Vec<u8>);

        impl<'de> serde::Deserialize<'de> for Bytes {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = Bytes;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                        Ok(Bytes(v.to_vec()))
                    }
                }
                d.deserialize_bytes(V)
            }
        }
    }

    fn arb_json(floats: bool) -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            (0u8..=255).prop_map(|n| json!(n)),
            (-1e12f64..1e12).prop_map(move |f| if floats { json!(f) } else { json!(f as i64) }),
            "\\PC{0,16}".prop_map(Value::String),
            "[\"\\\\\u{1}-\u{1f}\u{e9}\u{1F600}a-z]{0,8}".prop_map(Value::String),
            prop::sample::select(vec!["A", "B", "C", "x"]).prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("[a-z0-9]{0,2}|\\PC{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Documents for [`Shapes`]: its fields (and others) with values of any type, so that some
    /// decode and some do not.
    fn arb_shapes() -> impl Strategy<Value = Value> {
        let fields = prop::sample::select(vec![
            "s", "i", "u", "x", "f", "b", "c", "v", "m", "k", "e", "t", "n", "unit", "either", "tagged", "bytes",
            "raw", "first", "other",
        ]);
        let typed = prop_oneof![
            arb_json(true),
            Just(json!({"kind": "One", "a": 3})),
            Just(json!({"kind": "Two", "p": "q"})),
            Just(json!([7, "seven"])),
            Just(json!({"1": true, "22": false})),
            Just(json!("é")),
            Just(json!("\u{1}")),
        ];
        prop::collection::btree_map(fields, typed, 0..8)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
    }

    /// `doc` with one byte inserted, deleted or replaced at `at` (a byte from an alphabet of
    /// JSON's syntax, digits, number and escape characters, control characters and UTF-8).
    fn edit(doc: &str, at: prop::sample::Index, kind: u8, byte: u8) -> Vec<u8> {
        const ALPHABET: &[u8] = b"{}[],:\"\\ \n\t0129-+.eEutrfalsn\x00\x01\x1f\xc3\xa9";
        let mut b = doc.as_bytes().to_vec();
        let pos = at.index(b.len() + 1);
        let c = ALPHABET[usize::from(byte) % ALPHABET.len()];
        match kind % 3 {
            0 => b.insert(pos, c),
            1 if pos < b.len() => {
                b.remove(pos);
            }
            _ if pos < b.len() => b[pos] = c,
            _ => b.push(c),
        }
        b
    }

    /// As [`agrees`] for bytes that may not be UTF-8 (those are decoded by serde_json only).
    fn agrees_bytes<T: DeserializeOwned + PartialEq + Debug>(doc: &[u8]) -> bool {
        std::str::from_utf8(doc).is_ok_and(agrees::<T>)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Compact documents decode here, and as serde_json decodes them (floats by its parser).
        #[test]
        fn values_decode_as_serde_json_decodes_them(v in arb_json(true), pretty in any::<bool>()) {
            let doc = json!({"a": v, "b": [1, -2, "x", 1.5, -0.0, 1e300]});
            let text = if pretty { serde_json::to_string_pretty(&doc).unwrap() } else { doc.to_string() };
            let fast = agrees::<Value>(&text);
            prop_assert!(fast || pretty || text.contains('\u{1}'), "fell back: {text}");
        }

        #[test]
        fn any_value_decodes_here_only_as_serde_json_decodes_it(v in arb_json(true)) {
            agrees::<Value>(&json!({"a": v}).to_string());
        }

        #[test]
        fn typed_targets_decode_here_only_as_serde_json_decodes_them(doc in arb_shapes()) {
            agrees::<Shapes>(&doc.to_string());
            agrees::<BTreeMap<String, Either>>(&doc.to_string());
        }

        /// Near-valid documents: whatever this decoder accepts, serde_json accepts and decodes
        /// the same (number shapes, control characters, escapes, trailing commas and brackets
        /// in read and in skipped values).
        #[test]
        fn edited_documents_decode_here_only_as_serde_json_decodes_them(
            doc in arb_shapes(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<u8>()), 1..3),
        ) {
            let mut b = doc.to_string();
            for (at, kind, byte) in edits {
                b = String::from_utf8_lossy(&edit(&b, at, kind, byte)).into_owned();
            }
            agrees::<Shapes>(&b);
            agrees::<Value>(&b);
        }

        #[test]
        fn edited_pods_decode_here_only_as_serde_json_decodes_them(
            at in any::<prop::sample::Index>(), kind in any::<u8>(), byte in any::<u8>(), which in 0usize..3,
        ) {
            let pods = captured_pods();
            let doc = if which == 0 { w1_pod() } else { pods[which % pods.len()].clone() };
            let b = edit(&doc, at, kind, byte);
            agrees_bytes::<Pod>(&b);
            agrees_bytes::<Value>(&b);
            agrees_bytes::<DynamicObject>(&b);
            let _ = std::str::from_utf8(&b).is_ok_and(agrees_debug::<PartialObjectMeta<Pod>>);
        }
    }

    #[test]
    fn pods_decode_here_as_serde_json_decodes_them() {
        for doc in captured_pods().iter().chain([&w1_pod()]) {
            assert!(agrees::<Pod>(doc), "fell back: {doc}");
            assert!(agrees::<Value>(doc));
            assert!(agrees::<DynamicObject>(doc));
            assert!(agrees_debug::<PartialObjectMeta<Pod>>(doc));
            assert!(agrees::<ObjectMeta>(&serde_json::from_str::<Value>(doc).unwrap()["metadata"].to_string()));
        }
    }

    /// A visitor that refuses `null` (its error made where serde_json does not position it, so
    /// not counted: the decode stays here) and, kept as text, reads as serde_json's.
    #[test]
    fn errors_serde_json_leaves_unpositioned_are_not_counted() {
        #[derive(Debug, PartialEq)]
        struct NotNull;
        impl<'de> Deserialize<'de> for NotNull {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = NotNull;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("anything but null")
                    }
                    fn visit_none<E: de::Error>(self) -> Result<NotNull, E> {
                        Err(E::custom("null refused"))
                    }
                    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<NotNull, D::Error> {
                        de::IgnoredAny::deserialize(d).map(|_| NotNull)
                    }
                }
                d.deserialize_option(V)
            }
        }
        let doc = r#"{"a":null,"b":1}"#;
        assert!(agrees::<BTreeMap<String, OrError<NotNull>>>(doc), "fell back");
        assert_eq!(
            from_str::<BTreeMap<String, OrError<NotNull>>>(doc).unwrap()["a"].0,
            Err("null refused".to_string())
        );
    }

    /// Errors the target makes read as serde_json's: message, position split off a message that
    /// ends with one, debug form.
    #[test]
    fn errors_read_as_serde_jsons() {
        use serde::de::Error as _;
        for msg in
            ["plain", "x at line 3 column 7", "x at line 3 column", "at line 1 column 2", "a at line  column 1", ""]
        {
            let (ours, theirs) = (Error::custom(msg), serde_json::Error::custom(msg));
            assert_eq!(ours.to_string(), theirs.to_string(), "{msg:?}");
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{msg:?}");
        }
        let unexpected =
            [de::Unexpected::Unit, de::Unexpected::Str("s"), de::Unexpected::Signed(-1), de::Unexpected::Map];
        for u in unexpected {
            let ours = Error::invalid_type(u, &"a thing").to_string();
            assert_eq!(ours, serde_json::Error::invalid_type(u, &"a thing").to_string());
            let ours = Error::invalid_value(u, &"a thing").to_string();
            assert_eq!(ours, serde_json::Error::invalid_value(u, &"a thing").to_string());
        }
    }

    /// List items come without `apiVersion` and `kind`: kube's `DynamicObject` and
    /// `PartialObjectMeta` then make (and catch) an error for their flattened `TypeMeta`.
    #[test]
    fn list_items_decode_here_as_dynamic_objects() {
        let page: Value =
            serde_json::from_str(include_str!("../testdata/kube-apiserver-1.35-pods-list-page.json")).unwrap();
        for item in page["items"].as_array().unwrap() {
            assert!(item.get("kind").is_none());
            let doc = item.to_string();
            assert!(agrees::<DynamicObject>(&doc), "fell back");
            assert!(agrees_debug::<PartialObjectMeta<Pod>>(&doc), "fell back");
            assert!(agrees::<Pod>(&doc), "fell back");
        }
    }

    #[test]
    fn other_kinds_decode_here_as_serde_json_decodes_them() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"k": "aGVsbG8=", "e": ""}, "type": "Opaque"});
        assert!(agrees::<Secret>(&secret.to_string()));
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": "https"}]}});
        assert!(agrees::<Service>(&service.to_string()));
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c",
            "resources": {"limits": {"cpu": "1.5", "memory": "1Gi"}}}]}}}});
        assert!(agrees::<Deployment>(&deployment.to_string()));
    }

    /// What serde_json does its own way, or refuses, falls back; serde_json then decides.
    #[test]
    fn what_is_not_reproduced_falls_back() {
        let fallback = |doc: &str| {
            assert_eq!(from_str::<Value>(doc).map(|_| ()), Err(Fallback), "{doc}");
            agrees::<Value>(doc);
        };
        // Floats, negative zero, integers beyond 64 bits: serde_json's float paths, by its own
        // parser on the number's text; 128-bit integers likewise.
        for n in ["1.5", "1e5", "-0", "-0.0", "18446744073709551616", "-9223372036854775809", "2.5e-308", "1E+2"] {
            assert!(agrees::<Value>(&format!(r#"{{"a":{n}}}"#)), "{n}");
            assert!(agrees::<BTreeMap<String, f64>>(&format!(r#"{{"a":{n}}}"#)), "{n}");
        }
        assert!(agrees::<BTreeMap<String, i128>>(r#"{"a":-170141183460469231731687303715884105728,"b":0}"#));
        assert!(agrees::<BTreeMap<String, u128>>(r#"{"a":340282366920938463463374607431768211455}"#));
        // Out of range for serde_json (a float beyond f64, an i128 written with a fraction).
        fallback(r#"{"a":1e400}"#);
        assert_eq!(from_str::<BTreeMap<String, i128>>(r#"{"a":1.5}"#).map(|_| ()), Err(Fallback));
        assert!(serde_json::from_str::<BTreeMap<String, i128>>(r#"{"a":1.5}"#).is_err());
        // Bad number shapes, read or skipped.
        for n in ["01", "-", "1.", ".5", "1e", "+1", "1-2", "0x10"] {
            fallback(&format!(r#"{{"a":{n}}}"#));
            assert!(from_str::<Shapes>(&format!(r#"{{"other":[{n}]}}"#)).is_err(), "{n}");
        }
        // Control characters in strings (read or skipped) and pretty-printing.
        fallback("{\"a\":\"x\ny\"}");
        assert!(from_str::<Shapes>("{\"other\":\"x\u{1}\"}").is_err());
        fallback("{\n  \"a\": 1\n}");
        // Too deep.
        let deep = |n| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        fallback(&deep(MAX_DEPTH));
        assert!(serde_json::from_str::<Value>(&deep(130)).is_err() && from_str::<Value>(&deep(130)).is_err());
        // Trailing commas, missing members, trailing characters.
        for doc in [r#"{"a":[1,]}"#, r#"{"a":1,}"#, r#"{"a":1}x"#, r#"{"a":1} {}"#, r#"{"a"}"#, r#"{"a":}"#] {
            fallback(doc);
        }
        // Raw values and byte strings with escapes.
        for doc in [r#"{"raw":{"x":1}}"#, r#"{"bytes":"a\nb"}"#] {
            assert_eq!(from_str::<Shapes>(doc).map(|_| ()), Err(Fallback), "{doc}");
            assert!(serde_json::from_str::<Shapes>(doc).is_ok(), "serde_json decodes {doc}");
        }
        // Keys read as numbers or booleans, byte strings, structs written as arrays, enums written
        // as maps: as serde_json reads them.
        for doc in [r#"{"k":{"1":true,"22":false}}"#, r#"{"bytes":"abc"}"#, r#"{"t":[7,"x"]}"#] {
            assert!(agrees::<Shapes>(doc), "{doc}");
        }
        assert!(agrees::<Vec<(f64, bool)>>(r#"[[1.5,true]]"#));
        assert!(agrees::<BTreeMap<String, Vec<u8>>>(r#"{"a":[1,2,255]}"#));
        assert!(agrees_debug::<std::collections::HashMap<i64, bool>>(r#"{"-15":true}"#));
        #[derive(Debug, PartialEq, Deserialize)]
        struct FloatKeys(#[serde(with = "float_keys")] Vec<(f64, bool)>);
        mod float_keys {
            use serde::Deserializer;
            use serde::de::{MapAccess, Visitor};
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(f64, bool)>, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Vec<(f64, bool)>;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a map")
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                        let mut v = Vec::new();
                        while let Some(e) = m.next_entry()? {
                            v.push(e);
                        }
                        Ok(v)
                    }
                }
                d.deserialize_map(V)
            }
        }
        assert!(agrees::<FloatKeys>(r#"{"1.5":true,"-0":false,"1e2":true}"#));
        assert!(from_str::<FloatKeys>(r#"{"-0":false}"#).unwrap().0[0].0.is_sign_negative());
        assert!(agrees::<BTreeMap<i128, bool>>(r#"{"-170141183460469231731687303715884105728":true}"#));
        assert!(agrees::<BTreeMap<bool, u8>>(r#"{"true":1,"false":0}"#));
        for doc in [r#"{"01":true}"#, r#"{" 1":true}"#, r#"{"1 ":true}"#, r#"{"\u0031":true}"#, r#"{"x":true}"#] {
            assert!(!agrees::<BTreeMap<u32, bool>>(doc), "{doc}");
            assert!(serde_json::from_str::<BTreeMap<u32, bool>>(doc).is_err(), "{doc}");
        }
        assert!(!agrees::<BTreeMap<bool, u8>>(r#"{"\u0074rue":1}"#));
        #[derive(Debug, PartialEq, Deserialize)]
        struct Point {
            x: i32,
            y: i32,
        }
        assert!(agrees::<Point>("[1,2]"));
        #[derive(Debug, PartialEq, Deserialize)]
        enum Shape {
            Dot,
            Circle(u32),
            Line(u32, u32),
            Rect { w: u32, h: u32 },
        }
        for doc in [r#""Dot""#, r#"{"Dot":null}"#, r#"{"Circle":3}"#, r#"{"Line":[1,2]}"#, r#"{"Rect":{"w":1,"h":2}}"#]
        {
            assert!(agrees::<Shape>(doc), "{doc}");
        }
        for doc in [r#"{"Dot":1}"#, r#"{"Circle":3,"x":1}"#, r#"{"Line":[1]}"#, r#"{}"#, r#"{"Nope":1}"#] {
            assert!(!agrees::<Shape>(doc), "{doc}");
            assert!(serde_json::from_str::<Shape>(doc).is_err(), "{doc}");
        }
    }

    #[test]
    fn integers_strings_and_escapes_decode_exactly() {
        let doc = r#"{"u":255,"i":-2147483648,"x":-9223372036854775808,"s":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00","c":"\u0041","e":"B","n":"nt","t":[1,"x"],"unit":null,"v":[0,18446744073709551615],"either":7,"tagged":{"kind":"One","a":1},"first":{"a":1}}"#;
        assert!(agrees::<Shapes>(doc));
        let s: Shapes = from_str(doc).unwrap();
        assert_eq!(s.s.as_deref(), Some("a\"b\\c/d\u{8}\u{c}\n\r\t\u{e9}\u{1F600}"));
        assert_eq!((s.u, s.i, s.x, s.c, s.e), (Some(255), Some(i32::MIN), Some(i64::MIN), Some('A'), Some(Unit::B)));
        // A visitor that stops early is fine when the map ends there, else falls back (serde_json
        // refuses it).
        assert!(agrees::<Shapes>(r#"{"first":{"a":1}}"#));
        assert_eq!(from_str::<Shapes>(r#"{"first":{"a":1,"b":2}}"#).map(|_| ()), Err(Fallback));
        assert!(serde_json::from_str::<Shapes>(r#"{"first":{"a":1,"b":2}}"#).is_err());
        // Targets that make errors and catch them themselves (an untagged enum trying its
        // variants on buffered content) decode here: those errors read the same here and there.
        assert!(agrees::<Shapes>(r#"{"either":[1,"a",{"k":[]}]}"#));
        assert!(agrees::<BTreeMap<String, OrError<Either>>>(r#"{"a":true,"b":1}"#));
        assert_eq!(
            from_str::<BTreeMap<String, OrError<Either>>>(r#"{"a":true}"#).unwrap()["a"].0,
            Err("data did not match any variant of untagged enum Either".to_string())
        );
        // Such an error names what it did not expect as serde_json does (`null`, not "unit").
        #[derive(Debug, PartialEq, Deserialize)]
        struct Inner {
            #[allow(dead_code)]
            x: u8,
        }
        #[derive(Debug, PartialEq, Deserialize)]
        struct Flat {
            #[serde(flatten)]
            inner: OrError<Inner>,
        }
        assert!(agrees::<Flat>(r#"{"x":null}"#));
        assert_eq!(from_str::<Flat>(r#"{"x":null}"#).unwrap().inner.0, Err("invalid type: null, expected u8".into()));
        // Out of range for the target: serde_json's error.
        assert_eq!(from_str::<Shapes>(r#"{"u":256}"#).map(|_| ()), Err(Fallback));
        // Lone surrogates are refused by both.
        assert!(
            from_str::<Value>(r#"{"a":"\ud800"}"#).is_err()
                && serde_json::from_str::<Value>(r#"{"a":"\ud800"}"#).is_err()
        );
    }

    /// A target that keeps its inner target's result instead of failing (`T::deserialize(d).ok()`,
    /// as `serde_with::DefaultOnError` or a lenient `deserialize_with` does).
    #[derive(Debug, PartialEq)]
    struct OrNone<T>(Option<T>);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for OrNone<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            Ok(OrNone(T::deserialize(d).ok()))
        }
    }

    /// As [`OrNone`], keeping the error's text.
    #[derive(Debug, PartialEq)]
    struct OrError<T>(Result<T, String>);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for OrError<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            Ok(OrError(T::deserialize(d).map_err(|e| e.to_string())))
        }
    }

    /// A map visitor that reads one key and not its value.
    #[derive(Debug, PartialEq)]
    struct KeyOnly(Option<String>);

    impl<'de> Deserialize<'de> for KeyOnly {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = KeyOnly;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a map")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<KeyOnly, A::Error> {
                    Ok(KeyOnly(m.next_key()?))
                }
            }
            d.deserialize_map(V)
        }
    }

    /// A target that reads nothing from its deserializer.
    #[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct Nothing;

    impl<'de> Deserialize<'de> for Nothing {
        fn deserialize<D: Deserializer<'de>>(_d: D) -> Result<Self, D::Error> {
            Ok(Nothing)
        }
    }

    /// A fallback the target swallows does not become a value: serde_json gives `Some(1.5)`.
    #[test]
    fn a_fallback_the_target_swallows_still_falls_back() {
        let raw = r#"{"a":{"x":1}}"#;
        assert!(serde_json::from_str::<BTreeMap<String, OrNone<Raw>>>(raw).unwrap()["a"].0.is_some());
        assert!(!agrees::<BTreeMap<String, OrNone<Raw>>>(raw));
        assert!(!agrees::<BTreeMap<String, OrNone<Vec<serde_bytes_like::Bytes>>>>(r#"{"a":["x\ty"],"b":2}"#));
        // Deeper than serde_json's limit: refused by both, the target sees an error either way.
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(!agrees::<BTreeMap<String, OrNone<Value>>>(&deep));
        // Nothing swallowed: decoded here.
        assert!(agrees::<BTreeMap<String, OrNone<Vec<f64>>>>(r#"{"a":[1,1.5]}"#));
    }

    /// The target's own error, kept: serde_json's text, not this decoder's.
    #[test]
    fn a_target_error_kept_as_a_value_is_serde_jsons() {
        assert!(!agrees::<BTreeMap<String, OrError<u8>>>(r#"{"a":256}"#));
    }

    /// serde_json's end-of-map check finds the `:` after the key: an error.
    #[test]
    fn a_key_read_without_its_value_falls_back() {
        assert!(serde_json::from_str::<KeyOnly>(r#"{"a":}"#).is_err());
        assert!(!agrees::<KeyOnly>(r#"{"a":}"#));
        assert!(!agrees::<BTreeMap<String, KeyOnly>>(r#"{"k":{"a":},"l":1}"#));
    }

    /// serde_json refuses the trailing comma (`has_next_element` checks what follows a comma).
    #[test]
    fn an_element_that_reads_nothing_falls_back() {
        assert!(serde_json::from_str::<Vec<Nothing>>("[,]").is_err());
        assert!(!agrees::<Vec<Nothing>>("[,]"));
        assert!(!agrees::<Vec<Nothing>>("[1,2]"));
    }

    /// serde_json then expects the `:` where the unread key's quote is.
    #[test]
    fn a_key_that_reads_nothing_falls_back() {
        assert!(serde_json::from_str::<BTreeMap<Nothing, u32>>(r#"{"a":1}"#).is_err());
        assert!(!agrees::<BTreeMap<Nothing, u32>>(r#"{"a":1}"#));
    }

    /// A skipped top-level string must end, as serde_json requires.
    #[test]
    fn an_unterminated_skipped_string_is_refused() {
        let docs = ["\"abc", "\"ab\\", "\"\\u12", "  \"{"];
        assert!(docs.iter().all(|doc| serde_json::from_str::<de::IgnoredAny>(doc).is_err()));
        let decoded: Vec<_> = docs
            .iter()
            .filter(|doc| from_str::<de::IgnoredAny>(doc).is_ok() || from_str::<Option<de::IgnoredAny>>(doc).is_ok())
            .collect();
        assert!(decoded.is_empty(), "decoded here, refused by serde_json: {decoded:?}");
        assert!(agrees::<Option<de::IgnoredAny>>("\"abc\""));
    }

    /// A seed that makes an error of its own without reading anything (a target that tries a
    /// lenient element first, as `OrError` does with a type that checks something before reading).
    struct Refuses;

    impl<'de> DeserializeSeed<'de> for Refuses {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, _d: D) -> Result<(), D::Error> {
            Err(de::Error::custom("not this one"))
        }
    }

    /// A sequence visitor that reads a `u32`, then tries [`Refuses`] once and keeps its error's
    /// text, then reads the rest as `u32`s.
    #[derive(Debug, PartialEq)]
    struct TriesOnce(u32, Option<String>, Vec<u32>);

    impl<'de> Deserialize<'de> for TriesOnce {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = TriesOnce;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a sequence")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<TriesOnce, A::Error> {
                    let first = s.next_element()?.unwrap_or(0);
                    let tried = s.next_element_seed(Refuses).err().map(|e| e.to_string());
                    let mut rest = Vec::new();
                    while let Some(x) = s.next_element()? {
                        rest.push(x);
                    }
                    Ok(TriesOnce(first, tried, rest))
                }
            }
            d.deserialize_seq(V)
        }
    }

    /// serde_json checks, after a comma, that an element follows (`has_next_element`: "trailing
    /// comma") before it calls the element's seed; here that is left to the seed reading the
    /// element, so a seed that reads nothing takes the `]` for an element.
    #[test]
    fn a_trailing_comma_is_refused_before_an_element_that_reads_nothing() {
        assert!(serde_json::from_str::<(u32, Nothing)>("[1,]").is_err());
        assert!(!agrees::<(u32, Nothing)>("[1,]"));
    }

    /// The same gap with an error the seed makes and the target catches (uncounted): serde_json
    /// hands the target its own positioned "trailing comma" error, this decoder the seed's.
    #[test]
    fn a_trailing_comma_is_refused_before_a_seed_that_makes_its_own_error() {
        let theirs = serde_json::from_str::<TriesOnce>("[1,]").unwrap();
        assert_eq!(theirs, TriesOnce(1, Some("trailing comma at line 1 column 4".into()), vec![]));
        assert!(!agrees::<TriesOnce>("[1,]"));
        assert!(!agrees::<BTreeMap<String, TriesOnce>>(r#"{"a":[1,],"b":[2,3]}"#));
    }

    /// A target that takes for granted what serde_json reads (`expect` on a member).
    #[derive(Debug, PartialEq)]
    struct Expects(f64);

    impl<'de> Deserialize<'de> for Expects {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Expects;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a map")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Expects, A::Error> {
                    let (_, v): (String, f64) = m.next_entry().expect("a number").expect("a member");
                    Ok(Expects(v))
                }
            }
            d.deserialize_map(V)
        }
    }

    /// Floats are read as serde_json reads them: a target that takes a member for granted gets it
    /// (a refusal is an error the target sees; refusals are left for what serde_json refuses too
    /// or for rare target types: raw values, escaped byte strings).
    #[test]
    fn floats_reach_targets_that_take_them_for_granted() {
        assert_eq!(serde_json::from_str::<Expects>(r#"{"a":1.5}"#).unwrap(), Expects(1.5));
        let ours = std::panic::catch_unwind(|| from_str::<Expects>(r#"{"a":1.5}"#).map(|_| ()));
        assert!(ours.is_ok(), "panicked");
    }
}
