//! The options of the request being served, as admission webhooks see them in an
//! AdmissionReview's `options`: what the client sent in its query (`dryRun`, `fieldManager`,
//! `fieldValidation`, and for a delete `gracePeriodSeconds`, `propagationPolicy`,
//! `orphanDependents`) or a delete's `DeleteOptions` body (which kube takes instead of the
//! query), as kube-apiserver passes them on.
//!
//! Invariants: the options belong to the request whose handling recorded them (a task-local
//! scope around that request, as warnings have); outside a request there are none; a value is
//! passed on as the client wrote it (kube's options hold what was decoded, defaults unfilled).

use std::cell::RefCell;
use std::future::Future;

use serde_json::{Map, Value};

tokio::task_local! {
    static OPTIONS: RefCell<Map<String, Value>>;
}

/// Runs `f` with a scope for the options of its request.
pub(crate) async fn scope<T>(f: impl Future<Output = T>) -> T {
    OPTIONS.scope(RefCell::new(Map::new()), f).await
}

/// Records the grace period a deletion takes (a pod's own when the request gave none), as
/// kube's strategy writes it into the options admission sees.
pub(crate) fn set_grace_period(seconds: i64) {
    let _ = OPTIONS.try_with(|o| o.borrow_mut().insert("gracePeriodSeconds".into(), seconds.into()));
}

/// Records the options a request's query carries.
pub(crate) fn from_query(query: &[(String, String)], delete: bool) {
    let mut options = Map::new();
    for (k, v) in query {
        match k.as_str() {
            "dryRun" if !v.is_empty() => {
                let list = options.entry("dryRun").or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(l) = list {
                    l.push(v.clone().into());
                }
            }
            "fieldManager" | "fieldValidation" if !v.is_empty() && !delete => {
                options.insert(k.clone(), v.clone().into());
            }
            "propagationPolicy" if delete => {
                options.insert(k.clone(), v.clone().into());
            }
            "gracePeriodSeconds" if delete => {
                if let Ok(n) = v.parse::<i64>() {
                    options.insert(k.clone(), n.into());
                }
            }
            // kube's query booleans: the first value, false only as "0" or "false" (any case).
            "orphanDependents" if delete && !options.contains_key("orphanDependents") => {
                options.insert(k.clone(), crate::body::query_bool(v).into());
            }
            _ => {}
        }
    }
    let _ = OPTIONS.try_with(|o| *o.borrow_mut() = options);
}

/// Records the fields of a delete's `DeleteOptions` body, which kube takes instead of the
/// query's when there is one.
pub(crate) fn from_delete_body(body: &Value) {
    const FIELDS: [&str; 5] =
        ["gracePeriodSeconds", "preconditions", "propagationPolicy", "orphanDependents", "dryRun"];
    if !body.is_object() {
        return;
    }
    let _ = OPTIONS.try_with(|o| {
        let mut o = o.borrow_mut();
        o.clear();
        for f in FIELDS {
            if let Some(v) = body.get(f).filter(|v| !v.is_null()) {
                o.insert(f.into(), v.clone());
            }
        }
    });
}

/// The options of the current request (empty outside one).
pub(crate) fn current() -> Map<String, Value> {
    OPTIONS.try_with(|o| o.borrow().clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[tokio::test]
    async fn a_request_s_options_are_its_own() {
        let write = scope(async {
            from_query(&q(&[("fieldManager", "kubectl-create"), ("dryRun", "All"), ("pretty", "true")]), false);
            current()
        })
        .await;
        assert_eq!(Value::Object(write), serde_json::json!({"fieldManager": "kubectl-create", "dryRun": ["All"]}));
        let delete = scope(async {
            from_query(&q(&[("gracePeriodSeconds", "0"), ("fieldManager", "x")]), true);
            from_delete_body(&serde_json::json!({"kind": "DeleteOptions", "propagationPolicy": "Foreground"}));
            current()
        })
        .await;
        assert_eq!(Value::Object(delete), serde_json::json!({"propagationPolicy": "Foreground"}));
        assert!(current().is_empty());
    }
}
