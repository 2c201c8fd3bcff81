//! `informer watch` run as a process against the embedded API server: a custom resource found
//! through discovery by its short name, printed with `-o json` as each change happens, and an
//! unknown resource refused with kubectl's message.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use informer_apiserver::{ApiServer, ResourceInfo};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_informer");

/// Kills the watch when the test ends, passed or not.
struct Watch(Child);

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn widget(name: &str, size: u64) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "default"}, "spec": {"size": size}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_resource_is_watched_by_its_short_name_as_json_lines() {
    let widgets = ResourceInfo::new("example.com", "v1", "widgets", "Widget", true).with_short_names(&["wd"]);
    let server = ApiServer::builder().register(widgets).start().await.unwrap();
    let created = server.create("widgets", widget("w1", 1)).await.unwrap();
    let dir = std::env::temp_dir().join(format!("informer-cli-watch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();

    let mut child = Command::new(BIN)
        .args(["watch", "wd", "-n", "default", "-o", "json", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _watch = Watch(child);
    let (tx, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    // Each line is awaited (the bound only turns a missing line into a failure).
    let next = || -> Value {
        let line = lines.recv_timeout(Duration::from_secs(60)).expect("a line from informer watch");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    };

    assert_eq!(next(), json!({"type": "ADDED", "object": created}), "the listed widget, as the server sent it");
    let w2 = server.create("widgets", widget("w2", 2)).await.unwrap();
    assert_eq!(next(), json!({"type": "ADDED", "object": w2}));
    let mut changed = created.clone();
    changed["spec"]["size"] = json!(10);
    let updated = server.update("widgets", changed).await.unwrap();
    assert_eq!(next(), json!({"type": "MODIFIED", "object": updated}));
    server.delete("widgets", "default", "w2").await.unwrap();
    let deleted = next();
    assert_eq!(
        (deleted["type"].as_str(), deleted["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("w2"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_resource_is_refused_with_kubectls_message() {
    let server = ApiServer::builder().start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("informer-cli-watch-unknown-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN).args(["watch", "gizmos", "--kubeconfig"]).arg(&kubeconfig).output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the server doesn't have a resource type \"gizmos\""), "{stderr}");
}
