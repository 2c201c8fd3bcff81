//! A fast, hand-written scanner for the identity fields of one JSON object.
//!
//! Why by hand: on the watch hot path the cache needs only `kind`, `apiVersion` and a few
//! `metadata` fields of a ~4.4 KB object, but the whole object must still be checked. A serde
//! derive spends most of its time skipping the uninteresting fields byte by byte; this scanner
//! skips strings with `memchr` (they are most of an object's bytes) and walks structure in a tight
//! loop — several times faster (see the `decode` criterion benchmark).
//!
//! What it checks: the input is exactly one JSON object followed only by whitespace; every
//! skipped value is structurally valid (balanced, correctly separated, terminated strings with
//! valid escapes, literals spelled right, number characters); nesting is at most 512 deep.
//! Extracted strings are fully decoded (escapes, surrogate pairs) and UTF-8 checked. Skipped
//! strings are not checked for raw control characters or UTF-8: the typed decode (`Object::get`)
//! checks them if that part of the object is ever read. It never panics on any input
//! (property-tested against serde_json).

use std::borrow::Cow;

use super::head::{CowStr, MetaHead, ObjectHead, StrPairs};

const MAX_DEPTH: usize = 512;

/// Why a scan failed; the byte offset is where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanError {
    pub offset: usize,
    pub what: &'static str,
    /// The input ended before the object did.
    pub eof: bool,
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

/// A word whose high bit is set in each byte of `w` equal to `b` (and possibly in the bytes above
/// a match, which only matters after the first one: callers use the lowest set bit).
#[inline]
fn has_byte(w: u64, b: u8) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let x = w ^ (LO * b as u64);
    x.wrapping_sub(LO) & !x & HI
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

type R<T> = Result<T, ScanError>;

impl<'a> Scanner<'a> {
    fn err<T>(&self, what: &'static str) -> R<T> {
        Err(ScanError { offset: self.i, what, eof: self.i >= self.b.len() })
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&mut self) -> R<u8> {
        self.ws();
        match self.b.get(self.i) {
            Some(&c) => Ok(c),
            None => self.err("unexpected end of input"),
        }
    }

    #[inline]
    fn expect(&mut self, c: u8, what: &'static str) -> R<()> {
        if self.peek()? == c {
            self.i += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Skips a string whose opening quote is at `self.i`.
    fn skip_string(&mut self) -> R<()> {
        self.i += 1;
        loop {
            // Eight bytes at a time (SWAR): most strings in Kubernetes objects are short keys, for
            // which this beats both a byte loop and a SIMD search's set-up.
            while let Some(chunk) = self.b.get(self.i..self.i + 8) {
                let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
                let hit = has_byte(w, b'"') | has_byte(w, b'\\');
                if hit != 0 {
                    self.i += (hit.trailing_zeros() / 8) as usize;
                    break;
                }
                self.i += 8;
            }
            let rest = &self.b[self.i..];
            match memchr::memchr2(b'"', b'\\', rest) {
                None => {
                    self.i = self.b.len();
                    return self.err("unterminated string");
                }
                Some(p) => {
                    self.i += p;
                    if self.b[self.i] == b'"' {
                        self.i += 1;
                        return Ok(());
                    }
                    self.escape(None)?;
                }
            }
        }
    }

    /// Handles the escape at `self.i` (a backslash), appending its value to `out` if given.
    fn escape(&mut self, out: Option<&mut Vec<u8>>) -> R<()> {
        let Some(&c) = self.b.get(self.i + 1) else {
            self.i = self.b.len();
            return self.err("unterminated string");
        };
        let simple = match c {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'u' => None,
            _ => return self.err("invalid escape"),
        };
        if let Some(v) = simple {
            if let Some(o) = out {
                o.push(v);
            }
            self.i += 2;
            return Ok(());
        }
        let hi = self.hex4(self.i + 2)?;
        self.i += 6;
        let cp = if (0xD800..0xDC00).contains(&hi) {
            // A high surrogate must be followed by an escaped low surrogate.
            if self.b.get(self.i) == Some(&b'\\') && self.b.get(self.i + 1) == Some(&b'u') {
                let lo = self.hex4(self.i + 2)?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return self.err("invalid surrogate pair");
                }
                self.i += 6;
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            } else {
                return self.err("lone surrogate");
            }
        } else if (0xDC00..0xE000).contains(&hi) {
            return self.err("lone surrogate");
        } else {
            hi
        };
        if let Some(o) = out {
            let ch = char::from_u32(cp).ok_or(ScanError { offset: self.i, what: "invalid code point", eof: false })?;
            let mut buf = [0u8; 4];
            o.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
        Ok(())
    }

    fn hex4(&self, at: usize) -> R<u32> {
        let Some(h) = self.b.get(at..at + 4) else {
            return Err(ScanError { offset: self.b.len(), what: "unterminated escape", eof: true });
        };
        let mut v = 0u32;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(ScanError { offset: at, what: "invalid \\u escape", eof: false }),
            };
            v = v * 16 + d as u32;
        }
        Ok(v)
    }

    /// Reads a string (opening quote at the next non-whitespace byte), decoding escapes.
    fn string(&mut self) -> R<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return self.err("expected a string");
        }
        let start = self.i + 1;
        let mut j = start;
        let mut owned: Option<Vec<u8>> = None;
        loop {
            let Some(p) = memchr::memchr2(b'"', b'\\', &self.b[j..]) else {
                self.i = self.b.len();
                return self.err("unterminated string");
            };
            let at = j + p;
            if self.b[at] == b'"' {
                let s = match owned {
                    None => Cow::Borrowed(self.utf8(&self.b[start..at], start)?),
                    Some(mut o) => {
                        o.extend_from_slice(&self.b[j..at]);
                        Cow::Owned(String::from_utf8(o).map_err(|_| ScanError {
                            offset: start,
                            what: "invalid UTF-8 in string",
                            eof: false,
                        })?)
                    }
                };
                self.i = at + 1;
                return Ok(s);
            }
            let o = owned.get_or_insert_with(Vec::new);
            o.extend_from_slice(&self.b[j..at]);
            self.i = at;
            self.escape(Some(o))?;
            j = self.i;
        }
    }

    fn utf8(&self, s: &'a [u8], at: usize) -> R<&'a str> {
        std::str::from_utf8(s).map_err(|_| ScanError { offset: at, what: "invalid UTF-8 in string", eof: false })
    }

    /// A string or null.
    fn opt_string(&mut self) -> R<Option<CowStr<'a>>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Ok(None);
        }
        self.string().map(|s| Some(CowStr(s)))
    }

    fn literal(&mut self, lit: &'static [u8]) -> R<()> {
        if self.b.get(self.i..self.i + lit.len()) == Some(lit) {
            self.i += lit.len();
            Ok(())
        } else if self.b.len() < self.i + lit.len() && lit.starts_with(&self.b[self.i..]) {
            self.i = self.b.len();
            self.err("unexpected end of input")
        } else {
            self.err("invalid literal")
        }
    }

    fn number(&mut self) -> R<()> {
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E') {
                self.i += 1;
            } else {
                break;
            }
        }
        // Cheap shape check: starts with '-' or a digit and ends with a digit.
        let n = &self.b[start..self.i];
        let ok = n.last().is_some_and(u8::is_ascii_digit) && (n[0] == b'-' || n[0].is_ascii_digit());
        if ok {
            Ok(())
        } else if self.i >= self.b.len() {
            self.err("unexpected end of input")
        } else {
            self.err("invalid number")
        }
    }

    /// Skips any value.
    fn skip_value(&mut self, depth: usize) -> R<()> {
        if depth > MAX_DEPTH {
            return self.err("nesting too deep");
        }
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => {
                self.i += 1;
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    if self.peek()? != b'"' {
                        return self.err("expected a key");
                    }
                    self.skip_string()?;
                    self.expect(b':', "expected ':'")?;
                    self.skip_value(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return self.err("expected ',' or '}'"),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                if self.peek()? == b']' {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return self.err("expected ',' or ']'"),
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.err("expected a value"),
        }
    }

    /// Iterates over the members of an object, calling `f(key, scanner)` to consume each value.
    fn object(&mut self, mut f: impl FnMut(&str, &mut Self) -> R<()>) -> R<()> {
        self.expect(b'{', "expected an object")?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.expect(b':', "expected ':'")?;
            f(&key, self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    /// Checks a string map (or null) like [`Scanner::pairs`] but without decoding it.
    fn skip_pairs(&mut self) -> R<()> {
        if self.peek()? == b'n' {
            return self.literal(b"null");
        }
        self.expect(b'{', "expected an object")?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.skip_string_at_peek()?;
            self.expect(b':', "expected ':'")?;
            self.skip_string_at_peek()?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    /// Skips a string at the next non-whitespace byte.
    fn skip_string_at_peek(&mut self) -> R<()> {
        if self.peek()? != b'"' {
            return self.err("expected a string");
        }
        self.skip_string()
    }

    fn pairs(&mut self) -> R<Option<StrPairs<'a>>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Ok(None);
        }
        let mut out = StrPairs::default();
        self.expect(b'{', "expected an object")?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(Some(out));
        }
        loop {
            let k = self.string()?;
            self.expect(b':', "expected ':'")?;
            let v = self.string()?;
            out.0.push((k, v));
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(Some(out));
                }
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }
}

/// Whether a head scan decodes `metadata.annotations` (only watch bookmarks need them) or only
/// checks that they are a map of strings (their values can be large, e.g. kubectl's
/// `last-applied-configuration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Annotations {
    Decode,
    Skip,
}

/// Scans one JSON object for its head, annotations included.
pub(crate) fn scan_head(json: &[u8]) -> Result<ObjectHead<'_>, ScanError> {
    scan_head_with(json, Annotations::Decode)
}

/// Scans one JSON object for its head.
pub(crate) fn scan_head_with(json: &[u8], annotations: Annotations) -> Result<ObjectHead<'_>, ScanError> {
    let mut s = Scanner { b: json, i: 0 };
    let head = head_at(&mut s, annotations)?;
    s.ws();
    if s.i != json.len() {
        return s.err("trailing characters after the object");
    }
    Ok(head)
}

/// The metadata of a list response.
#[derive(Debug, Default)]
pub(crate) struct ListHead<'a> {
    pub kind: Option<CowStr<'a>>,
    pub resource_version: Option<CowStr<'a>>,
    pub continue_token: Option<CowStr<'a>>,
    pub remaining_item_count: Option<i64>,
}

/// Scans a list response in one pass, calling `item(head, bytes)` for each element of `items`.
pub(crate) fn scan_list<'a, E: From<ScanError>>(
    json: &'a [u8],
    mut item: impl FnMut(&ObjectHead<'a>, &'a [u8]) -> Result<(), E>,
) -> Result<ListHead<'a>, E> {
    let mut s = Scanner { b: json, i: 0 };
    let mut list = ListHead::default();
    let mut outer: Result<(), E> = Ok(());
    let r = s.object(|key, s| {
        match key {
            "kind" => list.kind = s.opt_string()?,
            "metadata" => {
                if s.peek()? == b'n' {
                    return s.literal(b"null");
                }
                s.object(|k, s| {
                    match k {
                        "resourceVersion" => list.resource_version = s.opt_string()?,
                        "continue" => list.continue_token = s.opt_string()?,
                        "remainingItemCount" => {
                            s.ws();
                            let start = s.i;
                            if s.peek()? == b'n' {
                                s.literal(b"null")?;
                            } else {
                                s.number()?;
                                list.remaining_item_count =
                                    std::str::from_utf8(&s.b[start..s.i]).ok().and_then(|n| n.parse().ok());
                            }
                        }
                        _ => s.skip_value(2)?,
                    }
                    Ok(())
                })?;
            }
            "items" => {
                if s.peek()? == b'n' {
                    return s.literal(b"null");
                }
                s.expect(b'[', "expected an array of items")?;
                if s.peek()? == b']' {
                    s.i += 1;
                    return Ok(());
                }
                loop {
                    s.ws();
                    let start = s.i;
                    let head = head_at(s, Annotations::Skip)?;
                    if outer.is_ok() {
                        outer = item(&head, &s.b[start..s.i]);
                    }
                    match s.peek()? {
                        b',' => s.i += 1,
                        b']' => {
                            s.i += 1;
                            return Ok(());
                        }
                        _ => return s.err("expected ',' or ']'"),
                    }
                }
            }
            _ => s.skip_value(1)?,
        }
        Ok(())
    });
    r?;
    outer?;
    s.ws();
    if s.i != json.len() {
        return Err(ScanError { offset: s.i, what: "trailing characters after the list", eof: false }.into());
    }
    Ok(list)
}

/// Reads one object's head at the scanner's position, leaving the scanner after it.
fn head_at<'a>(s: &mut Scanner<'a>, annotations: Annotations) -> R<ObjectHead<'a>> {
    let mut head = ObjectHead::default();
    s.object(|key, s| {
        match key {
            "kind" => head.kind = s.opt_string()?,
            "apiVersion" => head.api_version = s.opt_string()?,
            "metadata" => {
                if s.peek()? == b'n' {
                    return s.literal(b"null");
                }
                let mut m = MetaHead::default();
                s.object(|k, s| {
                    match k {
                        "name" => m.name = s.opt_string()?,
                        "namespace" => m.namespace = s.opt_string()?,
                        "resourceVersion" => m.resource_version = s.opt_string()?,
                        "uid" => m.uid = s.opt_string()?,
                        "labels" => m.labels = s.pairs()?,
                        "annotations" => match annotations {
                            Annotations::Decode => m.annotations = s.pairs()?,
                            Annotations::Skip => s.skip_pairs()?,
                        },
                        _ => s.skip_value(2)?,
                    }
                    Ok(())
                })?;
                head.metadata = Some(m);
            }
            _ => s.skip_value(1)?,
        }
        Ok(())
    })?;
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1e12f64..1e12).prop_map(|f| json!(f)),
            "\\PC{0,16}".prop_map(Value::String),
            "[\"\\\\\u{1}-\u{1f}\u{e9}\u{1F600}a-z]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_object() -> impl Strategy<Value = Value> {
        (
            prop::option::of("[a-z0-9.-]{1,12}\\PC{0,3}"),
            prop::option::of("[a-z-]{1,8}"),
            prop::option::of("[0-9]{1,6}"),
            prop::collection::btree_map("[a-z/.]{1,10}\\PC{0,2}", "\\PC{0,10}", 0..4),
            arb_json(),
            arb_json(),
        )
            .prop_map(|(name, ns, rv, labels, extra, spec)| {
                let mut meta = serde_json::Map::new();
                meta.insert("managedFields".into(), extra);
                if let Some(n) = name {
                    meta.insert("name".into(), json!(n));
                }
                if let Some(n) = ns {
                    meta.insert("namespace".into(), json!(n));
                }
                if let Some(r) = rv {
                    meta.insert("resourceVersion".into(), json!(r));
                }
                meta.insert("labels".into(), json!(labels));
                json!({"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec})
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn scanner_agrees_with_serde_on_valid_objects(v in arb_object(), pretty in any::<bool>()) {
            let text = if pretty { serde_json::to_vec_pretty(&v).unwrap() } else { serde_json::to_vec(&v).unwrap() };
            let fast = scan_head(&text).unwrap();
            let reference = ObjectHead::parse_reference(&text).unwrap();
            prop_assert_eq!(fast, reference);
        }

        #[test]
        fn truncated_objects_are_errors(v in arb_object(), cut in 0usize..10_000) {
            let text = serde_json::to_vec(&v).unwrap();
            let cut = cut % text.len();
            let e = scan_head(&text[..cut]).unwrap_err();
            prop_assert!(e.eof, "a truncated object is reported as incomplete: {e}");
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..400)) {
            let _ = scan_head(&b);
        }

        /// One structural edit (a deleted or inserted `{}[],:"`) of a valid document: the scanner
        /// accepts exactly what serde_json accepts. Numbers are non-negative integers and strings
        /// have no control characters, so the only things the scanner leaves to the typed decode
        /// (number shapes, control characters, UTF-8 in skipped strings) cannot arise.
        #[test]
        fn agrees_with_serde_on_edited_documents(
            v in arb_plain_json(),
            at in any::<prop::sample::Index>(),
            edit in prop::option::of(prop::sample::select(br#"{}[],:""#.to_vec())),
        ) {
            let mut doc = br#"{"a":"#.to_vec();
            doc.extend_from_slice(&serde_json::to_vec(&v).unwrap());
            doc.push(b'}');
            let structural: Vec<usize> =
                doc.iter().enumerate().filter(|(_, c)| br#"{}[],:""#.contains(c)).map(|(i, _)| i).collect();
            let pos = structural[at.index(structural.len())];
            match edit {
                None => {
                    doc.remove(pos);
                }
                Some(c) => doc.insert(pos, c),
            }
            let serde_ok = serde_json::from_slice::<serde_json::Value>(&doc).is_ok();
            prop_assert_eq!(scan_head(&doc).is_ok(), serde_ok, "{:?}", String::from_utf8_lossy(&doc));
        }
    }

    fn arb_plain_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u32>().prop_map(|n| json!(n)),
            "\\PC{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"\\\\]{0,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn rejects_structural_errors() {
        for bad in [
            &b"{\"a\":1,}"[..],
            b"{\"a\" 1}",
            b"{\"a\":[1,2}",
            b"{\"a\":tru}",
            b"{\"a\":\"\\x\"}",
            b"{\"a\":\"\\ud800\"}",
            b"{\"metadata\":{\"name\":7}}",
            b"{}{}",
            b"[]",
            b"{\"a\":-}",
        ] {
            assert!(scan_head(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(600), "]".repeat(600));
        assert_eq!(scan_head(deep.as_bytes()).unwrap_err().what, "nesting too deep");
    }

    #[test]
    fn decodes_escapes_in_extracted_strings() {
        let h = scan_head(br#"{"metadata":{"name":"a\"b\\c\u00e9\ud83d\ude00","labels":{"k\/1":"v\n"}}}"#).unwrap();
        let m = h.metadata.unwrap();
        assert_eq!(m.name.as_deref(), Some("a\"b\\c\u{e9}\u{1F600}"));
        let l = m.labels.unwrap().0;
        assert_eq!((l[0].0.as_ref(), l[0].1.as_ref()), ("k/1", "v\n"));
    }

    #[test]
    fn annotations_are_checked_but_decoded_only_on_request() {
        let j = br#"{"metadata":{"name":"a","annotations":{"k":"v\n","l":"w"}}}"#;
        assert_eq!(scan_head(j).unwrap().metadata.unwrap().annotations.unwrap().0.len(), 2);
        let lean = scan_head_with(j, Annotations::Skip).unwrap().metadata.unwrap();
        assert_eq!((lean.name.as_deref(), lean.annotations), (Some("a"), None));
        assert!(scan_head_with(br#"{"metadata":{"annotations":null}}"#, Annotations::Skip).is_ok());
        for bad in [
            &br#"{"metadata":{"annotations":{"k":1}}}"#[..],
            br#"{"metadata":{"annotations":{"k":"v",}}}"#,
            br#"{"metadata":{"annotations":{"k" "v"}}}"#,
            br#"{"metadata":{"annotations":["v"]}}"#,
            br#"{"metadata":{"annotations":{"k":"\x"}}}"#,
            br#"{"metadata":{"annotations":{"k":"v"}"#,
        ] {
            assert!(scan_head(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
            assert!(scan_head_with(bad, Annotations::Skip).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn lists_in_one_pass() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10","continue":"x","remainingItemCount":4},"items":[{"metadata":{"name":"a"}} , {"metadata":{"name":"b"},"spec":[1,{"c":null}]}]}"#;
        let mut names = vec![];
        let l = scan_list(body, |h, bytes| -> Result<(), ScanError> {
            names.push((
                h.metadata.as_ref().unwrap().name.as_deref().unwrap().to_string(),
                String::from_utf8(bytes.to_vec()).unwrap(),
            ));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            names,
            vec![
                ("a".to_string(), r#"{"metadata":{"name":"a"}}"#.to_string()),
                ("b".to_string(), r#"{"metadata":{"name":"b"},"spec":[1,{"c":null}]}"#.to_string())
            ]
        );
        assert_eq!(
            (l.resource_version.as_deref(), l.continue_token.as_deref(), l.remaining_item_count),
            (Some("10"), Some("x"), Some(4))
        );
        assert!(scan_list(b"{\"items\":[{}", |_, _| -> Result<(), ScanError> { Ok(()) }).is_err());
    }
}
