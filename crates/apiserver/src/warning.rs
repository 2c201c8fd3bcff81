//! Warnings for the client (`Warning: 299 - "…"` response headers), recorded anywhere while a
//! request is served, as kube-apiserver's warning recorder does.
//!
//! Invariants: warnings belong to the request whose handling recorded them (a task-local
//! scope around that request); recording outside a request's scope does nothing; each warning
//! becomes one header, in the order recorded, duplicates dropped.

use std::cell::RefCell;
use std::future::Future;

use http::{HeaderValue, Response};

tokio::task_local! {
    static WARNINGS: RefCell<Vec<String>>;
}

/// Records a warning for the current request.
pub(crate) fn record(text: impl Into<String>) {
    let text = text.into();
    let _ = WARNINGS.try_with(|w| {
        let mut w = w.borrow_mut();
        if !w.contains(&text) {
            w.push(text);
        }
    });
}

/// Runs `f` collecting the warnings it records.
pub(crate) async fn collect<T>(f: impl Future<Output = T>) -> (T, Vec<String>) {
    WARNINGS
        .scope(RefCell::new(Vec::new()), async {
            let out = f.await;
            (out, WARNINGS.with(|w| w.take()))
        })
        .await
}

/// Adds the warnings to a response as `Warning: 299 - "<text>"` headers.
pub(crate) fn attach<B>(r: &mut Response<B>, warnings: Vec<String>) {
    for w in warnings {
        let quoted = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&quoted) {
            r.headers_mut().append(http::header::WARNING, v);
        }
    }
}
