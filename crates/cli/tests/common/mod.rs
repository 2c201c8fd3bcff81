//! Shared helpers of the CLI's process tests: `informer serve` as a child process (started, its
//! URL read from its log, killed with SIGKILL or stopped with SIGTERM), a kube client for it, and
//! a tmux session (a real terminal) read by polling its pane.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_informer");

/// A scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("informer-cli-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `informer serve` running as a child process.
pub struct Serve {
    child: Child,
    pub url: String,
}

impl Serve {
    /// Starts `informer serve --addr 127.0.0.1:0 ARGS` and waits (30 s at most) for its
    /// "listening on" line.
    pub fn start(args: &[&str]) -> Serve {
        Serve::start_on("127.0.0.1:0", args)
    }

    /// Starts `informer serve --addr ADDR ARGS`.
    pub fn start_on(addr: &str, args: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .args(["serve", "--addr", addr])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the informer binary runs");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("listening on ").nth(1)
                    && let Some(t) = tx.take()
                {
                    let _ = t.send(Ok(url.trim().to_string()));
                } else if let Some(t) = &tx
                    && line.starts_with("error")
                {
                    let _ = t.send(Err(line.clone()));
                }
            }
            if let Some(t) = tx {
                let _ = t.send(Err("the server exited".into()));
            }
        });
        let url = rx.recv_timeout(Duration::from_secs(30)).expect("the server starts within 30 s").expect("serve");
        Serve { child, url }
    }

    /// SIGKILL, as a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits for the exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        unsafe_free_sigterm(self.child.id());
        self.child.wait().unwrap()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

fn unsafe_free_sigterm(pid: u32) {
    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A kube client for `url` (plain HTTP, no credentials).
pub fn client(url: &str) -> kube::Client {
    let cfg = kube::Config::new(url.parse().unwrap());
    kube::Client::try_from(cfg).unwrap()
}

/// Kills the tmux session when the test ends, passed or not.
pub struct Session(pub String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).output();
    }
}

/// The text of the tmux session's pane.
pub fn capture(session: &str) -> String {
    let out = Command::new("tmux").args(["capture-pane", "-p", "-t", session]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Polls `f` every 100 ms (an external process or terminal) until it returns `Some` or `limit`
/// passes.
pub fn poll<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
