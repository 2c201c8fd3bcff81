//! core/v1 Endpoints and discovery.k8s.io/v1 EndpointSlices over HTTP, as kube-apiserver v1.35
//! answers them: kube's refusals in its words, warnings for lenient addresses and for the
//! deprecated kind, an address type that never changes, port names and protocols defaulted,
//! `deprecatedTopology` not kept, and what kubectl shows.

mod common;

use common::*;
use serde_json::{Value, json};

const ENDPOINTS: &str = "/api/v1/namespaces/default/endpoints";
const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
const DEPRECATED: &str = "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"";

fn warnings(r: &Resp) -> Vec<String> {
    r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect()
}

fn slice(name: &str, kind: &str, endpoints: Value) -> Value {
    json!({"metadata": {"name": name}, "addressType": kind, "endpoints": endpoints})
}

#[tokio::test]
async fn endpoints_are_refused_in_kubes_words_and_warned_about() {
    let s = server().await;
    let c = Client::new(&s);
    let bad = json!({"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": "127.0.0.1"}, {"ip": "10.0.0.1", "hostname": "Web"}],
         "ports": [{"port": 80}, {"name": "b", "port": 70000, "protocol": "ICMP"}]},
    ]});
    let r = c.post(ENDPOINTS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["details"]["kind"], "Endpoints");
    assert_eq!(
        causes(&r),
        [
            "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "subsets[0].addresses[1].hostname: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "subsets[0].ports[0].name: Required value",
            "subsets[0].ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "subsets[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        ]
    );
    assert!(r.body["message"].as_str().unwrap().starts_with("Endpoints \"web\" is invalid: ["), "{}", r.body);
    assert_eq!(warnings(&r), [DEPRECATED], "the kind's deprecation, even on a refusal");

    // Lenient addresses pass, with kube's warnings after the kind's.
    let ok = json!({"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": "010.0.0.1"}], "notReadyAddresses": [{"ip": "2001:DB8::1"}], "ports": [{"port": 80}]},
    ]});
    let r = c.post(ENDPOINTS, &ok).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["subsets"][0]["ports"], json!([{"port": 80, "protocol": "TCP"}]));
    assert_eq!(
        warnings(&r),
        [
            DEPRECATED.to_string(),
            "299 - \"subsets[0].addresses[0].ip: non-standard IP address \\\"010.0.0.1\\\" will be considered invalid in a future Kubernetes release: use \\\"10.0.0.1\\\"\"".into(),
            "299 - \"subsets[0].notReadyAddresses[0].ip: IPv6 address \\\"2001:DB8::1\\\" should be in RFC 5952 canonical format (\\\"2001:db8::1\\\")\"".into(),
        ]
    );
    // Every request of the kind's routes carries its deprecation.
    assert_eq!(warnings(&c.get(ENDPOINTS).await), [DEPRECATED]);
    assert_eq!(warnings(&c.get(&format!("{ENDPOINTS}/nope")).await), [DEPRECATED]);
    // A path that is none of the kind's routes does not.
    let r = c.get(&format!("{ENDPOINTS}/web/status")).await;
    assert_eq!((r.code, warnings(&r)), (404, vec![]));

    // An update that leaves the subsets as stored is not judged on them again; one that
    // changes them is.
    let mut stored = c.get(&format!("{ENDPOINTS}/web")).await.body;
    stored["metadata"]["labels"] = json!({"a": "b"});
    let r = c.put(&format!("{ENDPOINTS}/web"), &stored).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let mut stored = r.body;
    stored["subsets"][0]["addresses"] = json!([{"ip": "0.0.0.0"}]);
    let r = c.put(&format!("{ENDPOINTS}/web"), &stored).await;
    assert_eq!(
        causes(&r),
        ["subsets[0].addresses[0].ip: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)"]
    );
}

#[tokio::test]
async fn endpoint_slices_are_refused_in_kubes_words_and_keep_their_address_type() {
    let s = server().await;
    let c = Client::new(&s);
    let mut bad = slice(
        "web",
        "IPv4",
        json!([
            {"addresses": ["10.0.0.1", "2001:db8::1"]},
            {"addresses": [], "hints": {"forZones": [{"name": "a"}, {"name": "a"}]}},
        ]),
    );
    bad["ports"] = json!([{"name": "http", "port": 80}, {"name": "http", "port": 81}]);
    let r = c.post(SLICES, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        (&r.body["details"]["group"], &r.body["details"]["kind"]),
        (&json!("discovery.k8s.io"), &json!("EndpointSlice"))
    );
    assert!(r.body["message"].as_str().unwrap().starts_with("EndpointSlice.discovery.k8s.io \"web\" is invalid: ["));
    assert_eq!(
        causes(&r),
        [
            "ports[1].name: Duplicate value: \"http\"",
            "endpoints[0].addresses: Invalid value: \"2001:db8::1\": must be an IPv4 address",
            "endpoints[1].addresses: Required value: must contain at least 1 address",
            "endpoints[1].hints.forZones[1].name: Duplicate value: \"a\"",
        ]
    );
    let r = c.post(SLICES, &json!({"metadata": {"name": "web"}, "endpoints": []})).await;
    assert_eq!(causes(&r), ["addressType: Required value"]);

    // Defaults and what v1 does not keep.
    let mut good = slice(
        "web",
        "IPv4",
        json!([
            {"addresses": ["10.0.0.1"], "deprecatedTopology": {"kubernetes.io/hostname": "node-a"}},
        ]),
    );
    good["ports"] = json!([{"port": 80}]);
    let r = c.post(SLICES, &good).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    assert_eq!(r.body["ports"], json!([{"name": "", "port": 80, "protocol": "TCP"}]));
    assert_eq!(r.body["endpoints"], json!([{"addresses": ["10.0.0.1"], "conditions": {}}]));
    assert_eq!(r.body["metadata"]["generation"], 1);

    // The address type never changes.
    let mut changed = r.body.clone();
    changed["addressType"] = json!("IPv6");
    changed["endpoints"] = json!([{"addresses": ["2001:db8::1"]}]);
    let r = c.put(&format!("{SLICES}/web"), &changed).await;
    assert_eq!(causes(&r), ["addressType: Invalid value: \"IPv6\": field is immutable"]);

    // FQDN slices are deprecated, at their create.
    let r = c.post(SLICES, &slice("names", "FQDN", json!([{"addresses": ["web.example.com"]}]))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(warnings(&r), ["299 - \"spec.addressType: FQDN endpoints are deprecated\""]);
    let r = c.post(SLICES, &slice("short", "FQDN", json!([{"addresses": ["web"]}]))).await;
    assert_eq!(
        causes(&r),
        [
            "endpoints[0].addresses[0]: Invalid value: \"web\": should be a domain with at least two segments separated by dots"
        ]
    );
}

#[tokio::test]
async fn kubectl_warns_of_the_deprecated_kind() {
    let s = server().await;
    let c = Client::new(&s);
    let ok =
        json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]});
    assert_eq!(c.post(ENDPOINTS, &ok).await.code, 201);
    let dir = common::tools::tempdir("endpoints");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = common::tools::kubectl_versions().last().unwrap().clone();
    let (ok, out, err) = common::tools::kubectl_bin(&bin, &kc, &dir.join("cache"), &["get", "endpoints", "web"]).await;
    assert!(ok, "{err}");
    assert_eq!(err.trim(), "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice");
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..2], ["web", "10.0.0.1:80"]);
}
