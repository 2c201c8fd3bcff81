//! `informer demo` under faults, as a process: `--chaos` on the embedded server (every fault
//! checked, nothing lost), and a real server (`informer serve --data-dir`, through
//! `--kubeconfig`) that goes away and comes back while the demo's informer, load generator and
//! final check wait for it instead of giving up.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, Serve, scratch};

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split_whitespace().find_map(|w| w.strip_prefix(name)).unwrap_or("").trim_end_matches(';')
}

#[test]
fn chaos_mode_survives_its_faults_and_loses_nothing() {
    let out = Command::new(BIN)
        .args(["demo", "--chaos", "--chaos-interval", "1", "--chaos-seed", "42", "--duration", "30"])
        .args(["--objects", "300", "--rate", "100"])
        .output()
        .expect("the informer binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "exit {:?}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let faults = stdout.lines().filter(|l| l.starts_with("chaos: t=")).count();
    let recovered = stdout.lines().filter(|l| l.contains(": recovered from ")).count();
    assert!(faults >= 6, "{faults} faults in 30 s\n{stdout}");
    assert!(recovered + 1 >= faults, "each fault is followed by a passed check\n{stdout}");
    assert!(!stdout.contains("FAILED"), "{stdout}");
    let summary = stdout.lines().find(|l| l.starts_with("chaos: faults survived")).expect("a chaos summary");
    assert_eq!(field(summary, "failed="), "0", "{summary}");
    assert_eq!(field(summary, "lost_events="), "0", "{summary}");
    assert!(stdout.contains("check: cache == server"), "{stdout}");
}

/// Forwards a child's output lines to a channel (and keeps them).
fn lines(
    r: impl std::io::Read + Send + 'static,
    tx: std::sync::mpsc::Sender<String>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(r).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    })
}

/// Waits (30 s at most) for a line containing `what`.
fn expect_line(rx: &std::sync::mpsc::Receiver<String>, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(what) => return,
            Ok(_) => {}
            Err(e) => panic!("no line with {what:?}: {e}"),
        }
    }
}

#[test]
fn a_server_that_goes_away_is_waited_for() {
    let dir = scratch("away");
    let data = dir.join("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let kubeconfig = dir.join("kubeconfig");
    let data_arg = data.to_str().unwrap().to_string();
    let kc_arg = kubeconfig.to_str().unwrap().to_string();
    let mut server = Serve::start_on(&addr, &["--data-dir", &data_arg, "--write-kubeconfig", &kc_arg]);
    let mut demo = Command::new(BIN)
        .args(["demo", "--kubeconfig", &kc_arg, "--generate-load", "--rate", "20", "--duration", "12"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out_tx, out_rx) = std::sync::mpsc::channel();
    let (err_tx, err_rx) = std::sync::mpsc::channel();
    let stdout = lines(demo.stdout.take().unwrap(), out_tx);
    let stderr = lines(demo.stderr.take().unwrap(), err_tx);
    // Once the demo runs under load, the server goes away (SIGTERM) ...
    expect_line(&out_rx, "t=   2s");
    let status = server.terminate();
    assert!(status.success(), "serve stops on SIGTERM: {status:?}");
    // ... and comes back (same port, same data) once the load generator noticed.
    expect_line(&err_rx, "the API server is away");
    let _server = Serve::start_on(&addr, &["--data-dir", &data_arg]);
    let status = demo.wait().unwrap();
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "exit {status:?}\n{stdout}\n{stderr}");
    assert!(stdout.contains("check: cache == server"), "{stdout}");
    assert!(stderr.contains("the API server is back"), "the load generator resumed:\n{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}
