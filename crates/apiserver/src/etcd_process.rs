//! A throwaway etcd for tests: starts the etcd binary (`/usr/bin/etcd` from Debian's
//! `etcd-server`, or `$ETCD_BIN`) on free loopback ports with a data directory of its own (other
//! ports when one was taken before etcd could bind it), waits until it serves clients, and kills
//! it when dropped.
//!
//! Invariants: the process never outlives its owner — it is killed on drop, and on Linux it is
//! also killed by the kernel when the process that started it dies (`PR_SET_PDEATHSIG`, armed
//! from a thread that lives as long as the process, since the kernel ties it to the spawning
//! thread), so a crashed test leaves no etcd behind; its data directory is removed on drop (a [`kill`] /
//! [`restart`] keeps it, like a real crash and restart).
//!
//! [`kill`]: EtcdProcess::kill
//! [`restart`]: EtcdProcess::restart

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

type SpawnRequest = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);

/// Spawns `cmd` from a thread that never exits: a child's `PR_SET_PDEATHSIG` fires when the thread
/// that spawned it ends, so spawning from a short-lived test thread would kill etcd with it.
fn spawn_from_keeper(cmd: Command) -> std::io::Result<Child> {
    static KEEPER: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<SpawnRequest>>> =
        std::sync::OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("etcd-keeper".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
                // The sender lives in a static: never reached while the process runs.
                loop {
                    std::thread::park();
                }
            })
            .expect("spawn the etcd keeper thread");
        std::sync::Mutex::new(tx)
    });
    let (reply, rx) = std::sync::mpsc::channel();
    keeper
        .lock()
        .map_err(|_| std::io::Error::other("etcd keeper poisoned"))?
        .send((cmd, reply))
        .map_err(|_| std::io::Error::other("etcd keeper gone"))?;
    rx.recv().map_err(|_| std::io::Error::other("etcd keeper gone"))?
}

/// A running (or killed) etcd.
#[derive(Debug)]
pub struct EtcdProcess {
    child: Option<Child>,
    dir: PathBuf,
    client_port: u16,
    peer_port: u16,
    binary: PathBuf,
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// The etcd binary: `$ETCD_BIN`, else `/usr/bin/etcd`, else `etcd` on the PATH.
pub fn etcd_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("ETCD_BIN") {
        return PathBuf::from(p);
    }
    let debian = Path::new("/usr/bin/etcd");
    if debian.exists() { debian.to_path_buf() } else { PathBuf::from("etcd") }
}

impl EtcdProcess {
    /// Starts an etcd with a fresh data directory and waits (up to 30 s) until it serves.
    pub fn start() -> std::io::Result<EtcdProcess> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n == 0 {
            crate::testing::remove_stale("informer-etcd-");
        }
        let dir = std::env::temp_dir().join(format!("informer-etcd-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let mut e =
            EtcdProcess { child: None, dir, client_port: free_port()?, peer_port: free_port()?, binary: etcd_binary() };
        let mut tries = 0;
        loop {
            match e.spawn() {
                Ok(()) => return Ok(e),
                // Another process took a port between its choice and etcd's bind: other ports.
                Err(err) if tries < 5 && err.to_string().contains("address already in use") => {
                    tries += 1;
                    (e.client_port, e.peer_port) = (free_port()?, free_port()?);
                    let _ = std::fs::remove_dir_all(e.dir.join("data"));
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// The client URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the process is running.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--name")
            .arg("test")
            .arg("--data-dir")
            .arg(self.dir.join("data"))
            .arg("--listen-client-urls")
            .arg(self.url())
            .arg("--advertise-client-urls")
            .arg(self.url())
            .arg("--listen-peer-urls")
            .arg(&peer)
            .arg("--initial-advertise-peer-urls")
            .arg(&peer)
            .arg("--initial-cluster")
            .arg(format!("test={peer}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl is async-signal-safe; the closure touches nothing else.
            #[allow(unsafe_code)]
            unsafe {
                cmd.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = spawn_from_keeper(cmd).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot start {} (install etcd-server): {e}", self.binary.display()))
        })?;
        let stderr = child.stderr.take().ok_or_else(|| std::io::Error::other("no stderr"))?;
        // etcd logs "ready to serve client requests" once it accepts clients; read its log until
        // then (in a thread, so a silent etcd cannot block past the deadline), then keep draining.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            let mut tail: Vec<String> = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(t) = &tx {
                    if line.contains("ready to serve client requests") {
                        let _ = t.send(Ok(()));
                        tx = None;
                    } else {
                        tail.push(line);
                        if tail.len() > 20 {
                            tail.remove(0);
                        }
                    }
                }
            }
            if let Some(t) = tx {
                let _ = t.send(Err(tail.join("\n")));
            }
        });
        self.child = Some(child);
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(log)) => {
                self.kill();
                Err(std::io::Error::other(format!("etcd exited before serving:\n{log}")))
            }
            Err(_) => {
                self.kill();
                Err(std::io::Error::other("etcd did not serve within 30 s"))
            }
        }
    }

    /// Kills the process (SIGKILL) and waits for it; the data directory stays.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the process again on the same ports and data directory.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.kill();
        let started = Instant::now();
        loop {
            match self.spawn() {
                Ok(()) => return Ok(()),
                // The old process's ports may take a moment to be released.
                Err(e) if started.elapsed() < Duration::from_secs(10) => {
                    tracing::debug!(error = %e, "restarting etcd");
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
