//! CertificateSigningRequests over HTTP, as kube-apiserver keeps them: the requester's identity
//! filled by the server, approval through `approval` (kubectl's `certificate approve|deny`), the
//! signer's certificate through `status`, kube's validation, and, under RBAC, approving and
//! signing only for the signers a user may approve or sign for.

mod common;

use base64::Engine;
use common::*;
use serde_json::{Value, json};

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A PEM certificate request and a PEM certificate (self-signed) of a new key.
fn request_and_certificate() -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["client.example.com".to_string()]).unwrap();
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    let certificate = params.self_signed(&key).unwrap().pem();
    (request, certificate)
}

fn csr(name: &str, signer: &str) -> Value {
    let (request, _) = request_and_certificate();
    json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
           "spec": {"request": b64(&request), "signerName": signer, "usages": ["client auth"]}})
}

fn condition_types(v: &Value) -> Vec<String> {
    v["status"]["conditions"]
        .as_array()
        .map(|l| l.iter().map(|c| c["type"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_request_is_approved_through_approval_and_signed_through_status() {
    let s = server().await;
    let admin = Client::new(&s);
    let alice = admin.clone().impersonating("alice");
    let mut body = csr("client", "example.com/signer");
    // What the requester says of itself, and a pre-approval, are not the client's to send.
    body["spec"]["username"] = json!("mallory");
    body["spec"]["groups"] = json!(["system:masters"]);
    body["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
    let r = alice.post(CSRS, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["username"], "alice");
    assert_eq!(r.body["spec"]["groups"], json!(["system:authenticated"]));
    assert_eq!(r.body["status"], json!({}));
    let path = format!("{CSRS}/client");

    // The resource itself changes only metadata.
    let mut changed = r.body.clone();
    changed["spec"]["signerName"] = json!("example.com/other");
    changed["metadata"]["labels"] = json!({"team": "a"});
    let r = admin.put(&path, &changed).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        (r.body["spec"]["signerName"].as_str(), r.body["metadata"]["labels"]["team"].as_str()),
        (Some("example.com/signer"), Some("a"))
    );

    // Approval: the conditions, stamped.
    let mut approving = r.body.clone();
    approving["status"]["conditions"] =
        json!([{"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]);
    let r = admin.put(&format!("{path}/approval"), &approving).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let c = &r.body["status"]["conditions"][0];
    assert_eq!(
        (c["type"].as_str(), c["status"].as_str(), c["reason"].as_str()),
        (Some("Approved"), Some("True"), Some("Test"))
    );
    assert!(c["lastUpdateTime"].is_string() && c["lastTransitionTime"].is_string());

    // The signer's certificate, through status; the approval stays as it was whatever the body
    // says of it, and status writes may not add one.
    let (_, certificate) = request_and_certificate();
    let mut signed = r.body.clone();
    signed["status"]["certificate"] = json!(b64(&certificate));
    signed["status"]["conditions"][0]["reason"] = json!("Rewritten");
    let r = admin.put(&format!("{path}/status"), &signed).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["certificate"], b64(&certificate));
    assert_eq!(condition_types(&r.body), ["Approved"]);
    assert_eq!(r.body["status"]["conditions"][0]["reason"], "Test");
    // Status writes may not approve.
    let pending = admin.post(CSRS, &csr("pending", "example.com/signer")).await.body;
    let mut adding = pending.clone();
    adding["status"]["conditions"] = json!([{"type": "Approved", "status": "True"}]);
    let r2 = admin.put(&format!("{CSRS}/pending/status"), &adding).await;
    assert_eq!(r2.code, 422, "{}", r2.body);
    assert_eq!(
        r2.body["message"],
        "CertificateSigningRequest.certificates.k8s.io \"pending\" is invalid: status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
    );
    let table = admin.get_accepting(&path, "application/json;as=Table;v=v1;g=meta.k8s.io").await.body;
    assert_eq!(
        table["rows"][0]["cells"].as_array().unwrap()[2..],
        [json!("example.com/signer"), json!("alice"), json!("<none>"), json!("Approved,Issued")]
    );
    let (_, other) = request_and_certificate();
    let mut resigned = r.body.clone();
    resigned["status"]["certificate"] = json!(b64(&other));
    let r = admin.put(&format!("{path}/status"), &resigned).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "CertificateSigningRequest.certificates.k8s.io \"client\" is invalid: status.certificate: Forbidden: updates may not modify existing certificate content"
    );
    let mut unapproving = admin.get(&path).await.body;
    unapproving["status"]["conditions"] = json!([]);
    let r = admin.put(&format!("{path}/approval"), &unapproving).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "CertificateSigningRequest.certificates.k8s.io \"client\" is invalid: status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
    );
    let discovery = admin.get("/apis/certificates.k8s.io/v1").await.body;
    let names: Vec<&str> =
        discovery["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"]
    );
}

#[tokio::test]
async fn requests_are_validated_as_kube_validates_them() {
    let s = server().await;
    let c = Client::new(&s);
    let mut bad = csr("bad", "not-a-signer");
    bad["spec"]["request"] = json!(b64("garbage"));
    bad["spec"]["usages"] = json!(["client auth", "flying", "client auth"]);
    bad["spec"]["expirationSeconds"] = json!(60);
    let r = c.post(CSRS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let causes: Vec<String> = r.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}: {}", c["field"].as_str().unwrap(), c["message"].as_str().unwrap()))
        .collect();
    assert_eq!(
        causes[0],
        format!("spec.request: Invalid value: \"{}\": PEM block type must be CERTIFICATE REQUEST", b64("garbage"))
    );
    assert!(
        causes[1]
            .starts_with("spec.usages[1]: Unsupported value: \"flying\": supported values: \"any\", \"cert sign\""),
        "{causes:?}"
    );
    assert_eq!(causes[2], "spec.usages[2]: Duplicate value: \"client auth\"");
    assert_eq!(
        causes[3],
        "spec.signerName: Invalid value: \"not-a-signer\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
    );
    assert_eq!(
        causes[4],
        "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)"
    );
    // Any name does (kubelet names its requests `node-csr-<digest>`), and a condition says its status.
    let mut kubelet = csr("node-csr-Ab_C9-x", "example.com/s");
    kubelet["status"] = json!({});
    assert_eq!(c.post(CSRS, &kubelet).await.code, 201);
    let mut approving = c.get(&format!("{CSRS}/node-csr-Ab_C9-x")).await.body;
    approving["status"]["conditions"] = json!([{"type": "Approved"}]);
    let r = c.put(&format!("{CSRS}/node-csr-Ab_C9-x/approval"), &approving).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().ends_with("status.conditions[0].status: Required value"), "{}", r.body);
    let mut unused = csr("unused", "example.com/s");
    unused["spec"]["usages"] = json!([]);
    let r = c.post(CSRS, &unused).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "CertificateSigningRequest.certificates.k8s.io \"unused\" is invalid: spec.usages: Required value"
    );
}

#[tokio::test]
async fn the_api_server_client_signer_is_not_asked_for_system_masters() {
    let s = server().await;
    let c = Client::new(&s);
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "me");
    params.distinguished_name.push(rcgen::DnType::OrganizationName, "system:masters");
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    let body = |name: &str, signer: &str| json!({"metadata": {"name": name}, "spec": {"request": b64(&request), "signerName": signer, "usages": ["client auth"]}});
    let r = c.post(CSRS, &body("root", "kubernetes.io/kube-apiserver-client")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "certificatesigningrequests.certificates.k8s.io \"root\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
    );
    // Another signer may be asked for it.
    assert_eq!(c.post(CSRS, &body("elsewhere", "example.com/signer")).await.code, 201);
}

#[tokio::test]
async fn kubectl_approves_and_denies() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        for name in ["to-approve", "to-deny"] {
            assert_eq!(c.post(CSRS, &csr(name, "example.com/signer")).await.code, 201);
        }
        let dir = tempdir("kubectl-csr");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["certificate", "approve", "to-approve"]).await;
        assert!(ok, "{bin}: {out}{err}");
        assert_eq!(out.trim(), "certificatesigningrequest.certificates.k8s.io/to-approve approved");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["certificate", "deny", "to-deny"]).await;
        assert!(ok, "{bin}: {out}{err}");
        let approved = c.get(&format!("{CSRS}/to-approve")).await.body;
        assert_eq!(approved["status"]["conditions"][0]["reason"], "KubectlApprove", "{bin}");
        let denied = c.get(&format!("{CSRS}/to-deny")).await.body;
        assert_eq!(
            (denied["status"]["conditions"][0]["type"].as_str(), denied["status"]["conditions"][0]["reason"].as_str()),
            (Some("Denied"), Some("KubectlDeny"))
        );
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["get", "csr"]).await;
        assert!(ok && out.contains("to-approve"), "{bin}: {out}{err}");
        for name in ["to-approve", "to-deny"] {
            assert_eq!(c.delete(&format!("{CSRS}/{name}")).await.code, 200);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn under_rbac_approvers_and_signers_need_the_signer() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    assert_eq!(admin.post(CSRS, &csr("client", "example.com/signer")).await.code, 201);
    let role = |name: &str, rules: Value| json!({"metadata": {"name": name}, "rules": rules});
    let writes = json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"], "verbs": ["get", "update"]}]);
    assert_eq!(
        admin.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", &role("csr-writer", writes)).await.code,
        201
    );
    let binding = json!({"metadata": {"name": "csr-writer"}, "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "approver"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-writer"}});
    assert_eq!(admin.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", &binding).await.code, 201);
    // A consistent read: the cache that authorizes holds the binding from here on.
    assert_eq!(admin.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings").await.code, 200);
    let approver = admin.clone().impersonating("approver");
    let mut approving = approver.get(&format!("{CSRS}/client")).await.body;
    approving["status"]["conditions"] = json!([{"type": "Approved", "status": "True", "reason": "Test"}]);
    let r = approver.put(&format!("{CSRS}/client/approval"), &approving).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "certificatesigningrequests.certificates.k8s.io \"client\" is forbidden: user not permitted to approve requests with signerName \"example.com/signer\""
    );
    // `approve` on the signer's domain (`example.com/*`) is enough.
    let signers = json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["example.com/*"], "verbs": ["approve"]}]);
    assert_eq!(
        admin.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", &role("approve-example", signers)).await.code,
        201
    );
    let mut binding = binding.clone();
    binding["metadata"]["name"] = json!("approve-example");
    binding["roleRef"]["name"] = json!("approve-example");
    assert_eq!(admin.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", &binding).await.code, 201);
    // A consistent read: the cache that authorizes holds the binding from here on.
    assert_eq!(admin.get("/apis/rbac.authorization.k8s.io/v1/clusterroles").await.code, 200);
    let r = approver.put(&format!("{CSRS}/client/approval"), &approving).await;
    assert_eq!(r.code, 200, "{}", r.body);
    // Signing needs `sign`, which the approver lacks.
    let (_, certificate) = request_and_certificate();
    let mut signed = r.body.clone();
    signed["status"]["certificate"] = json!(b64(&certificate));
    let r = approver.put(&format!("{CSRS}/client/status"), &signed).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "certificatesigningrequests.certificates.k8s.io \"client\" is forbidden: user not permitted to sign requests with signerName \"example.com/signer\""
    );
}
