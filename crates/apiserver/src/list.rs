//! LIST: query options (metav1.ListOptions), their validation with
//! kube-apiserver's messages, continue tokens, and list response encoding.
//!
//! Invariants: every page of a chunked list is served at the first page's RV
//! (carried in the continue token); a token whose RV has been compacted yields
//! 410 with a fresh inconsistent token (rv -1); `remainingItemCount` is only
//! reported for chunked lists without selectors. A JSON list answer is encoded
//! as it is sent ([`ListBody`]), a chunk of items at a time, as kube-apiserver
//! streams list collections: a LIST of every object holds the page's item
//! pointers and one chunk, never the whole encoded list.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::cache::{ListAt, ListPage};
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::Store;

/// Parsed list/watch query parameters.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `watch=true|1`.
    pub watch: bool,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `resourceVersion` (None when absent or empty).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` (None when absent or empty).
    pub resource_version_match: Option<String>,
    /// `limit` (0 = none).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<i64>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Parses the query pairs as kube's parameter codec does: a parameter given twice has its
    /// first value; unknown parameters are ignored.
    pub fn parse(q: &[(String, String)]) -> Result<Self, ApiError> {
        let mut o = ListOptions::default();
        for (i, (k, v)) in q.iter().enumerate() {
            if q[..i].iter().any(|(seen, _)| seen == k) {
                continue;
            }
            let some = |v: &String| if v.is_empty() { None } else { Some(v.clone()) };
            match k.as_str() {
                "watch" => o.watch = crate::body::query_bool(v),
                "labelSelector" => o.label_selector = some(v),
                "fieldSelector" => o.field_selector = some(v),
                "resourceVersion" => o.resource_version = some(v),
                "resourceVersionMatch" => o.resource_version_match = some(v),
                "continue" => o.continue_token = some(v),
                "allowWatchBookmarks" => o.allow_bookmarks = crate::body::query_bool(v),
                "sendInitialEvents" => o.send_initial_events = Some(crate::body::query_bool(v)),
                "limit" if !v.is_empty() => {
                    let n: i64 = v.parse().map_err(|_| {
                        ApiError::bad_request(format!(
                            "Invalid value for limit: strconv.ParseInt: parsing \"{v}\": invalid syntax"
                        ))
                    })?;
                    o.limit = n.max(0) as usize;
                }
                "timeoutSeconds" if !v.is_empty() => {
                    let n: i64 = v.parse().map_err(|_| {
                        ApiError::bad_request(format!(
                            "Invalid value for timeoutSeconds: strconv.ParseInt: parsing \"{v}\": invalid syntax"
                        ))
                    })?;
                    o.timeout_seconds = Some(n);
                }
                _ => {}
            }
        }
        Ok(o)
    }

    /// Validates like `ValidateListOptions` (422 Invalid on failure).
    pub fn validate(&self) -> Result<(), ApiError> {
        let mut errs: Vec<(&str, &str, String)> = Vec::new();
        let m = self.resource_version_match.as_deref();
        if self.watch {
            if self.send_initial_events.is_some() && m != Some("NotOlderThan") {
                errs.push((
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan".into(),
                ));
            }
            if let Some(m) = m {
                if self.send_initial_events.is_none() {
                    errs.push((
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
                            .into(),
                    ));
                }
                if m != "NotOlderThan" {
                    errs.push((
                        "resourceVersionMatch",
                        "FieldValueNotSupported",
                        format!("Unsupported value: \"{m}\": supported values: \"NotOlderThan\""),
                    ));
                }
                if self.continue_token.is_some() {
                    errs.push((
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
                    ));
                }
            }
        } else {
            if let Some(m) = m {
                if self.resource_version.is_none() {
                    errs.push((
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
                    ));
                }
                if self.continue_token.is_some() {
                    errs.push((
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
                    ));
                }
                if m != "Exact" && m != "NotOlderThan" {
                    errs.push((
                        "resourceVersionMatch",
                        "FieldValueNotSupported",
                        format!("Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\", \"\""),
                    ));
                }
                if m == "Exact" && self.resource_version.as_deref() == Some("0") {
                    errs.push((
                        "resourceVersionMatch",
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".into(),
                    ));
                }
            }
            if self.send_initial_events.is_some() {
                errs.push((
                    "sendInitialEvents",
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents is forbidden for list".into(),
                ));
            }
        }
        if errs.is_empty() {
            return Ok(());
        }
        let mut e = ApiError::invalid_list_options(errs[0].0, errs[0].1, &errs[0].2);
        if errs.len() > 1 {
            let parts: Vec<String> = errs.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
            e.message = format!("ListOptions.meta.k8s.io \"\" is invalid: [{}]", parts.join(", "));
            e.details = Some(Box::new(json!({
                "group": "meta.k8s.io",
                "kind": "ListOptions",
                "causes": errs.iter().map(|(f, r, m)| json!({"reason": r, "message": m, "field": f})).collect::<Vec<_>>(),
            })));
        }
        Err(e)
    }
}

/// Reads a resourceVersion query value as kube's versioner does (Go's `strconv.ParseUint`);
/// the fault is kube's field error, `resourceVersion: Invalid value: "x": strconv.ParseUint: …`.
pub fn read_rv(s: &str) -> Result<u64, String> {
    let fault = |why: &str| {
        format!(
            "resourceVersion: Invalid value: {q}: strconv.ParseUint: parsing {q}: {why}",
            q = crate::pod_security_checks::go_quote(s)
        )
    };
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fault("invalid syntax"));
    }
    s.parse::<u64>().map_err(|_| fault("value out of range"))
}

/// A LIST's resourceVersion: kube's 400 when it is not one.
pub fn parse_rv(s: &str) -> Result<u64, ApiError> {
    read_rv(s).map_err(|e| ApiError::bad_request(format!("invalid resource version: {e}")))
}

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq)]
pub struct ContinueToken {
    /// RV of the first page (-1: inconsistent, read latest).
    pub rv: i64,
    /// Start key relative to the list prefix, ending in `\0`.
    pub start: String,
}

impl ContinueToken {
    /// Encodes as kube does: unpadded URL-safe base64 of
    /// `{"v":"meta.k8s.io/v1","rv":N,"start":"…"}`.
    pub fn encode(&self) -> String {
        // A struct, not a map: the field order is part of the token's bytes.
        #[derive(serde::Serialize)]
        struct Wire<'a> {
            v: &'a str,
            rv: i64,
            start: &'a str,
        }
        let j = Wire { v: "meta.k8s.io/v1", rv: self.rv, start: &self.start };
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&j).unwrap_or_default())
    }

    /// Decodes a token as kube's `DecodeContinue` does: 400 `invalid continue token: …` in its
    /// words for one that is not base64 of the token's JSON, names another version, has no
    /// resourceVersion or start key, or a start key that is not a clean path.
    pub fn decode(s: &str) -> Result<Self, ApiError> {
        let bad = |m: &str| ApiError::bad_request(format!("invalid continue token: continue key is not valid{m}"));
        let raw = URL_SAFE_NO_PAD.decode(s).map_err(|e| bad(&format!(": {}", go_base64_error(s, &e))))?;
        if let Some(e) = crate::go_json_syntax::syntax_error(&raw) {
            return Err(bad(&format!(": {e}")));
        }
        let v: Value = serde_json::from_slice(&raw).map_err(|e| bad(&format!(": {e}")))?;
        // Go's words for a value of the wrong type: a number that an integer cannot hold is
        // named with its literal.
        let word = |v: &Value, ty: &str| match v {
            Value::Number(n) if ty == "int64" => format!("number {n}"),
            v => crate::go_types::json_kind(v).to_string(),
        };
        let Value::Object(fields) = &v else {
            return Err(bad(&format!(
                ": json: cannot unmarshal {} into Go value of type storage.continueToken",
                word(&v, "")
            )));
        };
        let field = |name: &str, ty: &str, ok: fn(&Value) -> bool| match fields.get(name) {
            Some(f) if !f.is_null() && !ok(f) => Err(bad(&format!(
                ": json: cannot unmarshal {} into Go struct field continueToken.{name} of type {ty}",
                word(f, ty)
            ))),
            _ => Ok(()),
        };
        field("v", "string", Value::is_string)?;
        field("rv", "int64", |f| f.is_i64())?;
        field("start", "string", Value::is_string)?;
        let version = fields.get("v").and_then(Value::as_str).unwrap_or("");
        if version != "meta.k8s.io/v1" {
            return Err(bad(&format!(": server does not recognize this encoded version {version}")));
        }
        let rv = fields.get("rv").and_then(Value::as_i64).unwrap_or(0);
        if rv == 0 {
            return Err(bad(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)"));
        }
        let start = fields.get("start").and_then(Value::as_str).unwrap_or("").to_string();
        if start.is_empty() {
            return Err(bad(": encoded start key empty (version meta.k8s.io/v1)"));
        }
        if !is_clean_path(&start) {
            return Err(bad(&format!(": {start}")));
        }
        Ok(ContinueToken { rv, start })
    }

    /// The absolute store key where listing resumes.
    pub fn start_key(&self, ns: Option<&str>) -> String {
        let rel = self.start.strip_prefix('/').unwrap_or(&self.start);
        match ns {
            Some(n) => format!("{n}/{rel}"),
            None => rel.to_string(),
        }
    }

    /// A token resuming after `key`.
    pub fn after(rv: i64, key: &str, ns: Option<&str>, consistent: bool) -> Self {
        let rel = match ns {
            Some(n) => key.strip_prefix(n).unwrap_or(key),
            None => key,
        };
        // kube's cache writes the key after its resource's prefix (a leading `/`), etcd's
        // after the prefix's trailing `/`.
        let rel = rel.trim_start_matches('/');
        let start = if consistent { format!("/{rel}\u{0}") } else { format!("{rel}\u{0}") };
        ContinueToken { rv, start }
    }
}

/// Whether `start` is its own clean path as Go's `path.Clean` makes it (read from a leading
/// `/`): no empty, `.` or `..` segment, no trailing `/`.
fn is_clean_path(start: &str) -> bool {
    let rel = start.strip_prefix('/').unwrap_or(start);
    rel.is_empty() || rel.split('/').all(|seg| !matches!(seg, "" | "." | ".."))
}

/// Go's `base64.CorruptInputError` for a token `RawURLEncoding` cannot read: the offset of the
/// first byte outside its alphabet, or of a last group too short to hold a byte.
fn go_base64_error(s: &str, e: &base64::DecodeError) -> String {
    let at = match e {
        base64::DecodeError::InvalidByte(i, _) | base64::DecodeError::InvalidLastSymbol(i, _) => *i,
        // A last group of one symbol: Go names that symbol.
        base64::DecodeError::InvalidLength(n) => n.saturating_sub(1),
        _ => s.bytes().position(|b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_')).unwrap_or(s.len()),
    };
    format!("illegal base64 data at input byte {at}")
}

/// How each item of a [`ListBody`] is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemForm {
    /// The object, with `kind` and `apiVersion` when `true` (custom resources' lists carry them).
    Object(bool),
    /// Its `PartialObjectMetadata`.
    Metadata,
}

/// A list answer encoded as it is sent: the envelope up to `"items":[`, then the items a chunk
/// at a time, then `]}`. Bytes equal those of encoding the whole list at once.
pub struct ListBody {
    /// The envelope's opening (sent with the first chunk), or nothing once sent.
    head: Vec<u8>,
    items: std::vec::IntoIter<Arc<StoredObject>>,
    form: ItemForm,
    /// Whether an item was written (the next one is preceded by a comma).
    wrote_item: bool,
    /// Whether the closing `]}` was written.
    done: bool,
}

/// Bytes per chunk of a streamed list (below glibc's initial mmap threshold, so chunks come
/// from and return to the heap).
const LIST_CHUNK: usize = 64 << 10;

impl ListBody {
    /// A list of `items` after the envelope `head` (which ends with `"items":[`).
    pub fn new(head: Vec<u8>, items: Vec<Arc<StoredObject>>, form: ItemForm) -> Self {
        ListBody { head, items: items.into_iter(), form, wrote_item: false, done: false }
    }

    /// The next chunk of the encoded list, `None` after the last.
    pub fn next_chunk(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let mut out = std::mem::take(&mut self.head);
        out.reserve(LIST_CHUNK.saturating_sub(out.len()));
        while out.len() < LIST_CHUNK {
            let Some(o) = self.items.next() else {
                out.extend_from_slice(b"]}");
                self.done = true;
                break;
            };
            if self.wrote_item {
                out.push(b',');
            }
            self.wrote_item = true;
            match self.form {
                ItemForm::Object(with_kind) => o.write_item(&mut out, with_kind),
                ItemForm::Metadata => out.extend_from_slice(&crate::table::partial_metadata(&o.json())),
            }
        }
        Some(Bytes::from(out))
    }

    /// The whole encoded list in one buffer (for answers transcoded to another form).
    pub fn into_bytes(mut self) -> Vec<u8> {
        let mut all = Vec::new();
        while let Some(chunk) = self.next_chunk() {
            all.extend_from_slice(&chunk);
        }
        all
    }

    /// Whether every byte was handed out.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

/// An encoded LIST answer.
pub enum ListAnswer {
    /// A complete body (a Table).
    Whole(Vec<u8>),
    /// A list encoded as it is sent.
    Items(ListBody),
}

/// Executes a LIST; returns the response body.
pub async fn list(
    store: &Store,
    info: &ResourceInfo,
    ns: Option<&str>,
    opts: &ListOptions,
    sel: &Selectors,
    rv_wait: Duration,
    render: crate::table::Render,
) -> Result<ListAnswer, ApiError> {
    let page = page(store, info, ns, opts, sel, rv_wait).await?;
    if let crate::table::Render::Table(include) = render {
        let mut meta = serde_json::Map::new();
        meta.insert("resourceVersion".into(), page.rv.to_string().into());
        if let Some(token) = next_continue(info, ns, &page) {
            meta.insert("continue".into(), token.into());
            if sel.is_empty() {
                meta.insert("remainingItemCount".into(), page.remaining.into());
            }
        }
        let t = crate::table::table(info, Value::Object(meta), &page.items, include);
        return Ok(ListAnswer::Whole(serde_json::to_vec(&t).unwrap_or_default()));
    }
    let metadata = render == crate::table::Render::Metadata;
    let head = list_head(info, ns, sel, &page, metadata);
    let form = if metadata { ItemForm::Metadata } else { ItemForm::Object(info.list_items_have_kind) };
    Ok(ListAnswer::Items(ListBody::new(head, page.items, form)))
}

/// The continue token of the page after `page` (None when it is the last).
pub fn next_continue(info: &ResourceInfo, ns: Option<&str>, page: &ListPage) -> Option<String> {
    let ns = if info.namespaced { ns } else { None };
    page.next_after.as_ref().map(|after| ContinueToken::after(page.rv as i64, after, ns, true).encode())
}

/// The JSON of a list of `info` up to its items (`{"kind":…,"metadata":{…},"items":[`): the
/// resourceVersion `page` was read at and, when more follow, its continue token and (without
/// selectors) how many items remain. `metadata`: a `PartialObjectMetadataList`.
pub fn list_head(info: &ResourceInfo, ns: Option<&str>, sel: &Selectors, page: &ListPage, metadata: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(b"{\"kind\":");
    if metadata {
        out.extend_from_slice(b"\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\"");
    } else {
        let _ = serde_json::to_writer(&mut out, &format!("{}List", info.kind));
        out.extend_from_slice(b",\"apiVersion\":");
        let _ = serde_json::to_writer(&mut out, &info.api_version());
    }
    out.extend_from_slice(b",\"metadata\":{\"resourceVersion\":\"");
    out.extend_from_slice(page.rv.to_string().as_bytes());
    out.push(b'"');
    if let Some(token) = next_continue(info, ns, page) {
        out.extend_from_slice(b",\"continue\":\"");
        out.extend_from_slice(token.as_bytes());
        out.push(b'"');
        if sel.is_empty() {
            out.extend_from_slice(b",\"remainingItemCount\":");
            out.extend_from_slice(page.remaining.to_string().as_bytes());
        }
    }
    out.extend_from_slice(b"},\"items\":[");
    out
}

/// The next page a LIST with `opts` reads (its resourceVersion, limit and continue token), as
/// kube-apiserver serves it: from the watch cache, or from the storage at a revision older than
/// the cache's history; 410 once the storage has compacted it (for a continue token, with a
/// token that continues from the latest state).
pub async fn page(
    store: &Store,
    info: &ResourceInfo,
    ns: Option<&str>,
    opts: &ListOptions,
    sel: &Selectors,
    rv_wait: Duration,
) -> Result<ListPage, ApiError> {
    let ns = if info.namespaced { ns } else { None };
    let mut limit = opts.limit;
    let mut start: Option<String> = None;
    let mut token: Option<ContinueToken> = None;
    // While the cache is (re)initializing, a page without selectors is the storage's (kube's
    // cacher delegates it to etcd, which keeps the limit whatever the resourceVersion).
    let unready = store.cache().check_ready().is_err() && opts.limit > 0 && sel.is_empty();
    let at = if let Some(c) = &opts.continue_token {
        let t = ContinueToken::decode(c)?;
        if opts.resource_version.as_deref().is_some_and(|r| r != "0") {
            return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
        }
        start = Some(t.start_key(ns));
        if t.rv > 0 && !unready {
            // A token from a read the cache had not reached yet: waited for as an Exact list.
            let (n, cache) = (t.rv as u64, store.cache());
            cache.check_ready()?;
            if n > cache.resource_version() && !cache.wait_for_rv(n, rv_wait).await {
                return Err(ApiError::too_large_rv(n, cache.resource_version()));
            }
        }
        if opts.resource_version.as_deref() == Some("0") && !unready {
            // kube's cacher lists RV "0" whole, continued or not.
            limit = 0;
        }
        let at = if t.rv < 0 { ListAt::Latest } else { ListAt::Exact(t.rv as u64) };
        token = Some(t);
        at
    } else {
        match (opts.resource_version.as_deref(), opts.resource_version_match.as_deref()) {
            (None, _) => ListAt::Latest,
            (Some("0"), _) => {
                if !unready {
                    limit = 0;
                }
                ListAt::Latest
            }
            (Some(r), m) => {
                let n = parse_rv(r)?;
                let exact = m == Some("Exact") || (m.is_none() && limit > 0);
                let cache = store.cache();
                if !unready {
                    cache.check_ready()?;
                    if n > cache.resource_version() && !cache.wait_for_rv(n, rv_wait).await {
                        return Err(ApiError::too_large_rv(n, cache.resource_version()));
                    }
                }
                if exact { ListAt::Exact(n) } else { ListAt::Latest }
            }
        }
    };
    // Without a resourceVersion (and not continuing a list) the read is consistent; so is the
    // rest of a list continued from a token that no longer holds a version (kube delegates it
    // as a consistent read).
    let consistent = match &token {
        None => opts.resource_version.is_none(),
        Some(t) => t.rv < 0,
    };
    let q = crate::store::ListQuery { ns, at, start: start.as_deref(), limit, sel, consistent };
    let listed = match (unready, at) {
        (true, ListAt::Exact(rv)) => store.list_unready(info, (ns, start.as_deref()), Some(rv), limit).await,
        (true, _) => store.list_unready(info, (ns, start.as_deref()), None, limit).await,
        (false, _) => store.list(info, q).await,
    };
    match listed {
        Ok(p) => Ok(p),
        Err(e) if e.code == 410 && token.is_some() => {
            let t = token.unwrap_or(ContinueToken { rv: -1, start: String::new() });
            let key = t.start_key(ns);
            let key = key.trim_end_matches('\u{0}');
            let fresh = ContinueToken::after(-1, key, ns, false);
            let mut e = ApiError::expired(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
            );
            e.continue_token = Some(fresh.encode());
            Err(e)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_matches_kube() {
        let t = ContinueToken { rv: 203, start: "/sample-b\u{0}".into() };
        assert_eq!(t.encode(), "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjAzLCJzdGFydCI6Ii9zYW1wbGUtYlx1MDAwMCJ9");
        assert_eq!(ContinueToken::decode(&t.encode()).unwrap(), t);
        assert_eq!(t.start_key(Some("default")), "default/sample-b\u{0}");
        let i = ContinueToken::after(-1, "default/sample-b", Some("default"), false);
        assert_eq!(i.encode(), "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0Ijoic2FtcGxlLWJcdTAwMDAifQ");
        assert!(ContinueToken::decode("!!").is_err());
        let cluster = ContinueToken::after(203, "default/sample-b", None, true);
        assert_eq!(cluster.start, "/default/sample-b\u{0}");
        assert_eq!(cluster.start_key(None), "default/sample-b\u{0}");
    }

    fn refusal(token: &Value) -> String {
        let t = URL_SAFE_NO_PAD.encode(token.to_string());
        ContinueToken::decode(&t).unwrap_err().message
    }

    #[test]
    fn tokens_are_refused_in_kube_words() {
        let msg = |s: &str| format!("invalid continue token: continue key is not valid{s}");
        assert_eq!(ContinueToken::decode("!!").unwrap_err().message, msg(": illegal base64 data at input byte 0"));
        assert_eq!(ContinueToken::decode("eyJ2e").unwrap_err().message, msg(": illegal base64 data at input byte 4"));
        assert_eq!(ContinueToken::decode("eyJ2").unwrap_err().message, msg(": unexpected end of JSON input"));
        let v = |v: &str, rv: i64, start: &str| serde_json::json!({"v": v, "rv": rv, "start": start});
        assert_eq!(
            refusal(&v("meta.k8s.io/v2", 5, "/a")),
            msg(": server does not recognize this encoded version meta.k8s.io/v2")
        );
        assert_eq!(
            refusal(&v("meta.k8s.io/v1", 0, "/a")),
            msg(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        );
        assert_eq!(refusal(&v("meta.k8s.io/v1", 5, "")), msg(": encoded start key empty (version meta.k8s.io/v1)"));
        for unclean in ["/../b", "/a//b", "a/./b", "/a/"] {
            assert_eq!(refusal(&v("meta.k8s.io/v1", 5, unclean)), msg(&format!(": {unclean}")));
        }
        assert_eq!(
            refusal(&serde_json::json!({"v": "meta.k8s.io/v1", "rv": "5", "start": "/a"})),
            msg(": json: cannot unmarshal string into Go struct field continueToken.rv of type int64")
        );
        assert_eq!(
            refusal(&serde_json::json!({"v": "meta.k8s.io/v1", "rv": 1.5, "start": "/a"})),
            msg(": json: cannot unmarshal number 1.5 into Go struct field continueToken.rv of type int64")
        );
        assert!(ContinueToken::decode(&URL_SAFE_NO_PAD.encode(v("meta.k8s.io/v1", 5, "/").to_string())).is_ok());
    }

    #[test]
    fn resource_versions_are_read_as_go_reads_them() {
        assert_eq!(read_rv("42"), Ok(42));
        assert_eq!(
            read_rv("+1").unwrap_err(),
            "resourceVersion: Invalid value: \"+1\": strconv.ParseUint: parsing \"+1\": invalid syntax"
        );
        assert_eq!(
            read_rv("18446744073709551616").unwrap_err(),
            "resourceVersion: Invalid value: \"18446744073709551616\": strconv.ParseUint: parsing \"18446744073709551616\": value out of range"
        );
    }

    #[test]
    fn booleans_and_repeats_are_read_as_kube_s_parameter_codec_reads_them() {
        let q = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            ListOptions::parse(&pairs).unwrap()
        };
        assert!(q(&[("watch", "")]).watch);
        assert!(q(&[("watch", "yes")]).watch);
        assert!(!q(&[("watch", "FALSE")]).watch);
        assert!(!q(&[("watch", "0"), ("watch", "1")]).watch);
        assert_eq!(q(&[("sendInitialEvents", "")]).send_initial_events, Some(true));
        assert_eq!(q(&[("labelSelector", "a=b"), ("labelSelector", "c=d")]).label_selector.as_deref(), Some("a=b"));
    }
}
