//! The storage a benchmark's server runs on, chosen by name, with what it needs kept alive: a
//! SQLite database in a temporary directory (removed when the backend is dropped) or an etcd
//! started for the run (stopped when dropped).

use std::path::PathBuf;

use informer_apiserver::StorageConfig;
use informer_apiserver::etcd_process::EtcdProcess;

/// A server storage and what keeps it alive.
pub struct Backend {
    /// The storage to give the server.
    pub storage: StorageConfig,
    _etcd: Option<EtcdProcess>,
    dir: Option<PathBuf>,
}

impl Backend {
    /// The storage named `name`: `memory`; `sqlite`, in a fresh temporary directory named after
    /// `tag` and this process; or `etcd`, a real etcd started on loopback.
    pub fn new(name: &str, tag: &str) -> anyhow::Result<Backend> {
        Ok(match name {
            "memory" => Backend { storage: StorageConfig::Memory, _etcd: None, dir: None },
            "sqlite" => {
                let dir = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&dir);
                Backend { storage: StorageConfig::Sqlite(dir.clone()), _etcd: None, dir: Some(dir) }
            }
            "etcd" => {
                let etcd = EtcdProcess::start()?;
                let storage = StorageConfig::Etcd { endpoints: vec![etcd.url()] };
                Backend { storage, _etcd: Some(etcd), dir: None }
            }
            other => anyhow::bail!("unknown storage {other:?} (memory, sqlite, etcd)"),
        })
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
