//! `informer watch RESOURCE`: any resource the server serves (found through discovery, custom
//! resources included), watched by a shared informer whose notifications are printed as they
//! come, like `kubectl get -w`: one line per add, update or delete with its resourceVersion, or
//! with `-o json` one JSON document per line, `{"type":"ADDED|MODIFIED|DELETED","object":{...}}`
//! with the object exactly as the server sent it, for scripts.
//!
//! Invariant: every line is flushed as it is written; the command ends on Ctrl-C or after
//! `--duration`, having stopped the informer.

use std::io::Write;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use futures_util::StreamExt;
use informer::prelude::*;
use informer::{InformerOptions, ReflectorOptions};
use informer_apiserver::ApiServer;
use kube::core::DynamicObject;

/// How `informer watch` prints.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Output {
    /// One line per change: event, key, resourceVersion.
    Text,
    /// One JSON document per line: `{"type":..,"object":..}`.
    Json,
}

/// Options of `informer watch`.
#[derive(Args)]
pub struct WatchArgs {
    /// The resource, as kubectl names it: plural, singular, short name or kind, optionally
    /// with its group (`widgets.example.com`).
    resource: String,
    /// Namespace (default: all namespaces).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Label selector.
    #[arg(long, short = 'l')]
    selector: Option<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value = "text")]
    output: Output,
    /// Watch a real cluster instead of an embedded API server with sample objects.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Stop after this many seconds.
    #[arg(long)]
    duration: Option<u64>,
}

/// Runs the watch.
pub async fn run(args: WatchArgs) -> Result<bool> {
    let mut server = None;
    let client = match &args.kubeconfig {
        Some(p) => crate::client::from_file(p).await?,
        None => {
            let s = ApiServer::builder().start().await.context("cannot start the embedded API server")?;
            eprintln!("watching the embedded API server at {} (use --kubeconfig for a real cluster)", s.url());
            let c = crate::client::from_yaml(&s.kubeconfig_yaml()).await?;
            server = Some(s);
            c
        }
    };
    let found = crate::discover::resolve(&client, &args.resource).await?;
    if let Some(s) = &server
        && found.resource.plural == "pods"
    {
        for i in 0..3 {
            let _ = s.create("pods", serde_json::json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":format!("sample-{i}"),"namespace":"default","labels":{"app":"sample"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}})).await;
        }
    }
    let ns = if found.namespaced { args.namespace.as_deref() } else { None };
    let mut lw = KubeListerWatcher::<DynamicObject>::new_with(client, ns, &found.resource);
    if let Some(sel) = &args.selector {
        lw = lw.label_selector(sel.clone());
    }
    let name = format!("watch-{}", found.resource.plural);
    let opts = InformerOptions::default().name(name.clone()).reflector(ReflectorOptions { name, ..Default::default() });
    let informer = SharedIndexInformer::<DynamicObject>::with_options(lw, opts);
    let mut notifications = informer.subscribe()?;
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let stop = async {
        match args.duration {
            Some(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs(d)) => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    tokio::pin!(stop);
    let mut out = std::io::stdout().lock();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            n = notifications.next() => match n {
                Some(n) => print(&mut out, &n, args.output).context("cannot write to stdout")?,
                None => break,
            },
        }
    }
    drop(out);
    cancel.cancel();
    let _ = task.await;
    drop(server);
    Ok(true)
}

/// Writes one notification.
fn print(out: &mut impl Write, n: &Notification<DynamicObject>, format: Output) -> std::io::Result<()> {
    let (event, obj) = match n {
        Notification::Add { obj, .. } => ("ADDED", Some(obj)),
        Notification::Update { new, .. } => ("MODIFIED", Some(new)),
        Notification::Delete(d) => ("DELETED", d.object()),
    };
    match (format, obj) {
        (Output::Text, Some(o)) => {
            writeln!(out, "{event:<8} {:<50} rv={}", o.key(), o.resource_version().unwrap_or("-"))
        }
        (Output::Text, None) => writeln!(out, "{event:<8} {:<50} (final state unknown)", n.key()),
        (Output::Json, Some(o)) => {
            write!(out, "{{\"type\":\"{event}\",\"object\":")?;
            out.write_all(&o.raw_json())?;
            writeln!(out, "}}")
        }
        // A deletion seen only through a relist, with no state known.
        (Output::Json, None) => writeln!(out, "{}", serde_json::json!({"type": event, "key": n.key().as_str()})),
    }?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(json: &str) -> informer::Object<DynamicObject> {
        informer::Object::from_json(json).unwrap()
    }

    #[test]
    fn json_lines_carry_the_object_as_received() {
        let raw = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns","resourceVersion":"7"},"spec":{"size":3}}"#;
        let mut out = Vec::new();
        print(&mut out, &Notification::Add { obj: obj(raw), is_in_initial_list: true }, Output::Json).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), format!("{{\"type\":\"ADDED\",\"object\":{raw}}}\n"));
        let mut out = Vec::new();
        print(&mut out, &Notification::Update { old: obj(raw), new: obj(raw) }, Output::Text).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap().split_whitespace().collect::<Vec<_>>(),
            ["MODIFIED", "ns/w", "rv=7"]
        );
        let gone = informer::DeletedObject::FinalStateUnknown(informer::Tombstone {
            key: informer::ObjectKey::parse("ns/w").unwrap(),
            last_known: None,
        });
        let mut out = Vec::new();
        print(&mut out, &Notification::Delete(gone), Output::Json).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v, serde_json::json!({"type": "DELETED", "key": "ns/w"}));
    }
}
