//! End-to-end tests of `informer demo` run as a process: the plain mode's summary and final
//! check, and the live terminal view driven through tmux (a real pseudo-terminal), quit with `q`.
//!
//! Waiting polls the external process (its output or tmux's pane) at a short interval with a
//! deadline; no fixed sleep stands in for a condition.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{BIN, Session, capture, poll, scratch};

#[test]
fn plain_mode_converges_and_loses_no_events() {
    let out = Command::new(BIN)
        .args(["demo", "--duration", "3", "--objects", "500", "--rate", "200"])
        .output()
        .expect("the informer binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    assert!(stdout.contains("check: cache == server"), "{stdout}");
    assert!(stdout.contains("lost_events=0 "), "{stdout}");
    let check = stdout.lines().find(|l| l.starts_with("check: server pods=")).expect("a check line");
    let field = |name: &str| -> String {
        check.split_whitespace().find_map(|w| w.strip_prefix(&format!("{name}="))).unwrap_or_default().to_string()
    };
    assert_eq!(field("pods"), field("cached"), "{check}");
    assert!(stdout.lines().any(|l| l.starts_with("t=") && l.contains("cached=") && l.contains("queue=")), "{stdout}");
    assert!(stdout.contains("summary: adds="), "{stdout}");
    assert!(stdout.contains("reconcile: ok="), "{stdout}");
}

#[test]
fn bad_kubeconfig_is_a_clear_error() {
    let dir = scratch("bad-kubeconfig");
    let path = dir.join("kubeconfig");
    std::fs::write(&path, "this: is: not: a kubeconfig").unwrap();
    let out = Command::new(BIN).args(["demo", "--kubeconfig"]).arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("kubeconfig"), "{stderr}");
}

#[test]
fn live_view_in_a_terminal_quits_on_q() {
    live_view_quits_on("q", "q");
}

#[test]
fn live_view_in_a_terminal_quits_on_ctrl_c() {
    live_view_quits_on("C-c", "ctrl-c");
}

/// Runs the demo in a tmux pane, waits for the dashboard, sends `keys` and checks the demo ends
/// with the final check passed and the terminal restored.
fn live_view_quits_on(keys: &str, tag: &str) {
    let tmux_ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    assert!(
        tmux_ok,
        "this test needs tmux to give the demo a real terminal; install it (apt-get install -y tmux, as ./test.sh does)"
    );
    let dir = scratch(&format!("tui-{tag}"));
    let status_file = dir.join("status");
    let _ = std::fs::remove_file(&status_file);
    let name = format!("informer-demo-test-{tag}-{}", std::process::id());
    // The duration is a safety net: the test quits with `q` long before.
    let script = format!(
        "'{BIN}' demo --duration 60 --objects 300 --rate 100; echo $? > '{}'; sleep 120",
        status_file.display()
    );
    let out = Command::new("tmux")
        .args(["new-session", "-d", "-s", &name, "-x", "160", "-y", "45", &script])
        .output()
        .expect("tmux runs");
    assert!(out.status.success(), "tmux new-session failed: {}", String::from_utf8_lossy(&out.stderr));
    let session = Session(name);

    // A frame is drawn in several writes: the view is there once its last panel's lines are.
    let screen = poll(Duration::from_secs(60), || {
        let s = capture(&session.0);
        let drawn = ["cached", "events", "queue", "reconcile", "latency p99", "q: quit"];
        drawn.iter().all(|w| s.contains(w)).then_some(s)
    });
    screen.unwrap_or_else(|| panic!("the live view did not appear; pane:\n{}", capture(&session.0)));

    let sent = Command::new("tmux").args(["send-keys", "-t", &session.0, keys]).output().unwrap();
    assert!(sent.status.success());
    let status =
        poll(Duration::from_secs(45), || std::fs::read_to_string(&status_file).ok().filter(|s| !s.trim().is_empty()));
    let status = status.unwrap_or_else(|| panic!("the demo did not exit after {keys}; pane:\n{}", capture(&session.0)));
    let after = capture(&session.0);
    assert_eq!(status.trim(), "0", "pane after exit:\n{after}");
    assert!(after.contains("check: cache == server"), "{after}");
    assert!(!after.contains("q: quit"), "the terminal was not restored:\n{after}");
}

fn kubeconfig_for(server: &str, name: &str) -> PathBuf {
    let path = scratch(name).join("kubeconfig");
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{server}\"}}\nusers:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

#[test]
fn unreachable_server_is_a_clear_error() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let kc = kubeconfig_for(&format!("http://127.0.0.1:{port}"), "unreachable");
    let out = Command::new(BIN).args(["demo", "--kubeconfig"]).arg(&kc).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: cannot reach the API server"), "{stderr}");
}

#[test]
fn forbidden_is_a_clear_error() {
    use std::io::{BufRead, BufReader, Write};
    // A server answering every request with a Kubernetes 403 Status.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"demo\" cannot list resource \"pods\"","reason":"Forbidden","code":403}"#;
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let kc = kubeconfig_for(&format!("http://{addr}"), "forbidden");
    let out = Command::new(BIN).args(["demo", "--kubeconfig"]).arg(&kc).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("forbidden (403)"), "{stderr}");
    assert!(stderr.contains("cannot list resource"), "{stderr}");
}

/// Kills the child process when the test ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn kubeconfig_mode_with_generated_load_converges() {
    // `informer serve` stands in for a real cluster: the demo reaches it only over HTTP.
    let dir = scratch("serve");
    let kc = dir.join("kubeconfig");
    let _ = std::fs::remove_file(&kc);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _server = Child(
        Command::new(BIN)
            .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--write-kubeconfig"])
            .arg(&kc)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let ready = poll(Duration::from_secs(30), || {
        (std::fs::metadata(&kc).is_ok_and(|m| m.len() > 0) && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok())
            .then_some(())
    });
    assert!(ready.is_some(), "informer serve did not start");
    let out = Command::new(BIN)
        .args(["demo", "--kubeconfig"])
        .arg(&kc)
        .args(["--generate-load", "--duration", "3", "--rate", "30"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    assert!(stdout.contains("watching pods in namespace default of cluster http://127.0.0.1"), "{stdout}");
    assert!(stdout.contains("check: cache == server") && stdout.contains("lost_events=0 "), "{stdout}");
    let adds: u64 = stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("adds="))
        .and_then(|n| n.parse().ok())
        .expect("a summary line");
    assert!(adds > 0, "the load generator created no pods:\n{stdout}");
}
