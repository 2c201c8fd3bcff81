//! The embedded durable backend: SQLite (bundled, through `rusqlite`) in WAL mode with
//! `synchronous=FULL`, in one file `<data dir>/state.db`.
//!
//! Layout (kine's one-table revision log): table `kv`, one row per revision — `id` (the revision),
//! `name` (the key), `created`/`deleted` flags, the key's `create_revision`, `prev_revision` (the
//! row this one supersedes, 0 if none) and the `value` (empty for deletions). A key's current value
//! is its newest row unless that row is a deletion; the state at revision R is each key's newest
//! row with `id <= R`. Table `meta` keeps the last revision and the compacted revision, so the
//! revision never goes back even when compaction removes the newest rows (deletions).
//!
//! Writes go through one writer thread that owns the write connection and commits **groups**:
//! every request queued while the previous commit was being fsync'd joins the next transaction,
//! each request still getting its own revision and its own compare-and-swap, evaluated in order
//! (a later request sees the rows of earlier ones). A request is answered only after its
//! transaction committed, so an acknowledged write survives a crash (SIGKILL, power loss), and a
//! crash never leaves half a transaction (SQLite's WAL).
//!
//! One server at a time: the storage holds an exclusive lock on `<data dir>/lock` (released by
//! the kernel if the process dies) until it is dropped, and dropping it commits the writes still
//! queued before the lock goes, so a server started on the directory afterwards continues the
//! revision sequence where the last one left it.
//!
//! Watchers read committed changes from an in-memory log of the most recent ones (fed by the
//! writer after each commit) and from the table for older revisions (a restart's watch cache
//! replays the history since the compacted revision from there). Reads use their own connection.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use tokio::sync::{oneshot, watch};

use super::{
    Change, KeyValue, RangeRequest, RangeResult, Revision, Storage, StorageError, StorageFuture, WatchBatch,
    WatchStream,
};

/// The database file inside the data directory.
pub const FILE: &str = "state.db";
/// The lock file inside the data directory.
pub const LOCK_FILE: &str = "lock";
/// Requests committed in one transaction at most.
const MAX_GROUP: usize = 1024;
/// Changes kept in memory for watchers.
const MEMORY_LOG: usize = 16_384;
/// Changes a watch takes at once.
const WATCH_BATCH: usize = 1024;

enum Op {
    Create { key: String, value: Bytes },
    Update { key: String, value: Bytes, expected: Revision },
    Delete { key: String, expected: Revision },
    Compact { revision: Revision },
}

struct Request {
    op: Op,
    reply: oneshot::Sender<Result<Revision, StorageError>>,
}

/// State shared by the writer thread and the readers.
struct Shared {
    revision: Revision,
    compacted: Revision,
    /// Committed changes with revisions in `(log_floor, revision]`, in order.
    log: VecDeque<Change>,
    log_floor: Revision,
}

/// The SQLite storage (see the module documentation).
pub struct SqliteStorage {
    /// `None` only while dropping.
    writer: Option<std::sync::mpsc::SyncSender<Request>>,
    writer_thread: Option<std::thread::JoinHandle<()>>,
    reader: Arc<Mutex<Connection>>,
    shared: Arc<Mutex<Shared>>,
    notify: watch::Sender<Revision>,
    path: PathBuf,
}

fn internal(e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal(e.to_string())
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open(path)?;
    c.busy_timeout(std::time::Duration::from_secs(30))?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(None, "synchronous", "FULL")?;
    Ok(c)
}

/// A key's newest row: (id, create_revision, deleted, value).
type Row = (i64, i64, bool, Vec<u8>);

/// The newest row of a key.
fn current_row(tx: &Connection, key: &str) -> rusqlite::Result<Option<Row>> {
    tx.prepare_cached("SELECT id, create_revision, deleted, value FROM kv WHERE name = ?1 ORDER BY id DESC LIMIT 1")?
        .query_row(params![key], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? != 0, r.get(3)?)))
        .optional()
}

fn kv_of(key: &str, (id, create, _, value): Row) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Bytes::from(value),
        create_revision: create as u64,
        mod_revision: id as u64,
    }
}

/// The error of a data directory another storage holds.
fn in_use(dir: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::WouldBlock,
        format!("the data directory {} is in use by another server", dir.display()),
    )
}

/// The data directory's lock file, created if missing, not yet locked.
fn lock_file(dir: &Path) -> std::io::Result<std::fs::File> {
    std::fs::create_dir_all(dir)?;
    std::fs::File::options().create(true).truncate(false).write(true).open(dir.join(LOCK_FILE))
}

impl SqliteStorage {
    /// Opens (or creates) the database in `dir`; an error of kind `WouldBlock` if another storage
    /// holds the directory.
    pub fn open(dir: &Path) -> std::io::Result<SqliteStorage> {
        let lock = lock_file(dir)?;
        match lock.try_lock() {
            Ok(()) => Self::open_locked(dir, lock),
            Err(std::fs::TryLockError::WouldBlock) => Err(in_use(dir)),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// [`Self::open`], waiting up to `wait` for another storage on the directory (a server
    /// shutting down in this process or another) to let it go.
    pub async fn open_when_free(dir: &Path, wait: std::time::Duration) -> std::io::Result<SqliteStorage> {
        let lock = lock_file(dir)?;
        match lock.try_lock() {
            Ok(()) => return Self::open_locked(dir, lock),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        tracing::info!(dir = %dir.display(), "waiting for the data directory's lock");
        // The blocking wait runs on a thread of its own; given up, the thread unlocks (by
        // dropping the file) whenever it gets the lock.
        let (tx, rx) = oneshot::channel();
        std::thread::Builder::new().name("sqlite-lock".into()).spawn(move || {
            let _ = tx.send(lock.lock().map(|()| lock));
        })?;
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(Ok(lock))) => Self::open_locked(dir, lock),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) | Err(_) => Err(in_use(dir)),
        }
    }

    fn open_locked(dir: &Path, lock: std::fs::File) -> std::io::Result<SqliteStorage> {
        let path = dir.join(FILE);
        let io = |e: rusqlite::Error| std::io::Error::other(format!("{}: {e}", path.display()));
        let conn = open(&path).map_err(io)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS kv (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                created INTEGER NOT NULL,
                deleted INTEGER NOT NULL,
                create_revision INTEGER NOT NULL,
                prev_revision INTEGER NOT NULL,
                value BLOB NOT NULL
            );
            CREATE INDEX IF NOT EXISTS kv_name_id ON kv (name, id);
            CREATE INDEX IF NOT EXISTS kv_prev ON kv (prev_revision);
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;",
        )
        .map_err(io)?;
        let meta = |k: &str| -> rusqlite::Result<i64> {
            conn.query_row("SELECT value FROM meta WHERE key = ?1", params![k], |r| r.get(0))
                .optional()
                .map(|v| v.unwrap_or(0))
        };
        let max_id: i64 = conn.query_row("SELECT COALESCE(MAX(id), 0) FROM kv", [], |r| r.get(0)).map_err(io)?;
        let revision = meta("revision").map_err(io)?.max(max_id) as u64;
        let compacted = meta("compacted").map_err(io)? as u64;
        let reader = open(&path).map_err(io)?;
        let shared = Arc::new(Mutex::new(Shared { revision, compacted, log: VecDeque::new(), log_floor: revision }));
        let notify = watch::channel(revision).0;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Request>(4096);
        let writer = Writer { conn, shared: shared.clone(), notify: notify.clone(), next: revision + 1, _lock: lock };
        let thread = std::thread::Builder::new().name("sqlite-writer".into()).spawn(move || writer.run(rx))?;
        Ok(SqliteStorage {
            writer: Some(tx),
            writer_thread: Some(thread),
            reader: Arc::new(Mutex::new(reader)),
            shared,
            notify,
            path,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn submit(&self, op: Op) -> StorageFuture<'_, Revision> {
        let (reply, rx) = oneshot::channel();
        let sent = match &self.writer {
            Some(w) => w.send(Request { op, reply }).map_err(drop),
            None => Err(()),
        };
        async move {
            sent.map_err(|_| StorageError::Unavailable("the sqlite writer has stopped".into()))?;
            rx.await.map_err(|_| StorageError::Unavailable("the sqlite writer has stopped".into()))?
        }
        .boxed()
    }

    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StorageError> + Send + 'static,
    ) -> StorageFuture<'_, T> {
        let reader = self.reader.clone();
        async move {
            tokio::task::spawn_blocking(move || f(&reader.lock()))
                .await
                .map_err(|e| StorageError::Internal(format!("read task failed: {e}")))?
        }
        .boxed()
    }
}

fn range_at(c: &Connection, req: &RangeRequest, at: Revision) -> Result<RangeResult, StorageError> {
    let from = match &req.start {
        Some(s) if s.as_str() > req.prefix.as_str() => s.clone(),
        _ => req.prefix.clone(),
    };
    let end = prefix_end(&req.prefix);
    // The limit applies to keys (each key's newest row at `at`), so a page reads only its keys;
    // deleted keys among them leave the page shorter, never wrong.
    let limit = if req.limit == 0 { -1 } else { req.limit as i64 + 1 };
    let mut stmt = c
        .prepare_cached(
            "SELECT k.id, k.name, k.create_revision, k.value, k.deleted FROM
             (SELECT name, MAX(id) AS id FROM kv WHERE name >= ?1 AND name < ?2 AND id <= ?3
              GROUP BY name ORDER BY name LIMIT ?4) m
             JOIN kv k ON k.id = m.id ORDER BY k.name",
        )
        .map_err(internal)?;
    let mut rows = stmt.query(params![from, end, at as i64, limit]).map_err(internal)?;
    let mut out = RangeResult { kvs: Vec::new(), revision: at, more: false };
    let mut keys = 0;
    while let Some(r) = rows.next().map_err(internal)? {
        keys += 1;
        if req.limit > 0 && keys > req.limit {
            out.more = true;
            break;
        }
        if r.get::<_, i64>(4).map_err(internal)? != 0 {
            continue;
        }
        let id: i64 = r.get(0).map_err(internal)?;
        let create: i64 = r.get(2).map_err(internal)?;
        out.kvs.push(KeyValue {
            key: r.get(1).map_err(internal)?,
            value: Bytes::from(r.get::<_, Vec<u8>>(3).map_err(internal)?),
            create_revision: create as u64,
            mod_revision: id as u64,
        });
    }
    Ok(out)
}

/// The smallest string greater than every string starting with `prefix` (keys are ASCII paths).
fn prefix_end(prefix: &str) -> String {
    let mut b = prefix.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        if last < 0x7f {
            b.push(last + 1);
            return String::from_utf8(b).unwrap_or_else(|_| "\u{10FFFF}".into());
        }
    }
    "\u{10FFFF}".into()
}

/// Reads changes with revisions in `[from, until]` under `prefix` from the table.
fn changes_from_table(
    c: &Connection,
    prefix: &str,
    from: Revision,
    until: Revision,
) -> Result<(Vec<Change>, Revision), StorageError> {
    let mut stmt = c
        .prepare_cached(
            "SELECT id, name, deleted, create_revision, prev_revision, value FROM kv
             WHERE id >= ?1 AND id <= ?2 ORDER BY id LIMIT ?3",
        )
        .map_err(internal)?;
    let mut prev_stmt = c.prepare_cached("SELECT create_revision, value FROM kv WHERE id = ?1").map_err(internal)?;
    let mut rows = stmt.query(params![from as i64, until as i64, WATCH_BATCH as i64]).map_err(internal)?;
    let mut out = Vec::new();
    let mut last = from.saturating_sub(1);
    let mut n = 0;
    while let Some(r) = rows.next().map_err(internal)? {
        n += 1;
        let id = r.get::<_, i64>(0).map_err(internal)? as u64;
        last = id;
        let name: String = r.get(1).map_err(internal)?;
        if !name.starts_with(prefix) {
            continue;
        }
        let deleted = r.get::<_, i64>(2).map_err(internal)? != 0;
        let create = r.get::<_, i64>(3).map_err(internal)? as u64;
        let prev_rev = r.get::<_, i64>(4).map_err(internal)?;
        let prev = if prev_rev == 0 {
            None
        } else {
            prev_stmt
                .query_row(params![prev_rev], |p| {
                    Ok(KeyValue {
                        key: name.clone(),
                        value: Bytes::from(p.get::<_, Vec<u8>>(1)?),
                        create_revision: p.get::<_, i64>(0)? as u64,
                        mod_revision: prev_rev as u64,
                    })
                })
                .optional()
                .map_err(internal)?
        };
        out.push(if deleted {
            Change::Delete { key: name, revision: id, prev }
        } else {
            let value = Bytes::from(r.get::<_, Vec<u8>>(5).map_err(internal)?);
            Change::Put { kv: KeyValue { key: name, value, create_revision: create, mod_revision: id }, prev }
        });
    }
    // Fewer rows than asked: everything up to `until` has been read.
    if n < WATCH_BATCH {
        last = until;
    }
    Ok((out, last))
}

impl Storage for SqliteStorage {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn current_revision(&self) -> StorageFuture<'_, Revision> {
        let r = self.shared.lock().revision;
        async move { Ok(r) }.boxed()
    }

    fn compacted_revision(&self) -> StorageFuture<'_, Revision> {
        let r = self.shared.lock().compacted;
        async move { Ok(r) }.boxed()
    }

    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
        let key = key.to_string();
        self.read(move |c| Ok(current_row(c, &key).map_err(internal)?.filter(|r| !r.2).map(|r| kv_of(&key, r))))
    }

    fn range(&self, req: RangeRequest) -> StorageFuture<'_, RangeResult> {
        let (current, compacted) = {
            let s = self.shared.lock();
            (s.revision, s.compacted)
        };
        let at = match req.revision {
            None => current,
            Some(r) if r > current => {
                return async move { Err(StorageError::FutureRevision { requested: r, current }) }.boxed();
            }
            Some(r) if r < compacted => {
                return async move { Err(StorageError::Compacted { requested: r, compacted }) }.boxed();
            }
            Some(r) => r,
        };
        self.read(move |c| range_at(c, &req, at))
    }

    fn create(&self, key: String, value: Bytes) -> StorageFuture<'_, Revision> {
        self.submit(Op::Create { key, value })
    }

    fn update(&self, key: String, value: Bytes, expected: Revision) -> StorageFuture<'_, Revision> {
        self.submit(Op::Update { key, value, expected })
    }

    fn delete(&self, key: String, expected: Revision) -> StorageFuture<'_, Revision> {
        self.submit(Op::Delete { key, expected })
    }

    fn watch(&self, prefix: String, from: Revision) -> WatchStream {
        let shared = self.shared.clone();
        let reader = self.reader.clone();
        let state = Some((from.max(1), self.notify.subscribe()));
        Box::pin(futures_util::stream::unfold(state, move |state| {
            let (shared, reader, prefix) = (shared.clone(), reader.clone(), prefix.clone());
            async move {
                let (mut cursor, mut notify) = state?;
                loop {
                    notify.borrow_and_update();
                    let (revision, compacted, floor) = {
                        let s = shared.lock();
                        (s.revision, s.compacted, s.log_floor)
                    };
                    if cursor <= compacted {
                        return Some((Err(StorageError::Compacted { requested: cursor, compacted }), None));
                    }
                    if cursor <= floor {
                        // Older than the in-memory log: from the table.
                        let (p, r) = (prefix.clone(), reader.clone());
                        let read =
                            tokio::task::spawn_blocking(move || changes_from_table(&r.lock(), &p, cursor, floor))
                                .await
                                .map_err(|e| StorageError::Internal(format!("read task failed: {e}")))
                                .and_then(|r| r);
                        return match read {
                            Ok((changes, progress)) => {
                                Some((Ok(WatchBatch { changes, progress }), Some((progress + 1, notify))))
                            }
                            Err(e) => Some((Err(e), None)),
                        };
                    }
                    if cursor <= revision {
                        let s = shared.lock();
                        let first = s.log.partition_point(|c| c.revision() < cursor);
                        let mut changes = Vec::new();
                        let mut progress = s.revision;
                        for (n, c) in s.log.range(first..).enumerate() {
                            if n >= WATCH_BATCH {
                                progress = c.revision() - 1;
                                break;
                            }
                            if c.key().starts_with(prefix.as_str()) {
                                changes.push(c.clone());
                            }
                        }
                        cursor = progress + 1;
                        return Some((Ok(WatchBatch { changes, progress }), Some((cursor, notify))));
                    }
                    if notify.changed().await.is_err() {
                        return None;
                    }
                }
            }
        }))
    }

    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()> {
        let f = self.submit(Op::Compact { revision });
        async move { f.await.map(drop) }.boxed()
    }
}

impl Drop for SqliteStorage {
    /// Commits the queued writes and lets the data directory go.
    fn drop(&mut self) {
        self.writer = None;
        if let Some(t) = self.writer_thread.take() {
            let _ = t.join();
        }
    }
}

/// The writer thread (see the module documentation).
struct Writer {
    conn: Connection,
    shared: Arc<Mutex<Shared>>,
    notify: watch::Sender<Revision>,
    next: Revision,
    /// The data directory's lock, held as long as the thread runs.
    _lock: std::fs::File,
}

impl Writer {
    fn run(mut self, rx: std::sync::mpsc::Receiver<Request>) {
        while let Ok(first) = rx.recv() {
            let mut group = vec![first];
            while group.len() < MAX_GROUP {
                match rx.try_recv() {
                    Ok(r) => group.push(r),
                    Err(_) => break,
                }
            }
            self.commit_group(group);
        }
    }

    fn commit_group(&mut self, group: Vec<Request>) {
        let start = self.next;
        let mut results: Vec<Result<Revision, StorageError>> = Vec::with_capacity(group.len());
        let mut changes: Vec<Change> = Vec::new();
        let mut compacted = None;
        let outcome = (|| -> rusqlite::Result<()> {
            let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
            for req in &group {
                let r = match &req.op {
                    Op::Compact { revision } => {
                        // The revision this group has reached, and the compaction floor with
                        // this group's compactions.
                        let floor = compacted.unwrap_or_else(|| self.shared.lock().compacted);
                        let r = compact_in(&tx, *revision, self.next - 1, floor)?;
                        if r.is_ok() {
                            compacted = Some(*revision);
                        }
                        r.map(|()| *revision)
                    }
                    op => apply(&tx, op, &mut self.next, &mut changes)?,
                };
                results.push(r);
            }
            if self.next != start {
                tx.prepare_cached("INSERT INTO meta (key, value) VALUES ('revision', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value")?
                    .execute(params![(self.next - 1) as i64])?;
            }
            tx.commit()
        })();
        if let Err(e) = outcome {
            // Nothing of the group was committed.
            self.next = start;
            tracing::error!(error = %e, "sqlite commit failed");
            for req in group {
                let _ = req.reply.send(Err(StorageError::Internal(format!("commit failed: {e}"))));
            }
            return;
        }
        {
            let mut s = self.shared.lock();
            if let Some(c) = compacted {
                s.compacted = s.compacted.max(c);
            }
            if !changes.is_empty() {
                s.revision = self.next - 1;
                s.log.extend(changes);
                while s.log.len() > MEMORY_LOG {
                    if let Some(c) = s.log.pop_front() {
                        s.log_floor = c.revision();
                    }
                }
            }
        }
        self.notify.send_replace(self.next - 1);
        for (req, r) in group.into_iter().zip(results) {
            let _ = req.reply.send(r);
        }
    }
}

/// Applies one write inside the group's transaction. `Ok(Err(_))` is a failed comparison (nothing
/// written); `Err(_)` aborts the group.
fn apply(
    tx: &Connection,
    op: &Op,
    next: &mut Revision,
    changes: &mut Vec<Change>,
) -> rusqlite::Result<Result<Revision, StorageError>> {
    let insert = |id: Revision, key: &str, created: bool, deleted: bool, create: Revision, prev: i64, value: &[u8]| {
        tx.prepare_cached(
            "INSERT INTO kv (id, name, created, deleted, create_revision, prev_revision, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![id as i64, key, created as i64, deleted as i64, create as i64, prev, value])
        .map(drop)
    };
    let (key, expected) = match op {
        Op::Create { key, .. } => (key, None),
        Op::Update { key, expected, .. } | Op::Delete { key, expected } => (key, Some(*expected)),
        Op::Compact { .. } => return Ok(Err(StorageError::Internal("compaction is not a write".into()))),
    };
    let cur = current_row(tx, key)?.filter(|r| !r.2);
    let rev = *next;
    let result = match (op, cur) {
        (Op::Create { .. }, Some(_)) => return Ok(Err(StorageError::AlreadyExists)),
        (Op::Create { value, .. }, None) => {
            insert(rev, key, true, false, rev, 0, value)?;
            let kv = KeyValue { key: key.clone(), value: value.clone(), create_revision: rev, mod_revision: rev };
            Change::Put { kv, prev: None }
        }
        (_, None) => return Ok(Err(StorageError::NotFound)),
        (_, Some(row)) if Some(row.0 as u64) != expected => {
            return Ok(Err(StorageError::Conflict { current: Some(Box::new(kv_of(key, row))) }));
        }
        (Op::Update { value, .. }, Some(row)) => {
            let prev = kv_of(key, row);
            insert(rev, key, false, false, prev.create_revision, prev.mod_revision as i64, value)?;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: prev.create_revision,
                mod_revision: rev,
            };
            Change::Put { kv, prev: Some(prev) }
        }
        (_, Some(row)) => {
            let prev = kv_of(key, row);
            insert(rev, key, false, true, prev.create_revision, prev.mod_revision as i64, &[])?;
            Change::Delete { key: key.clone(), revision: rev, prev: Some(prev) }
        }
    };
    *next += 1;
    changes.push(result);
    Ok(Ok(rev))
}

/// Compacts inside the group's transaction: rows superseded at or before `revision` and deletions
/// at or before it go.
fn compact_in(
    tx: &Connection,
    revision: Revision,
    current: Revision,
    compacted: Revision,
) -> rusqlite::Result<Result<(), StorageError>> {
    if revision > current {
        return Ok(Err(StorageError::FutureRevision { requested: revision, current }));
    }
    if revision <= compacted {
        return Ok(Err(StorageError::Compacted { requested: revision, compacted }));
    }
    tx.execute(
        "DELETE FROM kv WHERE id IN (SELECT prev_revision FROM kv WHERE prev_revision != 0 AND id <= ?1)",
        params![revision as i64],
    )?;
    tx.execute("DELETE FROM kv WHERE deleted = 1 AND id <= ?1", params![revision as i64])?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('compacted', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![revision as i64],
    )?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('revision', ?1) ON CONFLICT(key) DO UPDATE SET value = MAX(value, excluded.value)",
        params![current as i64],
    )?;
    Ok(Ok(()))
}
