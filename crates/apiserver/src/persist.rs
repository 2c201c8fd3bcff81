//! Optional persistence of objects and the RV counter to a data directory.
//!
//! The snapshot is `state.jsonl` in the directory: a header line
//! `{"resourceVersion":N}` then one line per object
//! `{"group":…,"resource":…,"object":{…}}`. It is written to a temporary file
//! and renamed, so a crash never leaves a torn snapshot. Loading restores the
//! objects (with their RVs) and the counter; watch history starts empty at N,
//! exactly like an apiserver restart.

use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::store::Store;

const FILE: &str = "state.jsonl";

/// The snapshot path inside `dir`.
pub fn snapshot_path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Writes a snapshot of `store` into `dir` (created if needed).
pub fn save(store: &Store, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let (rv, objects) = store.dump();
    let tmp = dir.join(format!("{FILE}.tmp"));
    {
        let mut w = BufWriter::new(std::fs::File::create(&tmp)?);
        writeln!(w, "{{\"resourceVersion\":{rv}}}")?;
        for (info, obj) in objects {
            w.write_all(b"{\"group\":")?;
            serde_json::to_writer(&mut w, &info.group)?;
            w.write_all(b",\"resource\":")?;
            serde_json::to_writer(&mut w, &info.plural)?;
            w.write_all(b",\"object\":")?;
            w.write_all(&obj.full)?;
            w.write_all(b"}\n")?;
        }
        w.flush()?;
        w.get_ref().sync_all()?;
    }
    std::fs::rename(&tmp, snapshot_path(dir))
}

/// Loads a snapshot from `dir` into an empty `store`. Returns false when
/// there is no snapshot. Objects of unknown resources are skipped.
pub fn load(store: &Store, dir: &Path) -> std::io::Result<bool> {
    let path = snapshot_path(dir);
    let f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let mut lines = std::io::BufReader::new(f).lines();
    let header: Value = match lines.next() {
        Some(l) => serde_json::from_str(&l?).map_err(|e| bad(format!("{}: {e}", path.display())))?,
        None => return Ok(false),
    };
    let rv = header
        .get("resourceVersion")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad(format!("{}: missing resourceVersion", path.display())))?;
    let mut objects = Vec::new();
    for line in lines {
        let line = line?;
        if line.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| bad(format!("{}: {e}", path.display())))?;
        let group = v.get("group").and_then(Value::as_str).unwrap_or("");
        let resource = v.get("resource").and_then(Value::as_str).unwrap_or("");
        let Some(info) = store.registry().all().iter().find(|r| r.group == group && r.plural == resource).cloned()
        else {
            continue;
        };
        if let Some(Value::Object(o)) = v.get("object").cloned() {
            objects.push((info, o));
        }
    }
    store.restore(rv, objects);
    Ok(true)
}
