//! `informer serve --data-dir`: a write is on disk before it is acknowledged. The server runs as a
//! child process and is killed with SIGKILL while 16 clients write over HTTP; restarted on the
//! same directory it must have every acknowledged write (creations and updates), nothing written
//! half, the revision counter, and the watch history (a watch from before the crash resumes
//! without a relist).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use common::{Serve, client, scratch};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use parking_lot::Mutex;
use serde_json::json;

/// What the clients know: per name, every value they tried to write, and the acknowledged
/// writes (resourceVersion, value).
#[derive(Default, Clone)]
struct Ledger {
    tried: HashMap<String, Vec<String>>,
    acked: HashMap<String, Vec<(u64, String)>>,
}

fn cm(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"}, "data": {"v": value}})).unwrap()
}

/// Writes until the task is aborted: creations, and every third write an update of an object
/// this writer created.
async fn writer(api: Api<ConfigMap>, id: usize, ledger: Arc<Mutex<Ledger>>, acks: tokio::sync::watch::Sender<usize>) {
    let mut mine: Vec<(String, String)> = Vec::new();
    for n in 0.. {
        let update = n % 3 == 2 && !mine.is_empty();
        let (name, value) = if update {
            let (name, _) = mine[n % mine.len()].clone();
            (name, format!("{id}-{n}-updated"))
        } else {
            (format!("w{id:02}-{n:05}"), format!("{id}-{n}"))
        };
        ledger.lock().tried.entry(name.clone()).or_default().push(value.clone());
        let r = if update {
            let rv = mine.iter().find(|(m, _)| *m == name).map(|(_, rv)| rv.clone());
            let mut obj = cm(&name, &value);
            obj.metadata.resource_version = rv;
            api.replace(&name, &PostParams::default(), &obj).await
        } else {
            api.create(&PostParams::default(), &cm(&name, &value)).await
        };
        match r {
            Ok(o) => {
                let rv = o.metadata.resource_version.unwrap();
                ledger.lock().acked.entry(name.clone()).or_default().push((rv.parse().unwrap(), value));
                match mine.iter_mut().find(|(m, _)| *m == name) {
                    Some(slot) => slot.1 = rv,
                    None => mine.push((name, rv)),
                }
                acks.send_modify(|a| *a += 1);
            }
            // The server is gone (killed): this writer is done.
            Err(_) => return,
        }
    }
}

/// Checks the restarted server against the ledger; returns the highest acknowledged revision.
async fn check(api: &Api<ConfigMap>, ledger: &Ledger) -> u64 {
    let listed = api.list(&ListParams::default()).await.unwrap();
    let stored: BTreeMap<String, (u64, String)> = listed
        .items
        .into_iter()
        .map(|o| {
            let rv = o.metadata.resource_version.unwrap().parse().unwrap();
            (o.metadata.name.unwrap(), (rv, o.data.unwrap_or_default().get("v").cloned().unwrap_or_default()))
        })
        .collect();
    let mut max = 0;
    for (name, acked) in &ledger.acked {
        let (last_rv, last_value) = acked.last().unwrap();
        max = max.max(*last_rv);
        let Some((rv, value)) = stored.get(name) else { panic!("acknowledged write of {name} lost") };
        assert!(rv >= last_rv, "{name}: stored at {rv}, acknowledged at {last_rv}");
        if rv == last_rv {
            assert_eq!(value, last_value, "{name}: the acknowledged value");
        }
    }
    for (name, (_, value)) in &stored {
        let tried = ledger.tried.get(name).unwrap_or_else(|| panic!("{name} was never written"));
        assert!(tried.contains(value), "{name}: {value:?} was never written (a half-applied write)");
    }
    max
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loses_no_acknowledged_write() {
    let dir = scratch("durable");
    let data = dir.to_str().unwrap().to_string();
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut watch_from: Option<u64> = None;
    // Writes tried and never acknowledged (in flight when the server died).
    let unacked = |l: &Ledger| -> usize {
        l.tried.values().map(Vec::len).sum::<usize>() - l.acked.values().map(Vec::len).sum::<usize>()
    };
    let mut unacked_earlier = 0;
    for round in 0..3 {
        let mut server = Serve::start(&["--data-dir", &data]);
        let api: Api<ConfigMap> = Api::namespaced(client(&server.url), "default");
        if round > 0 {
            let snapshot = ledger.lock().clone();
            let max = check(&api, &snapshot).await;
            // The revision counter goes on.
            let o = api.create(&PostParams::default(), &cm(&format!("probe-{round}"), "p")).await.unwrap();
            let rv: u64 = o.metadata.resource_version.clone().unwrap().parse().unwrap();
            assert!(rv > max, "new revision {rv} after {max}");
            {
                let mut l = ledger.lock();
                l.tried.entry(format!("probe-{round}")).or_default().push("p".into());
                l.acked.entry(format!("probe-{round}")).or_default().push((rv, "p".into()));
            }
            // A watch from a revision taken before the crash resumes: the history was kept.
            if let Some(from) = watch_from {
                use futures_util::StreamExt;
                let wp = WatchParams::default().timeout(10);
                let mut w = api.watch(&wp, &from.to_string()).await.unwrap().boxed();
                match w.next().await {
                    Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                        let erv: u64 = o.metadata.resource_version.unwrap().parse().unwrap();
                        assert!(erv > from, "replayed from {from}: {erv}");
                    }
                    other => panic!("a watch from {from} after the restart: {other:?}"),
                }
            }
        }
        let (acks, mut acks_rx) = tokio::sync::watch::channel(0usize);
        let writers: Vec<_> = (0..16)
            .map(|id| tokio::spawn(writer(api.clone(), id + 16 * round, ledger.clone(), acks.clone())))
            .collect();
        // Kill mid-stream, with writes in flight, after 300 acknowledgements.
        tokio::time::timeout(Duration::from_secs(60), acks_rx.wait_for(|n| *n >= 300)).await.unwrap().unwrap();
        if watch_from.is_none() {
            watch_from = ledger.lock().acked.values().flatten().map(|(rv, _)| *rv).min();
        }
        server.kill();
        for w in writers {
            let _ =
                tokio::time::timeout(Duration::from_secs(30), w).await.expect("writers stop when the server is gone");
        }
        // Writers stop only on a failed write: one never acknowledged was in flight at the kill.
        let now = unacked(&ledger.lock());
        assert!(now > unacked_earlier, "round {round}: the kill came with writes in flight");
        unacked_earlier = now;
    }
    let server = Serve::start(&["--data-dir", &data]);
    let api: Api<ConfigMap> = Api::namespaced(client(&server.url), "default");
    let snapshot = ledger.lock().clone();
    check(&api, &snapshot).await;
    std::fs::remove_dir_all(&dir).ok();
}
