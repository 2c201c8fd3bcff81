//! Go's `encoding/json` reading of a JSON text that a kube component decodes itself (an
//! annotation that holds JSON): the syntax error its scanner reports, word for word, and the
//! text read into a tree that keeps each number as written (Go's decoder judges a number by its
//! literal: `1.5` and `1e3` are not an `int64`).
//!
//! Invariants: the text is judged as Go's scanner judges it — whitespace is space, tab, CR and
//! LF; a string may hold any byte from 0x20 on but `"` and `\`; the end of the text is judged as
//! one more space (so `tru` ends "in literal true", `[1` ends "unexpected end of JSON input");
//! the offending byte is quoted as Go's `quoteChar` quotes it; nesting deeper than Go's 10,000
//! levels is refused as Go refuses it. [`parse`] reads only text that [`syntax_error`] accepts,
//! and builds containers only to the depth asked (deeper ones keep only their kind), so no text
//! nests its recursion deeper than that.

/// What a container being read expects next, as Go's scanner's parse states.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's scanner's step functions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits still to come.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside the literal `word`, at its byte `at`.
    Literal(&'static str, usize),
}

/// Go's `maxNestingDepth`.
const MAX_DEPTH: usize = 10_000;

struct Scanner {
    step: Step,
    stack: Vec<Parse>,
    end_top: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: the byte read as the rune of the same number, quoted as `strconv.Quote`
/// quotes it, between single quotes.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".into(),
        b'"' => "'\"'".into(),
        b'\\' => r"'\\'".into(),
        0x07 => r"'\a'".into(),
        0x08 => r"'\b'".into(),
        0x0c => r"'\f'".into(),
        b'\n' => r"'\n'".into(),
        b'\r' => r"'\r'".into(),
        b'\t' => r"'\t'".into(),
        0x0b => r"'\v'".into(),
        0x20..=0x7e => format!("'{}'", c as char),
        0x00..=0x1f | 0x7f => format!(r"'\x{c:02x}'"),
        // Latin-1: printable but for the C1 controls, the no-break space and the soft hyphen.
        0xa1..=0xac | 0xae..=0xff => format!("'{}'", c as char),
        _ => format!(r"'\u{c:04x}'"),
    }
}

impl Scanner {
    fn new() -> Self {
        Scanner { step: Step::BeginValue, stack: Vec::new(), end_top: false }
    }

    fn fail(c: u8, context: &str) -> Result<(), String> {
        Err(format!("invalid character {} {context}", quote_char(c)))
    }

    fn pop(&mut self) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
    }

    /// Reads one byte; Err is the scanner's message.
    fn feed(&mut self, c: u8) -> Result<(), String> {
        // A state that hands the byte on loops to the next one.
        loop {
            match self.step {
                Step::BeginValueOrEmpty | Step::BeginValue if is_space(c) => return Ok(()),
                Step::BeginValueOrEmpty if c == b']' => {
                    self.step = Step::EndValue;
                }
                Step::BeginValueOrEmpty => self.step = Step::BeginValue,
                Step::BeginValue => {
                    self.step = match c {
                        b'{' | b'[' if self.stack.len() >= MAX_DEPTH => {
                            return Self::fail(c, "exceeded max depth");
                        }
                        b'{' => {
                            self.stack.push(Parse::ObjectKey);
                            Step::BeginStringOrEmpty
                        }
                        b'[' => {
                            self.stack.push(Parse::ArrayValue);
                            Step::BeginValueOrEmpty
                        }
                        b'"' => Step::InString,
                        b'-' => Step::Neg,
                        b'0' => Step::Zero,
                        b'1'..=b'9' => Step::One,
                        b't' => Step::Literal("true", 1),
                        b'f' => Step::Literal("false", 1),
                        b'n' => Step::Literal("null", 1),
                        _ => return Self::fail(c, "looking for beginning of value"),
                    };
                    return Ok(());
                }
                Step::BeginStringOrEmpty | Step::BeginString if is_space(c) => return Ok(()),
                Step::BeginStringOrEmpty if c == b'}' => {
                    if let Some(top) = self.stack.last_mut() {
                        *top = Parse::ObjectValue;
                    }
                    self.step = Step::EndValue;
                }
                Step::BeginStringOrEmpty => self.step = Step::BeginString,
                Step::BeginString => {
                    if c == b'"' {
                        self.step = Step::InString;
                        return Ok(());
                    }
                    return Self::fail(c, "looking for beginning of object key string");
                }
                Step::EndValue => {
                    let Some(top) = self.stack.last().copied() else {
                        self.step = Step::EndTop;
                        self.end_top = true;
                        continue;
                    };
                    if is_space(c) {
                        return Ok(());
                    }
                    match (top, c) {
                        (Parse::ObjectKey, b':') => {
                            *self.stack.last_mut().expect("a container") = Parse::ObjectValue;
                            self.step = Step::BeginValue;
                        }
                        (Parse::ObjectKey, _) => return Self::fail(c, "after object key"),
                        (Parse::ObjectValue, b',') => {
                            *self.stack.last_mut().expect("a container") = Parse::ObjectKey;
                            self.step = Step::BeginString;
                        }
                        (Parse::ObjectValue, b'}') | (Parse::ArrayValue, b']') => self.pop(),
                        (Parse::ObjectValue, _) => return Self::fail(c, "after object key:value pair"),
                        (Parse::ArrayValue, b',') => self.step = Step::BeginValue,
                        (Parse::ArrayValue, _) => return Self::fail(c, "after array element"),
                    }
                    return Ok(());
                }
                Step::EndTop => {
                    return if is_space(c) { Ok(()) } else { Self::fail(c, "after top-level value") };
                }
                Step::InString => {
                    match c {
                        b'"' => self.step = Step::EndValue,
                        b'\\' => self.step = Step::InStringEsc,
                        0x00..=0x1f => return Self::fail(c, "in string literal"),
                        _ => {}
                    }
                    return Ok(());
                }
                Step::InStringEsc => {
                    self.step = match c {
                        b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => Step::InString,
                        b'u' => Step::InStringEscU(4),
                        _ => return Self::fail(c, "in string escape code"),
                    };
                    return Ok(());
                }
                Step::InStringEscU(left) => {
                    if !c.is_ascii_hexdigit() {
                        return Self::fail(c, "in \\u hexadecimal character escape");
                    }
                    self.step = if left == 1 { Step::InString } else { Step::InStringEscU(left - 1) };
                    return Ok(());
                }
                Step::Neg => {
                    self.step = match c {
                        b'0' => Step::Zero,
                        b'1'..=b'9' => Step::One,
                        _ => return Self::fail(c, "in numeric literal"),
                    };
                    return Ok(());
                }
                Step::One if c.is_ascii_digit() => return Ok(()),
                Step::One => self.step = Step::Zero,
                Step::Zero => match c {
                    b'.' => {
                        self.step = Step::Dot;
                        return Ok(());
                    }
                    b'e' | b'E' => {
                        self.step = Step::E;
                        return Ok(());
                    }
                    _ => self.step = Step::EndValue,
                },
                Step::Dot => {
                    if c.is_ascii_digit() {
                        self.step = Step::Dot0;
                        return Ok(());
                    }
                    return Self::fail(c, "after decimal point in numeric literal");
                }
                Step::Dot0 => match c {
                    b'0'..=b'9' => return Ok(()),
                    b'e' | b'E' => {
                        self.step = Step::E;
                        return Ok(());
                    }
                    _ => self.step = Step::EndValue,
                },
                Step::E if matches!(c, b'+' | b'-') => {
                    self.step = Step::ESign;
                    return Ok(());
                }
                Step::E => self.step = Step::ESign,
                Step::ESign => {
                    if c.is_ascii_digit() {
                        self.step = Step::E0;
                        return Ok(());
                    }
                    return Self::fail(c, "in exponent of numeric literal");
                }
                Step::E0 if c.is_ascii_digit() => return Ok(()),
                Step::E0 => self.step = Step::EndValue,
                Step::Literal(word, at) => {
                    let want = word.as_bytes()[at];
                    if c != want {
                        return Self::fail(c, &format!("in literal {word} (expecting {})", quote_char(want)));
                    }
                    self.step = if at + 1 == word.len() { Step::EndValue } else { Step::Literal(word, at + 1) };
                    return Ok(());
                }
            }
        }
    }
}

/// The message Go's `json.Unmarshal` gives for `text` before decoding anything, None when the
/// text is JSON.
pub(crate) fn syntax_error(text: &[u8]) -> Option<String> {
    let mut scanner = Scanner::new();
    for &c in text {
        if let Err(e) = scanner.feed(c) {
            return Some(e);
        }
    }
    if scanner.end_top {
        return None;
    }
    if let Err(e) = scanner.feed(b' ') {
        return Some(e);
    }
    (!scanner.end_top).then(|| "unexpected end of JSON input".to_string())
}

/// A JSON value as Go's decoder meets it: numbers as written, object members in order (a key
/// written twice is met twice).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Raw {
    Null,
    Bool(bool),
    /// A number's literal.
    Number(String),
    String(String),
    Array(Vec<Raw>),
    Object(Vec<(String, Raw)>),
}

impl Raw {
    /// The JSON kind Go's type errors name (`object`, `number`…).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Raw::Null => "null",
            Raw::Bool(_) => "bool",
            Raw::Number(_) => "number",
            Raw::String(_) => "string",
            Raw::Array(_) => "array",
            Raw::Object(_) => "object",
        }
    }
}

/// Reads `text`, which [`syntax_error`] accepts (None otherwise), building containers
/// `depth` levels deep: the top value is at level 0; a container at level `depth` is read as an
/// empty one of its kind.
pub(crate) fn parse(text: &str, depth: usize) -> Option<Raw> {
    if syntax_error(text.as_bytes()).is_some() {
        return None;
    }
    let mut reader = Reader { text: text.as_bytes(), at: 0, depth };
    reader.value(0)
}

struct Reader<'a> {
    text: &'a [u8],
    at: usize,
    /// The level from which containers are skipped.
    depth: usize,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        while self.text.get(self.at).copied().is_some_and(is_space) {
            self.at += 1;
        }
    }

    /// Skips the container that starts here, without recursion.
    fn skip_container(&mut self) {
        let mut open = 0usize;
        let mut in_string = false;
        while let Some(&b) = self.text.get(self.at) {
            self.at += 1;
            match (in_string, b) {
                (true, b'\\') => self.at += 1,
                (true, b'"') => in_string = false,
                (true, _) => {}
                (false, b'"') => in_string = true,
                (false, b'{' | b'[') => open += 1,
                (false, b'}' | b']') => {
                    open -= 1;
                    if open == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    fn value(&mut self, level: usize) -> Option<Raw> {
        self.skip_space();
        let c = *self.text.get(self.at)?;
        if matches!(c, b'{' | b'[') && level >= self.depth {
            self.skip_container();
            return Some(if c == b'{' { Raw::Object(Vec::new()) } else { Raw::Array(Vec::new()) });
        }
        Some(match c {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                loop {
                    self.skip_space();
                    match self.text.get(self.at)? {
                        b'}' => {
                            self.at += 1;
                            break;
                        }
                        b',' => self.at += 1,
                        _ => {
                            let Raw::String(key) = self.value(level + 1)? else { return None };
                            self.skip_space();
                            self.at += 1; // the colon
                            members.push((key, self.value(level + 1)?));
                        }
                    }
                }
                Raw::Object(members)
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_space();
                    match self.text.get(self.at)? {
                        b']' => {
                            self.at += 1;
                            break;
                        }
                        b',' => self.at += 1,
                        _ => items.push(self.value(level + 1)?),
                    }
                }
                Raw::Array(items)
            }
            b'"' => {
                let start = self.at;
                self.at += 1;
                while let Some(&b) = self.text.get(self.at) {
                    self.at += 1;
                    match b {
                        b'\\' => self.at += 1,
                        b'"' => break,
                        _ => {}
                    }
                }
                let literal = std::str::from_utf8(&self.text[start..self.at]).ok()?;
                // A lone surrogate escape is read as Go reads it: the replacement character.
                Raw::String(serde_json::from_str(literal).unwrap_or_else(|_| lossy_string(literal)))
            }
            b't' | b'f' | b'n' => {
                let word = match c {
                    b't' => "true",
                    b'f' => "false",
                    _ => "null",
                };
                self.at += word.len();
                match c {
                    b'n' => Raw::Null,
                    _ => Raw::Bool(c == b't'),
                }
            }
            _ => {
                let start = self.at;
                while self
                    .text
                    .get(self.at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.at += 1;
                }
                Raw::Number(std::str::from_utf8(&self.text[start..self.at]).ok()?.to_string())
            }
        })
    }
}

/// A string literal whose escapes serde refuses (a lone surrogate): each lone surrogate read
/// as U+FFFD, as Go reads it; a pair as its character.
fn lossy_string(literal: &str) -> String {
    let inner = literal.get(1..literal.len().saturating_sub(1)).unwrap_or_default();
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    let mut pending_high: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            if pending_high.take().is_some() {
                out.push('\u{fffd}');
            }
            out.push(c);
            continue;
        }
        let escape = chars.next();
        if escape != Some('u')
            && let Some(_) = pending_high.take()
        {
            out.push('\u{fffd}');
        }
        match escape {
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = u32::from_str_radix(&hex, 16).unwrap_or(0xfffd);
                match (pending_high.take(), unit) {
                    (Some(high), 0xdc00..=0xdfff) => {
                        let code = 0x10000 + ((high - 0xd800) << 10) + (unit - 0xdc00);
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    (high, 0xd800..=0xdbff) => {
                        if high.is_some() {
                            out.push('\u{fffd}');
                        }
                        pending_high = Some(unit);
                    }
                    (high, _) => {
                        if high.is_some() {
                            out.push('\u{fffd}');
                        }
                        out.push(char::from_u32(unit).unwrap_or('\u{fffd}'));
                    }
                }
            }
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    if pending_high.is_some() {
        out.push('\u{fffd}');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> Option<String> {
        syntax_error(text.as_bytes())
    }

    #[test]
    fn json_passes() {
        for text in ["[]", " [ {\"key\": \"a\", \"n\": -1.5e+3} , null ] ", "null", "0", "\"\\u00e9\"", "{}", "[[]]"] {
            assert_eq!(error(text), None, "{text}");
        }
    }

    #[test]
    fn errors_are_gos() {
        let cases = [
            ("abc", "invalid character 'a' looking for beginning of value"),
            ("", "unexpected end of JSON input"),
            ("[1", "unexpected end of JSON input"),
            ("[1,]", "invalid character ']' looking for beginning of value"),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            ("{\"a\": 1 2}", "invalid character '2' after object key:value pair"),
            ("[1 2]", "invalid character '2' after array element"),
            ("{1: 2}", "invalid character '1' looking for beginning of object key string"),
            ("{\"a\":1,}", "invalid character '}' looking for beginning of object key string"),
            ("[] x", "invalid character 'x' after top-level value"),
            ("\"a\nb\"", r"invalid character '\n' in string literal"),
            ("\"\\x\"", "invalid character 'x' in string escape code"),
            ("\"\\u12g4\"", r"invalid character 'g' in \u hexadecimal character escape"),
            ("-a", "invalid character 'a' in numeric literal"),
            ("-", "invalid character ' ' in numeric literal"),
            ("1.x", "invalid character 'x' after decimal point in numeric literal"),
            ("1e+", "invalid character ' ' in exponent of numeric literal"),
            ("tru", "invalid character ' ' in literal true (expecting 'e')"),
            ("nul1", "invalid character '1' in literal null (expecting 'l')"),
            ("fals", "invalid character ' ' in literal false (expecting 'e')"),
            ("'a'", r"invalid character '\'' looking for beginning of value"),
            ("\u{1}", r"invalid character '\x01' looking for beginning of value"),
            ("\u{e9}", "invalid character 'Ã' looking for beginning of value"),
            ("01", "invalid character '1' after top-level value"),
        ];
        for (text, want) in cases {
            assert_eq!(error(text).as_deref(), Some(want), "{text:?}");
        }
    }

    #[test]
    fn parse_keeps_numbers_as_written() {
        let raw = parse(r#"[{"Key": "a\u00e9", "n": 1e3, "m": -0.50}, null, true]"#, 2).unwrap();
        assert_eq!(
            raw,
            Raw::Array(vec![
                Raw::Object(vec![
                    ("Key".into(), Raw::String("aé".into())),
                    ("n".into(), Raw::Number("1e3".into())),
                    ("m".into(), Raw::Number("-0.50".into())),
                ]),
                Raw::Null,
                Raw::Bool(true),
            ])
        );
        assert_eq!(parse(r#""\ud800x""#, 1), Some(Raw::String("\u{fffd}x".into())));
        assert_eq!(parse(r#""\ud800\ud83d\ude00\udc00""#, 1), Some(Raw::String("\u{fffd}😀\u{fffd}".into())));
        assert_eq!(parse("[1", 1), None);
        // Containers past the depth asked keep their kind only.
        assert_eq!(
            parse(r#"[{"a": [[1], "]"]}]"#, 2),
            Some(Raw::Array(vec![Raw::Object(vec![("a".into(), Raw::Array(vec![]))])]))
        );
    }

    #[test]
    fn nesting_is_bounded_as_gos() {
        let deep = format!("{}{}", "[".repeat(10_001), "]".repeat(10_001));
        assert_eq!(error(&deep).as_deref(), Some("invalid character '[' exceeded max depth"));
        let deepest = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(error(&deepest), None);
        assert_eq!(parse(&deepest, 2), Some(Raw::Array(vec![Raw::Array(vec![Raw::Array(vec![])])])));
    }
}
