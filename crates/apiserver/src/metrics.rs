//! The server's metrics at `/metrics`, named, labelled and bucketed as kube-apiserver's, so
//! that the dashboards and alerts written for it read this server too:
//! - `apiserver_request_total` and `apiserver_request_duration_seconds`: every resource request
//!   by verb (`GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, `CONNECT`),
//!   dry run, group, version, resource, subresource, scope (`resource`, `namespace`,
//!   `cluster`), component and, for the total, the answer's code;
//! - `apiserver_longrunning_requests`: the watches (and connections) open now;
//! - `apiserver_current_inflight_requests`: the other requests in progress, `readOnly` or
//!   `mutating`;
//! - `apiserver_watch_events_total`: the events sent to watchers, bookmarks included, one per
//!   event per watcher;
//! - `apiserver_resource_objects` (and the older `apiserver_storage_objects`): the objects of
//!   each resource, read from the cache when the metrics are read.
//!
//! Invariants: a request is counted once, when it is over — a watch when its stream ends, so an
//! open watch is in the long-running gauge and not yet in the total; a request whose client left
//! before any answer is not counted, and leaves the gauges as it found them. Label values come
//! from the request line, as kube reads them (a verb kube does not know is `other`); only
//! requests that passed authentication and authorization are counted, as kube counts them.
//! The document is Prometheus' text format 0.0.4, as kube-apiserver serves it (labels sorted by
//! name, bucket bounds as Go writes them).

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::request_info::RequestInfo;

/// The media type of the document.
pub(crate) const MEDIA_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// kube-apiserver's request latency buckets, in seconds.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0,
    45.0, 60.0,
];

/// Where a request goes: the labels every request metric has besides its verb (and dry run).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Route {
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: String,
    component: String,
}

impl Route {
    /// The route's labels with `more`, sorted by name as client_golang writes them.
    fn encode<'a>(&'a self, more: &[(&'a str, &'a str)], encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        let mut pairs = vec![
            ("component", self.component.as_str()),
            ("group", self.group.as_str()),
            ("resource", self.resource.as_str()),
            ("scope", self.scope.as_str()),
            ("subresource", self.subresource.as_str()),
            ("version", self.version.as_str()),
        ];
        pairs.extend_from_slice(more);
        pairs.sort_unstable_by_key(|(name, _)| *name);
        pairs.as_slice().encode(encoder)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct DurationLabels {
    verb: String,
    dry_run: String,
    route: Route,
}

impl EncodeLabelSet for DurationLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        self.route.encode(&[("dry_run", &self.dry_run), ("verb", &self.verb)], encoder)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct RequestLabels {
    request: DurationLabels,
    code: String,
}

impl EncodeLabelSet for RequestLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        let r = &self.request;
        r.route.encode(&[("code", &self.code), ("dry_run", &r.dry_run), ("verb", &r.verb)], encoder)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct LongRunningLabels {
    verb: String,
    route: Route,
}

impl EncodeLabelSet for LongRunningLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        self.route.encode(&[("verb", &self.verb)], encoder)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    request_kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    group: String,
    resource: String,
    version: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupResourceLabels {
    group: String,
    resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StorageLabels {
    resource: String,
}

type Histograms = Family<DurationLabels, Histogram, fn() -> Histogram>;

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Histograms,
    long_running: Family<LongRunningLabels, Gauge>,
    in_flight: Family<KindLabels, Gauge>,
    watch_events: Family<ResourceLabels, Counter>,
    objects: Family<GroupResourceLabels, Gauge>,
    storage_objects: Family<StorageLabels, Gauge>,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::default();
        let durations: Histograms = Family::new_with_constructor(duration_histogram);
        let long_running = Family::default();
        let in_flight = Family::default();
        let watch_events = Family::default();
        let objects = Family::default();
        let storage_objects = Family::default();
        let apiserver = registry.sub_registry_with_prefix("apiserver");
        apiserver.register(
            "request",
            "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, \
             scope, component, and HTTP response code",
            requests.clone(),
        );
        apiserver.register(
            "request_duration_seconds",
            "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, \
             subresource, scope and component",
            durations.clone(),
        );
        apiserver.register(
            "longrunning_requests",
            "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, \
             resource, scope and component. Not all requests are tracked this way",
            long_running.clone(),
        );
        apiserver.register(
            "current_inflight_requests",
            "[STABLE] Number of requests in progress in this apiserver per request kind",
            in_flight.clone(),
        );
        apiserver.register("watch_events", "[ALPHA] Number of events sent in watch clients", watch_events.clone());
        apiserver.register(
            "resource_objects",
            "[ALPHA] Number of stored objects at the time of last check split by kind",
            objects.clone(),
        );
        apiserver.register(
            "storage_objects",
            "[STABLE] (Deprecated since 1.34.0) Number of stored objects at the time of last check split by kind. \
             In case of a fetching error, the value will be -1",
            storage_objects.clone(),
        );
        Metrics { registry, requests, durations, long_running, in_flight, watch_events, objects, storage_objects }
    }
}

impl Metrics {
    /// Starts the record of a request (None for a request that is not for a resource, which kube
    /// does not count). `content_type` tells a server-side apply from other patches.
    pub(crate) fn begin(
        self: &Arc<Self>,
        method: &str,
        info: &RequestInfo,
        query: &[(String, String)],
        content_type: Option<&str>,
    ) -> Option<RequestRecord> {
        if !info.resource_request {
            return None;
        }
        let scope = scope(info);
        let verb = verb(method, info, scope, content_type);
        let long_running = verb == "WATCH" || verb == "CONNECT";
        let read_only = matches!(info.verb.as_str(), "get" | "list" | "watch");
        let labels = DurationLabels {
            verb: verb.to_string(),
            dry_run: dry_run(query),
            route: Route {
                group: info.group.clone(),
                version: info.version.clone(),
                resource: info.resource.clone(),
                subresource: info.subresource.clone(),
                scope: scope.to_string(),
                component: "apiserver".to_string(),
            },
        };
        let gauge = if long_running {
            self.long_running
                .get_or_create(&LongRunningLabels { verb: labels.verb.clone(), route: labels.route.clone() })
        } else {
            let kind = if read_only { "readOnly" } else { "mutating" };
            self.in_flight.get_or_create(&KindLabels { request_kind: kind.to_string() })
        }
        .clone();
        gauge.inc();
        Some(RequestRecord { metrics: self.clone(), labels, started: Instant::now(), gauge, code: None })
    }

    /// The counter of the events sent to watchers of a resource.
    pub(crate) fn watch_events(&self, group: &str, version: &str, resource: &str) -> Counter {
        let labels = ResourceLabels { group: group.into(), resource: resource.into(), version: version.into() };
        self.watch_events.get_or_create(&labels).clone()
    }

    /// The document, with the object counts `counts` (group, resource, objects).
    pub(crate) fn encode(&self, counts: impl IntoIterator<Item = (String, String, usize)>) -> String {
        self.objects.clear();
        self.storage_objects.clear();
        for (group, resource, n) in counts {
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            let qualified = if group.is_empty() { resource.clone() } else { format!("{resource}.{group}") };
            self.storage_objects.get_or_create(&StorageLabels { resource: qualified }).set(n);
            self.objects.get_or_create(&GroupResourceLabels { group, resource }).set(n);
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        let mut doc = text_format(&out);
        crate::process_metrics::encode(&mut doc);
        doc
    }
}

/// OpenMetrics text in Prometheus' text format 0.0.4: a counter's family is named with its
/// `_total`, there is no `# EOF`, and values are written as Go writes a float64 (`1e+06`).
fn text_format(open_metrics: &str) -> String {
    let mut out = String::with_capacity(open_metrics.len());
    let mut counters = std::collections::HashSet::new();
    for line in open_metrics.lines() {
        if let Some(name) = line.strip_prefix("# TYPE ").and_then(|t| t.strip_suffix(" counter")) {
            counters.insert(name.to_string());
        }
    }
    for line in open_metrics.lines() {
        if line == "# EOF" {
            continue;
        }
        let named = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters.contains(name).then(|| format!("{p}{name}_total {tail}"))
        });
        let line = named.as_deref().unwrap_or(line);
        match bucket_bound(line) {
            // Go writes `le` last, and a bound as the shortest decimal (`1`, not `1.0`).
            Some((name, bound, labels, value)) => {
                let finite = bound.parse::<f64>().ok().filter(|b| b.is_finite());
                let go = finite.map_or_else(|| bound.to_string(), |b| b.to_string());
                let sep = if labels.is_empty() { "" } else { "," };
                out.push_str(&format!("{name}{{{labels}{sep}le=\"{go}\"}}"));
                out.push_str(&go_value(value));
            }
            None if line.starts_with('#') => out.push_str(line),
            None => out.push_str(&go_value(line)),
        }
        out.push('\n');
    }
    out
}

/// A sample (or what follows a sample's labels) with its value as Go writes a float64.
fn go_value(sample: &str) -> String {
    let Some((head, value)) = sample.rsplit_once(' ') else { return sample.to_string() };
    match value.parse::<f64>() {
        Ok(v) => format!("{head} {}", crate::go_fmt::float(v)),
        Err(_) => sample.to_string(),
    }
}

/// One request being served: counted when it is dropped, with the code of its answer.
pub struct RequestRecord {
    metrics: Arc<Metrics>,
    labels: DurationLabels,
    started: Instant,
    gauge: Gauge,
    code: Option<u16>,
}

impl RequestRecord {
    /// Sets the code of the answer.
    pub(crate) fn answered(&mut self, code: u16) {
        self.code = Some(code);
    }
}

impl Drop for RequestRecord {
    fn drop(&mut self) {
        self.gauge.dec();
        let Some(code) = self.code else { return };
        let total = RequestLabels { request: self.labels.clone(), code: code.to_string() };
        self.metrics.requests.get_or_create(&total).inc();
        self.metrics.durations.get_or_create(&self.labels).observe(self.started.elapsed().as_secs_f64());
    }
}

/// A histogram bucket's line as prometheus-client writes it (`name{le="b",labels} value`): its
/// name, bound, other labels and what follows them.
fn bucket_bound(line: &str) -> Option<(&str, &str, &str, &str)> {
    if line.starts_with('#') {
        return None;
    }
    let (name, rest) = line.split_once("{le=\"")?;
    let (bound, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(',').unwrap_or(rest);
    let close = rest.rfind('}')?;
    Some((name, bound, &rest[..close], &rest[close + 1..]))
}

/// kube's scope of the route a request takes: `CleanScope` of the request, but for a list or
/// watch, whose name a field selector gives (the route is the collection's).
fn scope(info: &RequestInfo) -> &'static str {
    let named = !info.name.is_empty() && !matches!(info.verb.as_str(), "list" | "watch");
    if named || info.verb == "create" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else if info.resource_request {
        "cluster"
    } else {
        ""
    }
}

/// kube's reported verb: the method, `LIST` for a GET of a collection, `WATCH`, `APPLY` for a
/// server-side apply, `CONNECT` for a connection; `other` for a method kube does not know.
fn verb(method: &str, info: &RequestInfo, scope: &str, content_type: Option<&str>) -> &'static str {
    if info.verb == "watch" {
        return "WATCH";
    }
    if crate::request_info::CONNECT_SUBRESOURCES.contains(&info.subresource.as_str()) {
        return "CONNECT";
    }
    match method {
        "GET" | "HEAD" if scope != "resource" && !scope.is_empty() => "LIST",
        "GET" | "HEAD" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" if content_type.is_some_and(|t| t.starts_with("application/apply-patch")) => "APPLY",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        _ => "other",
    }
}

/// kube's dry run label: the distinct values sorted and joined, "" without, `invalid` for any
/// value but `All`.
fn dry_run(query: &[(String, String)]) -> String {
    let mut values: Vec<&str> = query.iter().filter(|(k, _)| k == "dryRun").map(|(_, v)| v.as_str()).collect();
    if values.iter().any(|v| *v != "All") {
        return "invalid".into();
    }
    values.dedup();
    values.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, path: &str, query: &[(&str, &str)]) -> (RequestInfo, Vec<(String, String)>) {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let query: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        (crate::request_info::read(method, path, &segs, &query), query)
    }

    #[test]
    fn verbs_and_scopes_are_kubes() {
        let cases = [
            ("GET", "/api/v1/namespaces/a/pods", &[][..], None, "LIST", "namespace"),
            ("GET", "/api/v1/pods", &[][..], None, "LIST", "cluster"),
            ("GET", "/api/v1/namespaces/a/pods/p", &[][..], None, "GET", "resource"),
            ("GET", "/api/v1/pods", &[("watch", "1")][..], None, "WATCH", "cluster"),
            ("GET", "/api/v1/watch/namespaces/a/pods", &[][..], None, "WATCH", "namespace"),
            ("POST", "/api/v1/namespaces/a/pods", &[][..], None, "POST", "resource"),
            (
                "PATCH",
                "/api/v1/namespaces/a/pods/p",
                &[][..],
                Some("application/apply-patch+yaml"),
                "APPLY",
                "resource",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/a/pods/p/status",
                &[][..],
                Some("application/merge-patch+json"),
                "PATCH",
                "resource",
            ),
            ("DELETE", "/api/v1/namespaces/a/pods", &[][..], None, "DELETE", "namespace"),
            ("POST", "/api/v1/namespaces/a/pods/p/exec", &[][..], None, "CONNECT", "resource"),
            ("GET", "/api/v1/namespaces/a/pods/p/log", &[][..], None, "CONNECT", "resource"),
            (
                "GET",
                "/api/v1/nodes",
                &[("fieldSelector", "metadata.name=n"), ("watch", "1")][..],
                None,
                "WATCH",
                "cluster",
            ),
            (
                "GET",
                "/api/v1/namespaces/a/pods",
                &[("fieldSelector", "metadata.name=p")][..],
                None,
                "LIST",
                "namespace",
            ),
        ];
        for (method, path, query, ct, want_verb, want_scope) in cases {
            let (i, _) = info(method, path, query);
            let s = scope(&i);
            assert_eq!((verb(method, &i, s, ct), s), (want_verb, want_scope), "{method} {path}");
        }
        let q = |v: &[&str]| v.iter().map(|v| ("dryRun".to_string(), v.to_string())).collect::<Vec<_>>();
        assert_eq!(
            (dry_run(&q(&[])), dry_run(&q(&["All", "All"])), dry_run(&q(&["x"]))),
            ("".into(), "All".into(), "invalid".into())
        );
    }

    #[test]
    fn a_request_is_counted_once_it_is_over() {
        let m = Arc::new(Metrics::default());
        let (i, q) = info("GET", "/api/v1/namespaces/a/pods", &[("watch", "true")]);
        let mut watch = m.begin("GET", &i, &q, None).unwrap();
        watch.answered(200);
        let doc = m.encode([("".to_string(), "pods".to_string(), 3)]);
        assert!(doc.contains(
            "apiserver_longrunning_requests{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 1"
        ), "{doc}");
        assert!(!doc.contains("apiserver_request_total{"), "{doc}");
        assert!(doc.contains("apiserver_resource_objects{group=\"\",resource=\"pods\"} 3"), "{doc}");
        assert!(doc.contains("apiserver_storage_objects{resource=\"pods\"} 3"), "{doc}");
        drop(watch);
        let (i, q) = info("GET", "/api/v1/namespaces/a/pods/p", &[]);
        let mut get = m.begin("GET", &i, &q, None).unwrap();
        get.answered(404);
        drop(get);
        // A client that left before the answer is not counted.
        drop(m.begin("GET", &i, &q, None).unwrap());
        let doc = m.encode([]);
        assert!(doc.contains(
            "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 1"
        ), "{doc}");
        assert!(doc.contains("{code=\"404\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"} 1"), "{doc}");
        assert!(doc.contains("apiserver_longrunning_requests{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",version=\"v1\"} 0"), "{doc}");
        assert!(doc.contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 0"), "{doc}");
        assert!(!doc.contains("apiserver_resource_objects{"), "{doc}");
        // Prometheus' text format: counters' families carry `_total`, no `# EOF`.
        assert!(doc.contains("\n# TYPE apiserver_request_total counter\n"), "{doc}");
        assert!(doc.contains("\n# TYPE apiserver_request_duration_seconds histogram\n"), "{doc}");
        assert!(!doc.contains("# EOF"), "{doc}");
        // Bounds as Go writes them.
        assert!(doc.contains("verb=\"GET\",version=\"v1\",le=\"1\"} 1\n"), "{doc}");
        assert!(doc.contains(",le=\"0.005\"} 1\n") && doc.contains(",le=\"+Inf\"} 1\n"), "{doc}");
    }
}
