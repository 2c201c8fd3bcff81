//! JSON written as YAML, byte for byte as kube-apiserver writes an answer for
//! `Accept: application/yaml`: its YAML serializer encodes the JSON it would send and hands it
//! to sigs.k8s.io/yaml's `JSONToYAML`, which reads the JSON with go-yaml v2 and writes what it
//! read with go-yaml v2's emitter (libyaml's, ported).
//!
//! What that makes of a JSON document:
//! - block style, two spaces a level, a sequence that is a mapping's value not indented
//!   (`key:` then `- item` at the key's column), empty collections as `{}` and `[]`;
//! - mapping keys in go-yaml's order: character by character, a letter after any other
//!   character, and runs of digits compared by their value (`a2` before `a10`);
//! - a string plain when go-yaml would read it back as that string; double-quoted when it would
//!   read as something else (`"true"`, `"y"`, `"1"`, `""`, `"1:20"`, a timestamp such as
//!   `"2024-01-02T03:04:05Z"`); single-quoted when YAML's syntax forbids it plain (`'*'`,
//!   `'- a'`, `'a: b'`); a string with a line break as a literal block (`|`, `|-`, `|+`, with
//!   an indentation digit when it starts with a space); double-quoted, with escapes, when it
//!   holds characters outside YAML's printable set (tabs, control characters, characters past
//!   U+FFFF) or spaces at a line's end;
//! - plain and quoted strings folded at a space once a line passes 80 characters (keys not);
//! - numbers as go-yaml prints what it reads from Go's JSON of them: integers as they are,
//!   whole floats below 1e21 as integers (`1.0` is `1`, `1e6` is `1000000`), other floats as
//!   Go's shortest `%g` (`1.5`, `1e+21`, `0.00001` is `1e-05`).
//!
//! Invariants: the output is one YAML document ending in a line break, which go-yaml reads
//! back to the same values; the emitter never fails (every string has a double-quoted form).

use serde_json::{Map, Number, Value};

use crate::yaml_resolve;

/// The YAML kube-apiserver writes for the JSON value `v`, or go-yaml's error when a string
/// holds a character its reader refuses (DEL, C1 controls but NEL, U+FFFE, U+FFFF: Go's JSON
/// encoder writes them as they are).
pub(crate) fn encode(v: &Value) -> Result<String, String> {
    let mut nel = false;
    check_strings(v, &mut nel)?;
    let folded;
    let v = if nel {
        folded = fold_nel(v);
        &folded
    } else {
        v
    };
    let mut e =
        Emitter { out: String::new(), column: 0, indent: -1, indents: Vec::new(), whitespace: true, indention: true };
    e.node(v, Context::default());
    // The document's implicit end.
    e.write_indent();
    Ok(e.out)
}

/// Refuses the characters go-yaml's reader refuses in Go's JSON, and notes whether any
/// string holds a NEL (U+0085), which that reader takes for a line break.
fn check_strings(v: &Value, nel: &mut bool) -> Result<(), String> {
    let mut check = |s: &str| {
        for c in s.chars() {
            match c {
                '\u{85}' => *nel = true,
                '\u{7F}'..='\u{9F}' | '\u{FFFE}' | '\u{FFFF}' => {
                    return Err("yaml: control characters are not allowed".to_string());
                }
                _ => {}
            }
        }
        Ok(())
    };
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => check(s)?,
            Value::Array(items) => stack.extend(items),
            Value::Object(m) => {
                for (k, v) in m {
                    check(k)?;
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `v` with its strings as go-yaml reads them inside JSON's double quotes: a run of spaces
/// and NELs holding one NEL is a space, one holding n > 1 is n - 1 line feeds.
fn fold_nel(v: &Value) -> Value {
    let fold = |s: &str| -> String {
        if !s.contains('\u{85}') {
            return s.to_string();
        }
        let mut out = String::with_capacity(s.len());
        let mut run = String::new();
        let mut nels = 0;
        for c in s.chars().map(Some).chain([None]) {
            if let Some(blank @ (' ' | '\u{85}')) = c {
                run.push(blank);
                nels += usize::from(blank == '\u{85}');
                continue;
            }
            match nels {
                0 => out.push_str(&run),
                1 => out.push(' '),
                n => out.extend(std::iter::repeat_n('\n', n - 1)),
            }
            run.clear();
            nels = 0;
            out.extend(c);
        }
        out
    };
    match v {
        Value::String(s) => Value::String(fold(s)),
        Value::Array(items) => Value::Array(items.iter().map(fold_nel).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (fold(k), fold_nel(v))).collect()),
        other => other.clone(),
    }
}

/// Columns per nesting level (go-yaml's default).
const BEST_INDENT: isize = 2;
/// Past this column, a plain or quoted string breaks at its next space.
const BEST_WIDTH: usize = 80;
/// The longest key written as `key: value`; longer keys are written `? key` then `: value`.
const SIMPLE_KEY_MAX: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// Where a node stands (libyaml's emitter contexts).
#[derive(Debug, Clone, Copy, Default)]
struct Context {
    mapping: bool,
    simple_key: bool,
}

/// libyaml's emitter state for block output: the column (in characters), the indentation
/// stack, and whether the last thing written was whitespace or indentation.
struct Emitter {
    out: String,
    column: usize,
    indent: isize,
    indents: Vec<isize>,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn node(&mut self, v: &Value, ctx: Context) {
        match v {
            Value::Array(items) if items.is_empty() => self.empty_flow("[", "]"),
            Value::Object(m) if m.is_empty() => self.empty_flow("{", "}"),
            Value::Array(items) => {
                self.increase_indent(false, ctx.mapping && !self.indention);
                for item in items {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.node(item, Context::default());
                }
                self.pop_indent();
            }
            Value::Object(m) => self.mapping(m),
            Value::Null => self.scalar("null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Value::Number(n) => self.scalar(&number(n), Style::Plain, ctx),
            Value::String(s) => self.scalar(s, string_style(s), ctx),
        }
    }

    fn mapping(&mut self, m: &Map<String, Value>) {
        self.increase_indent(false, false);
        let mut keys: Vec<&String> = m.keys().collect();
        merge_sort(&mut keys);
        for k in keys {
            self.write_indent();
            let key_ctx = Context { mapping: true, ..Context::default() };
            if !has_break(k) && k.len() <= SIMPLE_KEY_MAX {
                self.scalar(k, string_style(k), Context { simple_key: true, ..key_ctx });
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(k, string_style(k), key_ctx);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(&m[k.as_str()], key_ctx);
        }
        self.pop_indent();
    }

    /// An empty collection, which go-yaml writes in flow style.
    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    /// A scalar in the style asked for, or the first the emitter allows after it.
    fn scalar(&mut self, value: &str, asked: Style, ctx: Context) {
        let a = Analysis::of(value);
        let mut style = asked;
        if ctx.simple_key && a.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && ctx.simple_key)) {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::DoubleQuoted;
        }
        self.increase_indent(true, false);
        let chars: Vec<char> = value.chars().collect();
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(&chars, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(&chars, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(&chars, allow_breaks),
            Style::Literal => self.write_literal(&chars),
        }
        self.pop_indent();
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.put(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, indicator: &str, need_whitespace: bool, is_whitespace: bool, is_indention: bool) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        indicator.chars().for_each(|c| self.put(c));
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn write_plain(&mut self, v: &[char], allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        self.write_text(v, allow_breaks, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, v: &[char], allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        self.write_text(v, allow_breaks, true);
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The text of a plain or single-quoted scalar, which libyaml writes alike: past the width
    /// a space (not a single-quoted text's first or last) breaks the line, a line break is
    /// written twice (a reader folds one), and a single-quoted text's `'` is doubled.
    fn write_text(&mut self, v: &[char], allow_breaks: bool, quoted: bool) {
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in v.iter().enumerate() {
            if c == ' ' {
                let inner = !quoted || (i > 0 && i + 1 < v.len());
                if allow_breaks && !spaces && self.column > BEST_WIDTH && inner && v.get(i + 1) != Some(&' ') {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if quoted && c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
    }

    fn write_double_quoted(&mut self, v: &[char], allow_breaks: bool) {
        // libyaml escapes every character of a string that starts with a byte order mark.
        let bom = v.first() == Some(&'\u{FEFF}');
        self.write_indicator("\"", true, false, false);
        let mut spaces = false;
        for (i, &c) in v.iter().enumerate() {
            if !is_printable(c) || bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ => {
                        let code = c as u32;
                        let (mark, digits) = match code {
                            0..=0xFF => ('x', 2),
                            0x100..=0xFFFF => ('u', 4),
                            _ => ('U', 8),
                        };
                        self.put(mark);
                        for k in (0..digits).rev() {
                            let d = (code >> (4 * k)) & 0xF;
                            self.put(char::from_digit(d, 16).unwrap_or('0').to_ascii_uppercase());
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i + 1 < v.len() {
                    self.write_indent();
                    if v[i + 1] == ' ' {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, v: &[char]) {
        self.write_indicator("|", true, false, false);
        // Block scalar hints: an indentation digit when the text starts with a space or a
        // break; `-` when it ends without a break, `+` when it ends with more than one.
        if v.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator("2", false, false, false);
        }
        let chomp = match v {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in v {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// What a scalar's characters allow in block context (libyaml's
/// `yaml_emitter_analyze_scalar`; nothing is written in flow context but empty collections).
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

impl Analysis {
    fn of(value: &str) -> Analysis {
        if value.is_empty() {
            return Analysis {
                multiline: false,
                block_plain_allowed: true,
                single_quoted_allowed: true,
                block_allowed: false,
            };
        }
        let v: Vec<char> = value.chars().collect();
        let mut block_indicators = value.starts_with("---") || value.starts_with("...");
        let (mut line_breaks, mut special_characters) = (false, false);
        let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
            (false, false, false, false);
        let (mut break_space, mut space_break) = (false, false);
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_whitespace = true;
        for (i, &c) in v.iter().enumerate() {
            let last = i + 1 == v.len();
            let followed_by_whitespace = last || matches!(v[i + 1], ' ' | '\t');
            if i == 0 {
                match c {
                    '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%' | '@' | '`' => {
                        block_indicators = true;
                    }
                    '?' | ':' | '-' => block_indicators |= followed_by_whitespace,
                    _ => {}
                }
            } else {
                match c {
                    ':' => block_indicators |= followed_by_whitespace,
                    '#' => block_indicators |= preceded_by_whitespace,
                    _ => {}
                }
            }
            if !is_printable(c) {
                special_characters = true;
            }
            if c == ' ' {
                leading_space |= i == 0;
                trailing_space |= last;
                break_space |= previous_break;
                previous_space = true;
                previous_break = false;
            } else if is_break(c) {
                line_breaks = true;
                leading_break |= i == 0;
                trailing_break |= last;
                space_break |= previous_space;
                previous_space = false;
                previous_break = true;
            } else {
                previous_space = false;
                previous_break = false;
            }
            preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
        }
        let mut a = Analysis {
            multiline: line_breaks,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: true,
        };
        if leading_space || leading_break || trailing_space || trailing_break || line_breaks {
            a.block_plain_allowed = false;
        }
        if trailing_space {
            a.block_allowed = false;
        }
        if break_space {
            a.block_plain_allowed = false;
            a.single_quoted_allowed = false;
        }
        if space_break || special_characters {
            a.block_plain_allowed = false;
            a.single_quoted_allowed = false;
            a.block_allowed = false;
        }
        if block_indicators {
            a.block_plain_allowed = false;
        }
        a
    }
}

/// YAML's line breaks: CR, LF, NEL, LS and PS.
fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn has_break(s: &str) -> bool {
    s.chars().any(is_break)
}

/// libyaml's printable set: LF, ASCII's printable characters, and U+00A0 to U+FFFD but for
/// surrogates, the byte order mark and U+FFFE (characters past U+FFFF are escaped).
fn is_printable(c: char) -> bool {
    matches!(c, '\n' | '\x20'..='\x7E' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}') && c != '\u{FEFF}'
}

/// The style go-yaml v2 asks for a string: literal with a line break, plain when it reads
/// back as the same string, double-quoted otherwise.
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if yaml_resolve::is_string(s) && !yaml_resolve::is_base60_float(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

/// A number as go-yaml v2 prints what it reads from Go's JSON of it: an integer as an int or
/// uint64; a float Go's JSON writes without fraction or exponent (a whole number from 1e-6 to
/// 1e21: `1234567`, `0` for `-0`) as the integer go-yaml reads there; any other float as a
/// float64 (`strconv.FormatFloat(f, 'g', -1, 64)`: `1.5`, `1e+21`, `1e-07`).
fn number(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f == 0.0 {
        return "0".into();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
            return (f as i64).to_string();
        }
        if (0.0..1.844_674_407_370_955_2e19).contains(&f) {
            return (f as u64).to_string();
        }
    }
    go_float(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` as go-yaml writes it (`.inf`, `.nan`).
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    crate::go_fmt::float(f)
}

/// Sorts keys as go-yaml v2's `keyList` (a merge sort: the order is go-yaml's whatever it is).
fn merge_sort(keys: &mut Vec<&String>) {
    if keys.len() <= 1 {
        return;
    }
    let mut right = keys.split_off(keys.len() / 2);
    merge_sort(keys);
    merge_sort(&mut right);
    let left = std::mem::take(keys);
    let (mut l, mut r) = (left.into_iter().peekable(), right.into_iter().peekable());
    while let (Some(a), Some(b)) = (l.peek(), r.peek()) {
        if key_less(b, a) {
            keys.extend(r.next());
        } else {
            keys.extend(l.next());
        }
    }
    keys.extend(l);
    keys.extend(r);
}

/// go-yaml v2's order of string keys: at the first difference, two letters compare as
/// characters, a letter comes after anything else, and otherwise the runs of digits starting
/// there compare by value (then by length; a run after a non-zero digit counts its zeros).
fn key_less(a: &str, b: &str) -> bool {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let is_digit = |c: char| c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric());
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            for j in (0..i).rev() {
                if !is_digit(ar[j]) {
                    break;
                }
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && is_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && is_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn yaml(v: &Value) -> String {
        encode(v).unwrap()
    }

    #[test]
    fn objects_are_written_as_kubectl_shows_them() {
        let pod = json!({
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "uid": "0b3f1c6e-8a4c-4a4e-9f55-2c1c4f0e7d11",
                "resourceVersion": "211",
                "creationTimestamp": "2024-05-01T10:00:00Z",
                "labels": {"app": "web", "tier": "1"},
                "annotations": {}
            },
            "spec": {
                "containers": [{"name": "c", "image": "nginx:1.27", "args": ["-c", "echo hi"], "resources": {}}],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "enableServiceLinks": true
            },
            "status": {"phase": "Pending", "qosClass": "BestEffort"}
        });
        let want = "\
apiVersion: v1
kind: Pod
metadata:
  annotations: {}
  creationTimestamp: \"2024-05-01T10:00:00Z\"
  labels:
    app: web
    tier: \"1\"
  name: web
  namespace: default
  resourceVersion: \"211\"
  uid: 0b3f1c6e-8a4c-4a4e-9f55-2c1c4f0e7d11
spec:
  containers:
  - args:
    - -c
    - echo hi
    image: nginx:1.27
    name: c
    resources: {}
  enableServiceLinks: true
  restartPolicy: Always
  terminationGracePeriodSeconds: 30
status:
  phase: Pending
  qosClass: BestEffort
";
        assert_eq!(yaml(&pod), want);
    }

    #[test]
    fn strings_take_the_style_go_yaml_gives_them() {
        let cases = [
            ("plain", "plain"),
            ("", "\"\""),
            ("true", "\"true\""),
            ("y", "\"y\""),
            ("off", "\"off\""),
            ("null", "\"null\""),
            ("n", "\"n\""),
            ("~", "\"~\""),
            ("12", "\"12\""),
            ("-3", "\"-3\""),
            ("0x1F", "\"0x1F\""),
            ("1_000", "\"1_000\""),
            ("1.5", "\"1.5\""),
            (".5", "\".5\""),
            ("1e3", "\"1e3\""),
            ("1e400", "1e400"),
            ("1:20", "\"1:20\""),
            ("2024-01-02", "\"2024-01-02\""),
            ("2024-02-30", "2024-02-30"),
            ("2024-01-02T03:04:05.123456789+01:00", "\"2024-01-02T03:04:05.123456789+01:00\""),
            ("2024-01-02T03:04:05", "2024-01-02T03:04:05"),
            ("2024-01-02 03:04:05", "\"2024-01-02 03:04:05\""),
            ("2024-01-02   03:04:05", "\"2024-01-02   03:04:05\""),
            ("0b-1", "\"0b-1\""),
            ("0b2", "0b2"),
            ("._5", "._5"),
            (".5_0", "\".5_0\""),
            ("<<", "<<"),
            ("*", "'*'"),
            ("- a", "'- a'"),
            ("a: b", "'a: b'"),
            ("a:b", "a:b"),
            ("a #b", "'a #b'"),
            ("a#b", "a#b"),
            ("it's", "it's"),
            ("'q'", "'''q'''"),
            (" lead", "' lead'"),
            ("trail ", "'trail '"),
            ("tab\there", "\"tab\\there\""),
            ("say \"hi\"", "say \"hi\""),
            ("\"hi\"", "'\"hi\"'"),
            ("back\\slash", "back\\slash"),
            ("é", "é"),
            ("smile 😀", "\"smile \\U0001F600\""),
            ("nul\u{0}", "\"nul\\0\""),
            ("---", "'---'"),
            ("@x", "'@x'"),
            ("{a}", "'{a}'"),
            ("a,b", "a,b"),
        ];
        for (s, want) in cases {
            let got = yaml(&json!({ "k": s }));
            assert_eq!(got, format!("k: {want}\n"), "{s:?}");
        }
    }

    #[test]
    fn line_breaks_make_literal_blocks() {
        assert_eq!(yaml(&json!({"k": "a\nb"})), "k: |-\n  a\n  b\n");
        assert_eq!(yaml(&json!({"k": "a\nb\n"})), "k: |\n  a\n  b\n");
        assert_eq!(yaml(&json!({"k": "a\n\n"})), "k: |+\n  a\n\n");
        assert_eq!(yaml(&json!({"k": "\n"})), "k: |2+\n\n");
        assert_eq!(yaml(&json!({"k": " a\nb"})), "k: |2-\n   a\n  b\n");
        assert_eq!(yaml(&json!({"k": "a\n\nb", "l": 1})), "k: |-\n  a\n\n  b\nl: 1\n");
        // Spaces at a line's end or tabs rule a block out.
        assert_eq!(yaml(&json!({"k": "a \nb"})), "k: \"a \\nb\"\n");
        assert_eq!(yaml(&json!({"k": "a\tb\nc"})), "k: \"a\\tb\\nc\"\n");
        // Inside a sequence and deeper.
        assert_eq!(yaml(&json!({"s": ["x\ny\n"]})), "s:\n- |\n  x\n  y\n");
        assert_eq!(yaml(&json!({"m": {"k": "x\n"}})), "m:\n  k: |\n    x\n");
    }

    #[test]
    fn long_strings_fold_past_column_80() {
        let words = "lorem ipsum dolor sit amet ".repeat(6);
        let words = words.trim_end();
        let got = yaml(&json!({ "description": words }));
        let want = "description: lorem ipsum dolor sit amet lorem ipsum dolor sit amet lorem ipsum dolor\n  sit amet lorem ipsum dolor sit amet lorem ipsum dolor sit amet lorem ipsum dolor\n  sit amet\n";
        assert_eq!(got, want);
        // A quoted one folds the same way; an unbroken one does not fold.
        let quoted = format!("{words}:");
        let got = yaml(&json!({ "k": format!("- {quoted}") }));
        assert!(got.starts_with("k: '- lorem") && got.contains("\n  "), "{got}");
        let long = "x".repeat(200);
        assert_eq!(yaml(&json!({ "k": long })), format!("k: {long}\n"));
    }

    #[test]
    fn collections_nest_as_go_yaml_nests_them() {
        let v = json!({"a": [[1, 2], {"b": [], "c": {}}, []], "e": {}, "f": [{"g": {"h": null}}]});
        let want = "a:\n- - 1\n  - 2\n- b: []\n  c: {}\n- []\ne: {}\nf:\n- g:\n    h: null\n";
        assert_eq!(yaml(&v), want);
        assert_eq!(yaml(&json!({})), "{}\n");
        assert_eq!(yaml(&json!([1, "a"])), "- 1\n- a\n");
    }

    #[test]
    fn keys_sort_as_go_yaml_sorts_them() {
        let v = json!({"b": 1, "a10": 1, "a2": 1, "A": 1, "_x": 1, "a": 1, "1": 1, "10": 1, "9": 1, "a02": 1, "": 1});
        let got = yaml(&v);
        let keys: Vec<&str> = got.lines().map(|l| l.split(':').next().unwrap()).collect();
        assert_eq!(keys, ["\"\"", "_x", "\"1\"", "\"9\"", "\"10\"", "A", "a", "a2", "a02", "a10", "b"]);
    }

    #[test]
    fn long_and_multiline_keys_are_complex_keys() {
        let long = "k".repeat(129);
        assert_eq!(yaml(&json!({ long.clone(): 1 })), format!("? {long}\n: 1\n"));
        let fits = "k".repeat(128);
        assert_eq!(yaml(&json!({ fits.clone(): 1 })), format!("{fits}: 1\n"));
        assert_eq!(yaml(&json!({"a\nb": 1})), "? |-\n  a\n  b\n: 1\n");
    }

    #[test]
    fn numbers_print_as_go_prints_them() {
        let cases = [
            (json!(0), "0"),
            (json!(-7), "-7"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(1.0), "1"),
            (json!(1.5), "1.5"),
            (json!(-0.25), "-0.25"),
            (json!(123456.0), "123456"),
            (json!(1234567.0), "1234567"),
            (json!(1e19), "10000000000000000000"),
            (json!(1e20), "1e+20"),
            (json!(1e21), "1e+21"),
            (json!(1234567.5), "1.2345675e+06"),
            (json!(0.0001), "0.0001"),
            (json!(0.00001), "1e-05"),
            (json!(1.5e-300), "1.5e-300"),
            (json!(-0.0), "0"),
        ];
        for (n, want) in cases {
            assert_eq!(yaml(&json!({ "v": n })), format!("v: {want}\n"), "{n}");
        }
    }

    #[test]
    fn strings_are_read_as_go_yaml_reads_go_s_json() {
        // Go's JSON encoder leaves NEL as it is; go-yaml folds it as a line break.
        assert_eq!(
            yaml(&json!({"k": "a\u{85}b", "l": "a \u{85} \u{85}b", "m": "\u{85}"})),
            "k: a b\nl: |-\n  a\n  b\nm: ' '\n"
        );
        // Characters its reader refuses fail the encoding.
        for bad in ["a\u{7f}", "\u{80}", "\u{9f}", "\u{fffe}"] {
            assert_eq!(encode(&json!({ "k": bad })).unwrap_err(), "yaml: control characters are not allowed");
            assert!(encode(&json!({ bad: 1 })).is_err());
        }
    }
}
