//! Service account tokens over HTTP, as kube-apiserver issues and checks them: a service
//! account's `token` subresource (defaults, kube's 422s and 404, tokens bound to a pod), requests
//! made with a token acting as its service account (refused once the account or the bound pod
//! is gone, and where the server requires its own token), `tokenreviews` (user, extra and
//! audiences), a durable server's tokens outliving a restart, `kubectl create token` and
//! kube-rs's `create_token_request`, and the issuer's discovery document and key set.

mod common;

use common::*;
use informer_apiserver::service_account_token::ISSUER;
use serde_json::{Value, json};

const ACCOUNTS: &str = "/api/v1/namespaces/default/serviceaccounts";
const REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const WHOAMI: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

async fn account(c: &Client, name: &str) -> Value {
    let r = c.post(ACCOUNTS, &json!({"metadata": {"name": name}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    r.body
}

async fn token_for(c: &Client, name: &str, request: &Value) -> Resp {
    c.post(&format!("{ACCOUNTS}/{name}/token"), request).await
}

/// Who a request with `token` acts as (its SelfSubjectReview), or the refusal's code.
async fn whoami(c: &Client, token: &str) -> Result<Value, u16> {
    let as_token = c.clone().with_token(token);
    let r =
        as_token.post(WHOAMI, &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})).await;
    if r.code == 201 { Ok(r.body["status"]["userInfo"].clone()) } else { Err(r.code) }
}

/// A consistent read of `path`: from here on the server's cache, which tokens are checked
/// against (as kube's authenticator reads its informers), holds every write made before it.
async fn settled(c: &Client, path: &str) {
    assert_eq!(c.get(path).await.code, 200);
}

fn claims_of(token: &str) -> Value {
    use base64::Engine;
    let claims = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap()
}

fn jti_of(token: &str) -> String {
    claims_of(token)["jti"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_token_acts_as_its_service_account_while_it_exists() {
    let s = server().await;
    let c = Client::new(&s);
    let sa = account(&c, "builder").await;
    let r = token_for(&c, "builder", &json!({})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        (r.body["kind"].as_str(), r.body["apiVersion"].as_str()),
        (Some("TokenRequest"), Some("authentication.k8s.io/v1"))
    );
    assert_eq!(r.body["spec"], json!({"audiences": [ISSUER], "expirationSeconds": 3600, "boundObjectRef": null}));
    assert_eq!(
        (r.body["metadata"]["name"].as_str(), r.body["metadata"]["namespace"].as_str()),
        (Some("builder"), Some("default"))
    );
    let expires: jiff::Timestamp = r.body["status"]["expirationTimestamp"].as_str().unwrap().parse().unwrap();
    let left = expires.as_second() - jiff::Timestamp::now().as_second();
    assert!((3590..=3600).contains(&left), "{left}");
    let token = r.body["status"]["token"].as_str().unwrap().to_string();

    let me = whoami(&c, &token).await.unwrap();
    assert_eq!(
        me,
        json!({"username": "system:serviceaccount:default:builder", "uid": sa["metadata"]["uid"],
            "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": [format!("JTI={}", jti_of(&token))]}})
    );
    // A review says the same, for the audiences it matched.
    let r = c.post(REVIEWS, &json!({"spec": {"token": token}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["status"]["authenticated"], true, "{}", r.body);
    assert_eq!(r.body["status"]["user"], me);
    assert_eq!(r.body["status"]["audiences"], json!([ISSUER]));
    let r = c.post(REVIEWS, &json!({"spec": {"token": token, "audiences": ["vault"]}})).await;
    assert_eq!(r.body["status"]["authenticated"], Value::Null, "{}", r.body);
    assert!(r.body["status"]["error"].as_str().unwrap().contains("is invalid for the target audiences"), "{}", r.body);
    let r = c.post(REVIEWS, &json!({"spec": {"token": "a.b.c"}})).await;
    assert_eq!(r.body["status"], json!({"user": {}}), "a token nothing recognizes");
    let r = c.post(REVIEWS, &json!({"spec": {}})).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (400, Some("token is required for TokenReview in authentication"))
    );

    // The account gone, the token no longer authenticates.
    assert_eq!(c.delete(&format!("{ACCOUNTS}/builder")).await.code, 200);
    settled(&c, ACCOUNTS).await;
    assert_eq!(whoami(&c, &token).await, Err(401));
    let r = c.post(REVIEWS, &json!({"spec": {"token": token}})).await;
    assert_eq!(r.body["status"], json!({"user": {}, "error": "service account token has been invalidated"}));
}

#[tokio::test]
async fn requests_are_checked_as_kube_checks_them() {
    let s = server().await;
    let c = Client::new(&s);
    account(&c, "builder").await;
    let r = token_for(&c, "builder", &json!({"spec": {"expirationSeconds": 599}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let r = token_for(&c, "builder", &json!({"metadata": {"name": "other"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "TokenRequest.authentication.k8s.io \"builder\" is invalid: metadata.name: Invalid value: \"other\": must match the service account name if specified"
    );
    let r = token_for(&c, "nobody", &json!({})).await;
    assert_eq!((r.code, r.body["message"].as_str()), (404, Some("serviceaccounts \"nobody\" not found")));
    let r = token_for(&c, "builder", &json!({"spec": {"audiences": ["vault"], "expirationSeconds": 7200}})).await;
    assert_eq!(r.body["spec"]["audiences"], json!(["vault"]));
    assert_eq!(r.body["spec"]["expirationSeconds"], 7200);
    // A token for another audience is not the API server's to accept.
    assert_eq!(whoami(&c, r.body["status"]["token"].as_str().unwrap()).await, Err(401));
    assert_eq!(c.get(&format!("{ACCOUNTS}/builder/token")).await.code, 405);

    // Discovery names the subresource, in its own group.
    let v1 = c.get("/api/v1").await.body;
    let token = v1["resources"].as_array().unwrap().iter().find(|r| r["name"] == "serviceaccounts/token").unwrap();
    assert_eq!(
        (token["group"].as_str(), token["kind"].as_str()),
        (Some("authentication.k8s.io"), Some("TokenRequest"))
    );
}

#[tokio::test]
async fn a_token_bound_to_a_pod_lives_as_long_as_the_pod() {
    let s = server().await;
    let c = Client::new(&s);
    account(&c, "builder").await;
    let node = c.post("/api/v1/nodes", &json!({"metadata": {"name": "node-1"}})).await.body;
    let mut p = pod("runner", json!({}));
    p["spec"]["serviceAccountName"] = "builder".into();
    p["spec"]["nodeName"] = "node-1".into();
    let p = c.post(PODS, &p).await.body;
    let uid = p["metadata"]["uid"].as_str().unwrap();
    let bound = |uid: &str| json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "runner", "uid": uid}}});
    let r = token_for(&c, "builder", &bound(uid)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let token = r.body["status"]["token"].as_str().unwrap().to_string();
    let me = whoami(&c, &token).await.unwrap();
    assert_eq!(me["extra"]["authentication.kubernetes.io/pod-name"], json!(["runner"]));
    assert_eq!(me["extra"]["authentication.kubernetes.io/pod-uid"], json!([uid]));
    assert_eq!(me["extra"]["authentication.kubernetes.io/node-name"], json!(["node-1"]));
    assert_eq!(me["extra"]["authentication.kubernetes.io/node-uid"], json!([node["metadata"]["uid"]]));
    // kubelet's projected token (an hour and seven seconds, for the API server) lives a year and
    // warns after its hour; the answer still says an hour. Other lifetimes are as asked.
    let mut projected = bound(uid);
    projected["spec"]["expirationSeconds"] = 3607.into();
    let r = token_for(&c, "builder", &projected).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let claims = claims_of(r.body["status"]["token"].as_str().unwrap());
    let iat = claims["iat"].as_i64().unwrap();
    assert_eq!(claims["exp"].as_i64().unwrap() - iat, 365 * 24 * 3600);
    assert_eq!(claims["kubernetes.io"]["warnafter"].as_i64().unwrap(), iat + 3607);
    let expires: jiff::Timestamp = r.body["status"]["expirationTimestamp"].as_str().unwrap().parse().unwrap();
    assert_eq!(expires.as_second(), iat + 3607);
    projected["spec"]["audiences"] = json!(["vault"]);
    let claims = claims_of(token_for(&c, "builder", &projected).await.body["status"]["token"].as_str().unwrap());
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 3607);
    assert!(claims["kubernetes.io"].get("warnafter").is_none());
    let claims = claims_of(token_for(&c, "builder", &bound(uid)).await.body["status"]["token"].as_str().unwrap());
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 3600);
    // Bound to the pod it names, running as the account.
    let r = token_for(&c, "builder", &bound("not-the-pod")).await;
    assert_eq!(r.code, 409, "{}", r.body);
    account(&c, "other").await;
    let r = token_for(&c, "other", &bound(uid)).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (
            400,
            Some("cannot bind token for serviceaccount \"other\" to pod running with different serviceaccount name.")
        )
    );
    let r = token_for(
        &c,
        "builder",
        &json!({"spec": {"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}),
    )
    .await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (400, Some("cannot bind token to object of type apps/v1, Kind=Deployment"))
    );
    // Terminating, the pod keeps its token valid (until a minute past its deletion time); gone,
    // it does not.
    assert_eq!(c.delete(&format!("{PODS}/runner")).await.body["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(whoami(&c, &token).await.is_ok());
    let r = c.send_raw(http::Method::DELETE, &format!("{PODS}/runner?gracePeriodSeconds=0"), vec![], "").await;
    assert_eq!(r.code, 200, "{}", r.body);
    settled(&c, PODS).await;
    assert_eq!(whoami(&c, &token).await, Err(401));
}

#[tokio::test]
async fn a_server_that_requires_its_own_token_takes_service_account_tokens_too() {
    let s = informer_apiserver::testing::builder().token("admin-token").start().await.unwrap();
    let admin = Client::new(&s).with_token("admin-token");
    account(&admin, "builder").await;
    let token = token_for(&admin, "builder", &json!({})).await.body["status"]["token"].as_str().unwrap().to_string();
    assert_eq!(whoami(&admin, &token).await.unwrap()["username"], "system:serviceaccount:default:builder");
    assert_eq!(whoami(&admin, "admin-token").await.unwrap()["username"], "system:admin");
    // A token of another server's key.
    let other = informer_apiserver::testing::builder().start().await.unwrap();
    let c = Client::new(&other);
    account(&c, "builder").await;
    let foreign = token_for(&c, "builder", &json!({})).await.body["status"]["token"].as_str().unwrap().to_string();
    assert_eq!(whoami(&admin, &foreign).await, Err(401));
    assert_eq!(whoami(&admin, "guess").await, Err(401));
    // Another issuer's token (an OIDC provider's) is not this server's to judge: without a
    // token of its own the server serves it as before, with one it refuses it as any other.
    use base64::Engine;
    let part = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let oidc =
        format!("{}.{}.c2ln", part(json!({"alg": "RS256"})), part(json!({"iss": "https://accounts.example.com"})));
    assert_eq!(whoami(&c, &oidc).await.unwrap()["username"], "system:admin");
    assert_eq!(whoami(&admin, &oidc).await, Err(401));
}

#[tokio::test]
async fn a_durable_servers_tokens_outlive_a_restart() {
    let dir = informer_apiserver::testing::temp_data_dir();
    let token = {
        let s = informer_apiserver::ApiServer::builder().data_dir(&dir).start().await.unwrap();
        let c = Client::new(&s);
        account(&c, "builder").await;
        let token = token_for(&c, "builder", &json!({})).await.body["status"]["token"].as_str().unwrap().to_string();
        s.stop().await;
        token
    };
    let s = informer_apiserver::ApiServer::builder().data_dir(&dir).start().await.unwrap();
    let c = Client::new(&s);
    assert_eq!(whoami(&c, &token).await.unwrap()["username"], "system:serviceaccount:default:builder");
    s.stop().await;
    drop(s);
    // A key given to the builder signs and checks instead (as replicas on one etcd share
    // theirs): another key refuses the token, the data directory's own accepts it.
    use informer_apiserver::service_account_token::TokenSigner;
    let other = informer_apiserver::ApiServer::builder()
        .data_dir(&dir)
        .service_account_key(TokenSigner::generate_pkcs8())
        .start()
        .await
        .unwrap();
    assert_eq!(whoami(&Client::new(&other), &token).await, Err(401));
    other.stop().await;
    drop(other);
    let kept = std::fs::read(dir.join("service-account-key.pk8")).unwrap();
    let same = informer_apiserver::ApiServer::builder().data_dir(&dir).service_account_key(kept).start().await.unwrap();
    assert!(whoami(&Client::new(&same), &token).await.is_ok());
}

#[tokio::test]
async fn kubectl_and_kube_rs_ask_for_tokens() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    let s = server().await;
    let c = Client::new(&s);
    account(&c, "builder").await;
    let api: kube::Api<ServiceAccount> = kube::Api::default_namespaced(kube_client(&s).await);
    let request = TokenRequest {
        spec: TokenRequestSpec { audiences: vec![ISSUER.into()], expiration_seconds: Some(1200), ..Default::default() },
        ..Default::default()
    };
    let issued = api.create_token_request("builder", &Default::default(), &request).await.unwrap();
    let token = issued.status.unwrap().token;
    assert_eq!(whoami(&c, &token).await.unwrap()["username"], "system:serviceaccount:default:builder");

    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let dir = tempdir("kubectl-token");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["create", "token", "builder", "--duration=20m"]).await;
        assert!(ok, "{bin}: {out}{err}");
        let token = out.trim().to_string();
        assert_eq!(whoami(&c, &token).await.unwrap()["username"], "system:serviceaccount:default:builder", "{bin}");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["get", "pods", &format!("--token={token}")]).await;
        assert!(ok, "{bin}: the token works for kubectl: {out}{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Verifies `token`'s ES256 signature with the JSON Web Key `jwk` (as a relying party that
/// fetched the issuer's key set would).
fn verifies(token: &str, jwk: &Value) -> bool {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut point = vec![4u8];
    point.extend(b64.decode(jwk["x"].as_str().unwrap()).unwrap());
    point.extend(b64.decode(jwk["y"].as_str().unwrap()).unwrap());
    let (signed, signature) = token.rsplit_once('.').unwrap();
    let key = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point);
    key.verify(signed.as_bytes(), &b64.decode(signature).unwrap()).is_ok()
}

#[tokio::test]
async fn the_issuer_publishes_its_discovery_document_and_keys() {
    let s = rbac_server().await;
    let c = Client::new(&s);
    let r = c.get("/.well-known/openid-configuration").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.headers["cache-control"], "public, max-age=3600");
    let jwks_uri = format!("{}/openid/v1/jwks", s.url());
    assert_eq!(
        r.body,
        json!({"issuer": ISSUER, "jwks_uri": jwks_uri, "response_types_supported": ["id_token"],
               "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["ES256"]})
    );
    let r = c.get("/openid/v1/jwks").await;
    assert_eq!(r.code, 200);
    assert_eq!(r.headers["content-type"], "application/jwk-set+json");
    let keys = r.body["keys"].as_array().unwrap().clone();
    assert_eq!(keys.len(), 1);
    assert_eq!((keys[0]["use"].as_str(), keys[0]["kty"].as_str()), (Some("sig"), Some("EC")));

    // A token the server issues verifies with the published key, whose id its header names.
    account(&c, "builder").await;
    let token = token_for(&c, "builder", &json!({})).await.body["status"]["token"].as_str().unwrap().to_string();
    assert!(verifies(&token, &keys[0]));
    let other = informer_apiserver::service_account_token::TokenSigner::generate();
    assert!(!verifies(&token, &other.public_jwk()), "another key does not verify it");

    // Under RBAC the documents are every service account's (kube's default binding), and not
    // other users'.
    assert_eq!(c.clone().with_token(&token).get("/openid/v1/jwks").await.code, 200);
    let r = c.clone().impersonating("alice").get("/.well-known/openid-configuration").await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["message"], "forbidden: User \"alice\" cannot get path \"/.well-known/openid-configuration\"");
}

/// A private key openssl writes with `args`, as PEM.
async fn openssl_key(args: &[&str]) -> String {
    let out =
        tokio::process::Command::new("openssl").args(args).kill_on_drop(true).output().await.expect("openssl runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn rsa_and_sec1_keys_sign_as_kube_s_do() {
    use informer_apiserver::service_account_token::pkcs8_from_pem;
    let keys = [
        ("RSA PRIVATE KEY", "RS256", openssl_key(&["genrsa", "-traditional", "2048"]).await),
        (
            "PRIVATE KEY",
            "RS256",
            openssl_key(&["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]).await,
        ),
        ("EC PRIVATE KEY", "ES256", openssl_key(&["ecparam", "-name", "prime256v1", "-genkey", "-noout"]).await),
    ];
    for (label, alg, pem) in keys {
        assert!(pem.contains(&format!("-----BEGIN {label}-----")), "{pem}");
        let s = informer_apiserver::testing::builder()
            .service_account_key(pkcs8_from_pem(&pem).unwrap())
            .start()
            .await
            .expect("start");
        let c = Client::new(&s);
        account(&c, "builder").await;
        let token = token_for(&c, "builder", &json!({})).await.body["status"]["token"].as_str().unwrap().to_string();
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header: Value = serde_json::from_slice(&b64.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
        assert_eq!(header["alg"], alg, "{label}");
        assert_eq!(whoami(&c, &token).await.unwrap()["username"], "system:serviceaccount:default:builder", "{label}");
        let doc = c.get("/.well-known/openid-configuration").await.body;
        assert_eq!(doc["id_token_signing_alg_values_supported"], json!([alg]));
        let jwk = c.get("/openid/v1/jwks").await.body["keys"][0].clone();
        assert_eq!(jwk["kid"], header["kid"], "{label}");
        // kube's key id: the base64url SHA-256 of the public key's DER SubjectPublicKeyInfo.
        let mut child = tokio::process::Command::new("openssl")
            .args(["pkey", "-pubout", "-outform", "DER"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        tokio::io::AsyncWriteExt::write_all(child.stdin.as_mut().unwrap(), pem.as_bytes()).await.unwrap();
        drop(child.stdin.take());
        let spki = child.wait_with_output().await.unwrap().stdout;
        use sha2::Digest;
        assert_eq!(header["kid"], b64.encode(sha2::Sha256::digest(&spki)), "{label}");
        // The published key verifies the token, as a relying party checks it.
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let signature = b64.decode(signature).unwrap();
        let ok = if alg == "RS256" {
            let n = b64.decode(jwk["n"].as_str().unwrap()).unwrap();
            let e = b64.decode(jwk["e"].as_str().unwrap()).unwrap();
            ring::signature::RsaPublicKeyComponents { n, e }
                .verify(&ring::signature::RSA_PKCS1_2048_8192_SHA256, signed.as_bytes(), &signature)
                .is_ok()
        } else {
            verifies(&token, &jwk)
        };
        assert!(ok, "{label}");
    }
}
