//! WATCH streams: initial events, replay from the watch cache, live events,
//! bookmarks, selector transitions, timeouts.
//!
//! One task per watch reads shared `Arc` events from the store's history ring
//! and writes JSON lines (`{"type":…,"object":…}\n`). Ready events are
//! concatenated into chunks of up to `chunk_bytes` and a chunk is flushed as
//! soon as no more events are ready; a chunk of one event that the watcher sees
//! as it is (no selector turning it into ADDED or DELETED, no table or metadata
//! rendering) is the event's shared line ([`crate::shared_line`]), not a copy.
//! Invariants: events reach the client in
//! RV order, each at most once; a bookmark's RV never exceeds what the client
//! has fully received for its resource; the stream ends cleanly at the
//! deadline, on `drop_watches`, on server stop, or when the client goes away.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use crate::cache::WatchCache;
use crate::controls::Controls;
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::watch_cache::{Event, EventType};

/// What a watch starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// Replay every change after this RV.
    After(u64),
    /// Synthetic ADDED for the current state, then changes.
    Initial {
        /// Send the `k8s.io/initial-events-end` bookmark after the ADDEDs.
        end_bookmark: bool,
    },
}

/// Everything a watch task needs.
pub struct WatchParams {
    /// Resource.
    pub info: Arc<ResourceInfo>,
    /// Namespace filter.
    pub ns: Option<String>,
    /// Selectors.
    pub sel: Selectors,
    /// Start mode.
    pub start: WatchStart,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// Stream length.
    pub timeout: Duration,
    /// Periodic bookmark interval.
    pub bookmark_interval: Duration,
    /// How long before the deadline the final bookmark is sent.
    pub bookmark_before_timeout: Duration,
    /// Chunk size target.
    pub chunk_bytes: usize,
    /// Send objects as single-row `Table`s (kubectl server-side printing).
    pub render: crate::table::Render,
    /// Counts the events sent (`apiserver_watch_events_total`).
    pub events: Option<prometheus_client::metrics::counter::Counter>,
}

/// The most events a watch reads from the history at a time.
const BATCH: usize = 1024;
/// The room for events a watch keeps while it waits: a replay's batches grow the list to
/// [`BATCH`], live events take one or a few at a time, and an idle watcher holds no more.
const IDLE_EVENTS: usize = 16;

/// Encodes one watch event line.
pub fn encode_event(out: &mut Vec<u8>, typ: &str, obj: &[u8]) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(typ.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(obj);
    out.extend_from_slice(b"}\n");
}

/// Encodes one watch event line carrying a stored object.
pub fn encode_object_event(out: &mut Vec<u8>, typ: &str, obj: &StoredObject) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(typ.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    obj.write_json(out);
    out.extend_from_slice(b"}\n");
}

/// Encodes an ERROR event carrying a Status.
pub fn encode_error(e: &ApiError) -> Bytes {
    let mut out = Vec::new();
    encode_event(&mut out, "ERROR", &e.to_bytes());
    Bytes::from(out)
}

/// The 410 ERROR for a watch from an RV older than the history.
pub fn too_old_error(requested: u64, start_rv: u64) -> ApiError {
    ApiError::expired(format!("too old resource version: {requested} ({start_rv})"))
}

/// A BOOKMARK event at `rv` (with the `k8s.io/initial-events-end` annotation when `end`), its
/// object an empty one of the watched kind as kube-apiserver's bookmarks carry it, seen through
/// the watch's filter as any object is (a `PartialObjectMetadata`, or a Table of its one row).
fn encode_bookmark(out: &mut Vec<u8>, info: &ResourceInfo, rv: u64, end: bool, filter: &Filter) {
    if filter.metadata {
        // ObjectMeta's order: the resourceVersion, then the annotations.
        let mut obj = Vec::with_capacity(160);
        obj.extend_from_slice(b"{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":");
        obj.extend_from_slice(format!("{{\"resourceVersion\":\"{rv}\"").as_bytes());
        if end {
            obj.extend_from_slice(b",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}");
        }
        obj.extend_from_slice(b"}}");
        encode_event(out, "BOOKMARK", &obj);
        return;
    }
    let mut meta = serde_json::Map::new();
    if end {
        meta.insert("annotations".into(), serde_json::json!({"k8s.io/initial-events-end": "true"}));
    }
    let mut obj = serde_json::Map::new();
    obj.insert("metadata".into(), meta.into());
    // The members an empty object of a built-in kind always writes (`"spec":{"containers":null},
    // "status":{}` for a Pod); nothing for a custom resource, which kube holds unstructured.
    if info.custom.is_none()
        && let Some(definition) = crate::schema::builtin().name_of(&info.group, &info.version, &info.kind)
    {
        crate::go_form::normalize(&mut obj, definition);
    }
    let o = crate::object::build(info, &obj, rv);
    match filter.table {
        Some(include) => {
            // The end marker's row carries its metadata whatever the watch asked.
            let include = if end { crate::table::IncludeObject::Metadata } else { include };
            let first = !filter.headers_sent.swap(true, std::sync::atomic::Ordering::Relaxed);
            encode_event(out, "BOOKMARK", &crate::table::event_table(info, &o, include, first));
        }
        None => encode_object_event(out, "BOOKMARK", &o),
    }
}

struct Filter {
    ns: Option<String>,
    sel: Selectors,
    trivial: bool,
    /// Table events, carrying what of the object is asked.
    table: Option<crate::table::IncludeObject>,
    metadata: bool,
    /// Whether a Table event (with the column definitions, which only the first carries) was
    /// sent.
    headers_sent: std::sync::atomic::AtomicBool,
}

impl Filter {
    fn matches(&self, o: &StoredObject) -> bool {
        if let Some(ns) = &self.ns
            && o.namespace != *ns
        {
            return false;
        }
        self.sel.matches(&o.labels, &o.fields)
    }

    fn emit(&self, info: &ResourceInfo, out: &mut Vec<u8>, typ: &str, o: &StoredObject) {
        if let Some(include) = self.table {
            let first = !self.headers_sent.swap(true, std::sync::atomic::Ordering::Relaxed);
            encode_event(out, typ, &crate::table::event_table(info, o, include, first));
        } else if self.metadata {
            encode_event(out, typ, &crate::table::partial_metadata(&o.json()));
        } else {
            encode_object_event(out, typ, o);
        }
    }

    /// Appends the event as it is (its own type and object), shared when it can be.
    fn emit_event(&self, info: &ResourceInfo, chunk: &mut Chunk, ev: &Event) {
        if self.table.is_some() || self.metadata {
            self.emit(info, chunk.line(), ev.kind.as_str(), &ev.obj);
            return;
        }
        let encode = |out: &mut Vec<u8>| encode_object_event(out, ev.kind.as_str(), &ev.obj);
        let shared = ev.line.get_or_encode(|out| {
            out.reserve_exact(ev.obj.json_len() + 32);
            encode(out);
        });
        match shared {
            Some(line) => chunk.push_shared(line),
            None => encode(chunk.line()),
        }
    }

    /// Appends the event as seen through this filter (if visible).
    fn encode(&self, info: &ResourceInfo, ev: &Event, chunk: &mut Chunk) -> bool {
        if self.trivial {
            self.emit_event(info, chunk, ev);
            return true;
        }
        match ev.kind {
            EventType::Added | EventType::Deleted => {
                if self.matches(&ev.obj) {
                    self.emit_event(info, chunk, ev);
                    return true;
                }
            }
            EventType::Modified => {
                let cur = self.matches(&ev.obj);
                let old = ev.prev.as_ref().is_some_and(|p| self.matches(p));
                match (old, cur) {
                    (true, true) => self.emit_event(info, chunk, ev),
                    (false, true) => self.emit(info, chunk.line(), "ADDED", &ev.obj),
                    (true, false) => {
                        if let Some(p) = &ev.prev {
                            let gone = p.with_rv(ev.rv);
                            self.emit(info, chunk.line(), "DELETED", &gone);
                        }
                    }
                    (false, false) => return false,
                }
                return true;
            }
        }
        false
    }
}

/// The chunk being assembled: events encoded into a buffer of the watch's own, or a single
/// event's shared line as it is (copied into the buffer only when another event follows it).
struct Chunk {
    buf: Vec<u8>,
    shared: Option<Bytes>,
    /// The lines in the chunk: one per event.
    lines: u64,
    /// The capacity of the next buffer, allocated when its first bytes go in: an idle watch
    /// holds no buffer.
    next_cap: usize,
}

impl Chunk {
    /// An empty chunk whose first buffer gets `first_cap` bytes.
    fn new(first_cap: usize) -> Self {
        Chunk { buf: Vec::new(), shared: None, lines: 0, next_cap: first_cap }
    }

    fn len(&self) -> usize {
        self.buf.len() + self.shared.as_ref().map_or(0, Bytes::len)
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer to encode one line into; a shared line already in the chunk is copied in first.
    fn line(&mut self) -> &mut Vec<u8> {
        self.lines += 1;
        self.space()
    }

    fn space(&mut self) -> &mut Vec<u8> {
        if self.buf.capacity() == 0 {
            self.buf.reserve(self.next_cap);
        }
        if let Some(line) = self.shared.take() {
            self.buf.extend_from_slice(&line);
        }
        &mut self.buf
    }

    /// Appends a shared line: the chunk is the line itself when it is the chunk's first event.
    fn push_shared(&mut self, line: Bytes) {
        self.lines += 1;
        if self.is_empty() {
            self.shared = Some(line);
        } else {
            self.space().extend_from_slice(&line);
        }
    }

    /// The chunk's bytes and how many lines they hold; the chunk is empty after. The next
    /// buffer is sized after this chunk: full chunks (replay) keep their capacity so they never
    /// regrow, small ones (live events) stay small.
    fn take(&mut self) -> (Bytes, u64) {
        self.next_cap = (self.len() * 2).clamp(8192, self.buf.capacity().max(8192));
        let bytes = match self.shared.take() {
            Some(line) => line,
            None => Bytes::from(std::mem::take(&mut self.buf)),
        };
        (bytes, std::mem::take(&mut self.lines))
    }
}

/// Spawns the watch task; returns the body channel.
///
/// The watch's starting point (the initial state of a streaming list, the position of a replay)
/// is taken here, before the response starts, so every write acknowledged after the answer is an
/// event of the watch.
pub fn spawn(store: Arc<WatchCache>, controls: Arc<Controls>, p: WatchParams) -> mpsc::Receiver<Bytes> {
    // One chunk waits here while the connection writes the ones before it (an HTTP/1.1
    // connection queues up to 64 KiB of them, see `server::HTTP1_MAX_BUF`): a watcher whose
    // client is slower than the server holds a few chunks, not a few more per slot of this channel.
    let (tx, rx) = mpsc::channel::<Bytes>(1);
    let registered = store.resource_version();
    // Objects a webhook converts are matched once converted (see `run`).
    let all = Selectors::default();
    let sel = if crate::conversion::webhook_of(&p.info).is_some() { &all } else { &p.sel };
    let initial = match p.start {
        WatchStart::Initial { .. } => Some(store.snapshot(&p.info, p.ns.as_deref(), sel)),
        WatchStart::After(_) => None,
    };
    tokio::spawn(run(store, controls, p, tx, registered, initial));
    rx
}

type Snapshot = Result<(u64, Vec<Arc<StoredObject>>), ApiError>;

/// The watch's end of the response body, with kube-apiserver's rule for watchers that do not keep
/// up ([`crate::controls::UnresponsiveClose`]): while a chunk waits for the client, the events written
/// after the watch started pile up in its buffer, and past the rule's grace the watcher is closed.
struct Out {
    tx: mpsc::Sender<Bytes>,
    store: Arc<WatchCache>,
    controls: Arc<Controls>,
    info: Arc<ResourceInfo>,
    /// The store's resourceVersion when the watch started: later events are "buffered" events.
    registered: u64,
    over_since: Option<Instant>,
    /// Counts the events sent: each is one line.
    events: Option<prometheus_client::metrics::counter::Counter>,
}

impl Out {
    /// Whether the watcher's buffer has been over the limit for longer than the grace.
    fn unresponsive(&mut self, cursor: u64) -> bool {
        let Some(rule) = self.controls.unresponsive_close() else {
            self.over_since = None;
            return false;
        };
        if self.store.backlog(&self.info, cursor.max(self.registered)) <= rule.buffer {
            self.over_since = None;
            return false;
        }
        let now = Instant::now();
        now.duration_since(*self.over_since.get_or_insert(now)) >= rule.grace
    }

    /// Sends `chunk`; false when the watch must end (client gone, or closed as
    /// unresponsive: then the chunk is dropped, unless `graceful`, when it is still sent).
    async fn send(&mut self, chunk: &mut Chunk, cursor: u64, graceful: bool) -> bool {
        if chunk.is_empty() {
            return true;
        }
        let (chunk, lines) = chunk.take();
        if let Some(events) = &self.events {
            events.inc_by(lines);
        }
        if self.controls.unresponsive_close().is_none() {
            return self.tx.send(chunk).await.is_ok();
        }
        loop {
            if self.unresponsive(cursor) {
                self.controls.count_unresponsive_close();
                tracing::info!(resource = %self.info.plural, graceful, "closing a watcher due to unresponsiveness");
                if graceful {
                    let _ = self.tx.send(chunk).await;
                }
                return false;
            }
            tokio::select! {
                biased;
                permit = self.tx.reserve() => return match permit {
                    Ok(p) => {
                        p.send(chunk);
                        true
                    }
                    Err(_) => false,
                },
                _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
        }
    }

    /// Sleeps between events (a slow link); false when the watch must end meanwhile.
    async fn pace(&mut self, delay: Duration, epoch: &mut tokio::sync::watch::Receiver<u64>) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(delay) => true,
            _ = epoch.changed() => false,
        }
    }
}

/// A watch whose objects its resource's conversion webhook did not convert ends, as
/// kube-apiserver's does when it cannot encode an event.
fn conversion_failed(info: &ResourceInfo, e: &ApiError) {
    tracing::warn!(resource = %info.plural, version = %info.version, error = %e.message, "ending a watch: conversion failed");
}

async fn run(
    store: Arc<WatchCache>,
    controls: Arc<Controls>,
    p: WatchParams,
    tx: mpsc::Sender<Bytes>,
    registered: u64,
    initial: Option<Snapshot>,
) {
    let _open = controls.watch_opened();
    let info = p.info.clone();
    let filter = Filter {
        trivial: p.ns.is_none() && p.sel.is_empty() && p.render == crate::table::Render::Object,
        table: match p.render {
            crate::table::Render::Table(include) => Some(include),
            _ => None,
        },
        metadata: p.render == crate::table::Render::Metadata,
        headers_sent: Default::default(),
        ns: p.ns.clone(),
        sel: p.sel.clone(),
    };
    let mut epoch = controls.watch_epoch();
    epoch.borrow_and_update();
    let mut reset = store.reset_epoch();
    reset.borrow_and_update();
    let Ok(mut notify) = store.subscribe(&info) else {
        return;
    };
    notify.borrow_and_update();
    let started = Instant::now();
    let deadline = started + p.timeout;
    let final_bookmark_at = deadline.checked_sub(p.bookmark_before_timeout).unwrap_or(started);
    let mut final_bookmark_sent = !p.bookmarks;
    let mut next_bookmark = started + p.bookmark_interval;
    // The first chunk has room for a full chunk plus one large object, so a replay's chunks
    // rarely regrow.
    let mut chunk = Chunk::new(p.chunk_bytes.min(4 << 20) + 16 * 1024);
    let mut out = Out {
        tx,
        store: store.clone(),
        controls: controls.clone(),
        info: info.clone(),
        registered,
        over_since: None,
        events: p.events.clone(),
    };

    // Position and initial state.
    let mut cursor: u64;
    let mut last_sent: u64;
    match p.start {
        WatchStart::After(rv) => {
            cursor = rv;
            last_sent = rv;
        }
        WatchStart::Initial { end_bookmark } => {
            let (rv, items) = match initial {
                Some(Ok(s)) => s,
                Some(Err(e)) => {
                    let _ = out.tx.send(encode_error(&e)).await;
                    return;
                }
                None => return,
            };
            out.registered = rv;
            let mut items = match crate::conversion::to_served(store.conversions(), &info, items).await {
                Ok(items) => items,
                Err(e) => return conversion_failed(&info, &e),
            };
            if crate::conversion::webhook_of(&info).is_some() {
                items.retain(|o| filter.matches(o));
            }
            let delay = controls.stream_delay();
            for o in &items {
                filter.emit(&info, chunk.line(), "ADDED", o);
                if !delay.is_zero() {
                    if !out.send(&mut chunk, rv, false).await || !out.pace(delay, &mut epoch).await {
                        return;
                    }
                } else if chunk.len() >= p.chunk_bytes && !out.send(&mut chunk, rv, false).await {
                    return;
                }
            }
            let end = end_bookmark && p.bookmarks;
            if end {
                encode_bookmark(chunk.line(), &info, rv, true, &filter);
            }
            if !out.send(&mut chunk, rv, end).await {
                return;
            }
            cursor = rv;
            last_sent = rv;
        }
    }

    let origin = cursor;
    let mut events: Vec<Arc<Event>> = Vec::new();
    loop {
        // A withdrawn resource gets no more events: once those it has are sent, the watch ends.
        let mut withdrawn;
        // Drain everything that is ready.
        loop {
            // A dropped watch sends nothing written after the drop (the client re-watches from
            // its last resourceVersion).
            if epoch.has_changed().unwrap_or(true) || reset.has_changed().unwrap_or(true) {
                return;
            }
            notify.borrow_and_update();
            events.clear();
            let cur = match store.read_watched_events(&info, cursor, BATCH, &mut events) {
                Ok(Ok((cur, gone))) => {
                    withdrawn = gone;
                    cur
                }
                Ok(Err(too_old)) => {
                    // Fell behind the history (or it was compacted): like the
                    // cacher, terminate the watch; clients re-watch.
                    if cursor == last_sent && chunk.is_empty() && p.start == WatchStart::After(cursor) {
                        let _ = out.tx.send(encode_error(&too_old_error(cursor, too_old.start_rv))).await;
                    } else {
                        let _ = out.send(&mut chunk, cursor, false).await;
                    }
                    return;
                }
                Err(_) => return,
            };
            let full_batch = events.len() >= BATCH;
            if crate::conversion::webhook_of(&info).is_some() {
                match crate::conversion::events_served(store.conversions(), &info, &events, !filter.trivial).await {
                    Ok(Some(converted)) => events = converted,
                    Ok(None) => {}
                    Err(e) => return conversion_failed(&info, &e),
                }
            }
            let delay = controls.stream_delay();
            for ev in &events {
                if filter.encode(&info, ev, &mut chunk) {
                    last_sent = ev.rv;
                    if !delay.is_zero()
                        && (!out.send(&mut chunk, ev.rv, false).await || !out.pace(delay, &mut epoch).await)
                    {
                        return;
                    }
                }
                cursor = ev.rv;
                if chunk.len() >= p.chunk_bytes && !out.send(&mut chunk, cursor, false).await {
                    return;
                }
            }
            if !full_batch {
                // Nothing of this resource between the last event and `cur`.
                cursor = cursor.max(cur);
                break;
            }
        }
        events.clear();
        events.shrink_to(IDLE_EVENTS);
        if !out.send(&mut chunk, cursor, false).await || withdrawn {
            return;
        }
        let now = Instant::now();
        if p.bookmarks && now >= next_bookmark {
            if cursor > last_sent {
                encode_bookmark(chunk.line(), &info, cursor, false, &filter);
                last_sent = cursor;
                if !out.send(&mut chunk, cursor, false).await {
                    return;
                }
            }
            next_bookmark = now + p.bookmark_interval;
        }
        if !final_bookmark_sent && now >= final_bookmark_at {
            final_bookmark_sent = true;
            // As kube's watchers, a bookmark only for a resourceVersion past the watch's start.
            if cursor > origin {
                encode_bookmark(chunk.line(), &info, cursor, false, &filter);
                last_sent = cursor;
                if !out.send(&mut chunk, cursor, false).await {
                    return;
                }
            }
        }
        if now >= deadline {
            return;
        }
        let bookmark_wake = if p.bookmarks { next_bookmark } else { deadline };
        let final_wake = if final_bookmark_sent { deadline } else { final_bookmark_at };
        tokio::select! {
            // An ended watch or a gone client first, so that a dropped watch serves no more.
            biased;
            _ = epoch.changed() => return,
            _ = reset.changed() => return,
            _ = out.tx.closed() => return,
            r = notify.changed() => { if r.is_err() { return; } }
            _ = sleep_until(bookmark_wake.min(final_wake).min(deadline)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_counts_its_lines_shared_or_its_own() {
        let shared = Bytes::from_static(b"{\"type\":\"MODIFIED\"}\n");
        let mut chunk = Chunk::new(64);
        chunk.push_shared(shared.clone());
        let (bytes, lines) = chunk.take();
        assert_eq!((bytes.as_ptr(), lines), (shared.as_ptr(), 1), "a lone shared line is sent as it is");

        chunk.push_shared(shared.clone());
        chunk.push_shared(shared.clone());
        chunk.line().extend_from_slice(b"{\"type\":\"BOOKMARK\"}\n");
        let (bytes, lines) = chunk.take();
        assert_eq!(lines, 3);
        assert_eq!(&bytes[..], &b"{\"type\":\"MODIFIED\"}\n{\"type\":\"MODIFIED\"}\n{\"type\":\"BOOKMARK\"}\n"[..]);
        assert!(chunk.is_empty());
        assert_eq!(chunk.take().1, 0);
    }
}
