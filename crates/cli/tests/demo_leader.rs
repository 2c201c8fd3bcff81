//! End-to-end tests of `informer demo --leader-elect` run as processes: alone against the
//! embedded server, and two replicas against `informer serve` where the second takes over when
//! the first stops and releases the lease. Waiting reads the processes' output as it comes, with
//! a deadline; no fixed sleep stands in for a condition.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{BIN, Serve, Session, capture, poll, scratch};

/// Kills the child process when the test ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A demo process whose stdout lines arrive on a channel.
struct Demo {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Demo {
    fn start(args: &[&str]) -> Demo {
        let mut child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Demo { child: Child(child), lines, seen: Vec::new() }
    }

    /// Waits for a line equal to `want`; returns when it arrived.
    fn expect(&mut self, want: &str) -> Instant {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l == want {
                        return Instant::now();
                    }
                }
                Err(_) => panic!("no line {want:?}; output so far:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Waits for the process to exit; returns its status and the rest of its output.
    fn finish(mut self) -> (std::process::ExitStatus, Vec<String>) {
        let status = self.child.0.wait().unwrap();
        self.seen.extend(self.lines.iter());
        (status, self.seen)
    }
}

#[test]
fn alone_it_leads_reconciles_and_releases_on_exit() {
    let mut demo = Demo::start(&[
        "demo",
        "--leader-elect",
        "--identity",
        "solo",
        "--duration",
        "3",
        "--objects",
        "200",
        "--rate",
        "50",
    ]);
    demo.expect("leader: solo");
    demo.expect("leading: true");
    let (status, out) = demo.finish();
    let text = out.join("\n");
    assert!(status.success(), "{status:?}\n{text}");
    assert!(out.iter().any(|l| l == "leading: false"), "{text}");
    assert!(text.contains("check: cache == server"), "{text}");
    let ok: u64 = text.split_whitespace().find_map(|w| w.strip_prefix("ok=")).and_then(|n| n.parse().ok()).unwrap();
    assert!(ok >= 200, "the leader reconciled every pod: {text}");
    // Transition lines come once each.
    assert_eq!(out.iter().filter(|l| *l == "leading: true").count(), 1, "{text}");
}

#[test]
fn a_second_replica_takes_over_when_the_first_stops() {
    // `informer serve` stands in for a cluster shared by the two replicas.
    let kc = scratch("leader").join("kubeconfig");
    let kc = kc.to_str().unwrap();
    // It writes the kubeconfig before it reports listening.
    let _server = Serve::start(&["--write-kubeconfig", kc]);
    let replica = |id: &str, secs: &str| {
        Demo::start(&[
            "demo",
            "--kubeconfig",
            kc,
            "--leader-elect",
            "--identity",
            id,
            "--lease-name",
            "ha-demo",
            "--duration",
            secs,
        ])
    };

    let mut a = replica("a", "5");
    a.expect("leading: true");
    let mut b = replica("b", "120");
    b.expect("leader: a");
    let a_stopped = {
        a.expect("leading: false");
        let (status, out) = a.finish();
        assert!(status.success(), "{status:?}\n{}", out.join("\n"));
        Instant::now()
    };
    b.expect("leader: b");
    let took_over = b.expect("leading: true");
    assert!(took_over - a_stopped < Duration::from_secs(10), "B took over {:?} after A stopped", took_over - a_stopped);
    // Ctrl-C stops B cleanly (it releases the lease too).
    let sent = std::process::Command::new("kill").args(["-INT", &b.child.0.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let (status, out) = b.finish();
    assert!(status.success(), "{status:?}\n{}", out.join("\n"));
    assert!(out.iter().any(|l| l == "leading: false"));
}

#[test]
fn the_live_view_shows_the_leader_and_the_transitions() {
    let tmux_ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    assert!(tmux_ok, "this test needs tmux (apt-get install -y tmux, as ./test.sh does)");
    let name = format!("informer-demo-leader-{}", std::process::id());
    let script =
        format!("'{BIN}' demo --leader-elect --identity tui-1 --duration 60 --objects 100 --rate 20; sleep 120");
    let out = Command::new("tmux")
        .args(["new-session", "-d", "-s", &name, "-x", "160", "-y", "45", &script])
        .output()
        .expect("tmux runs");
    assert!(out.status.success(), "tmux new-session failed: {}", String::from_utf8_lossy(&out.stderr));
    let session = Session(name);
    let screen = poll(Duration::from_secs(60), || {
        let s = capture(&session.0);
        (s.contains("leader: this process") && s.contains("leading: true") && s.contains("leader: tui-1")).then_some(s)
    });
    screen.unwrap_or_else(|| panic!("no leader in the live view; pane:\n{}", capture(&session.0)));
    let sent = Command::new("tmux").args(["send-keys", "-t", &session.0, "q"]).output().unwrap();
    assert!(sent.status.success());
    let after = poll(Duration::from_secs(45), || {
        let s = capture(&session.0);
        s.contains("leading: false").then_some(s)
    });
    after.unwrap_or_else(|| panic!("the release was not printed after the view; pane:\n{}", capture(&session.0)));
}
