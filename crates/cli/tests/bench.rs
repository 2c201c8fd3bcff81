//! `informer bench --w1`: the one JSON line it prints reports every initial pod cached and every
//! update delivered, for both list modes and both handlers, inline and on a handler thread, with
//! the informer on the runtime or on a thread of its own.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_informer");

fn bench(args: &[&str]) -> serde_json::Value {
    let out =
        Command::new(BIN).args(["bench", "--w1", "--pods", "300", "--updates", "3000"]).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line: {stdout}");
    serde_json::from_str(lines[0]).unwrap()
}

fn check(v: &serde_json::Value, streaming: bool, handler: &str, thread: bool) {
    assert_eq!(v["client"], "informer");
    assert_eq!(v["streaming"], streaming);
    assert_eq!(v["handler"], handler);
    assert_eq!(v["handler_thread"], thread);
    assert_eq!(v["cached"], 300);
    assert_eq!(v["initial"], 300);
    assert_eq!(v["updates"], 3000);
    assert!(v["updates_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["rss_after_sync_kb"].as_u64().unwrap() > 0);
    assert!(v["peak_rss_kb"].as_u64() >= v["rss_after_sync_kb"].as_u64());
}

#[test]
fn list_keys_and_streaming_full_on_a_handler_thread_deliver_everything() {
    check(&bench(&["--list", "--handler", "keys"]), false, "keys", false);
    // A small back-pressure bound, so the informer is held and released many times.
    let v = bench(&["--streaming", "--handler", "full", "--handler-thread", "--block", "16", "--current-thread"]);
    check(&v, true, "full", true);
    assert_eq!(v["block"], 16);
}

#[test]
fn an_informer_thread_delivers_everything_to_a_decoding_handler() {
    let v = bench(&["--list", "--handler", "full", "--informer-thread"]);
    check(&v, false, "full", false);
    assert_eq!(v["informer_thread"], true);
}
