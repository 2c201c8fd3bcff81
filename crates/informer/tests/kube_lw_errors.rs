//! `KubeListerWatcher` over real connections that fail: each failure is classified by what broke.
//! A failure of the connection itself (refused, reset, closed early, timed out) is a connection
//! failure, retried after a short pause; any other transport failure (a certificate from an
//! unknown authority, a TLS handshake with something that is not TLS, an unknown host, a failing
//! exec-credential plugin, an answer that is not HTTP) is not, and a reflector retries it after
//! the exponential backoff.
//!
//! The failing servers are plain TCP listeners scripted per test; the TLS server is the embedded
//! API server with a certificate from an authority the client does not trust.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer::backoff::BackoffConfig;
use informer::{
    Error, KubeListerWatcher, ListOptions, ListerWatcher, RealFifo, Reflector, ReflectorHooks, ReflectorOptions,
    TransportFailure,
};
use informer_apiserver::testing::WebhookCertificate;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

type Cm = ConfigMap;

/// What a scripted server does with each request.
#[derive(Clone, Copy)]
enum Answer {
    /// Resets the connection (RST) once the request is read.
    Reset,
    /// Closes the connection once the request is read, before any answer.
    Close,
    /// Reads the request and never answers.
    Hang,
    /// Answers with bytes that are not HTTP.
    Garbage,
    /// Sends bytes that are not TLS as soon as the connection opens.
    NotTls,
    /// Sends the head of a 200 answer and part of its body, then closes.
    HalfBody,
}

async fn read_head(sock: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match sock.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// A server answering every request with `answer`; returns its URL.
async fn scripted(answer: Answer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Answer::NotTls = answer {
                    let _ = sock.write_all(b"NOT TLS AT ALL\r\n\r\n").await;
                    return std::future::pending::<()>().await;
                }
                if !read_head(&mut sock).await {
                    return;
                }
                match answer {
                    Answer::NotTls => unreachable!("answered above"),
                    Answer::Reset => sock.set_zero_linger().unwrap(),
                    Answer::Close => {}
                    Answer::Hang => std::future::pending::<()>().await,
                    Answer::Garbage => {
                        let _ = sock.write_all(b"NOT HTTP AT ALL\r\n\r\n").await;
                        // Keeps the connection open: the client must fail on the bytes, not the close.
                        std::future::pending::<()>().await
                    }
                    Answer::HalfBody => {
                        let _ = sock
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"kind\":\"ConfigMapList\",")
                            .await;
                    }
                }
            });
        }
    });
    url
}

async fn client(yaml: &str, read_timeout: Option<Duration>) -> kube::Client {
    let kc = Kubeconfig::from_yaml(yaml).unwrap();
    let mut cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.unwrap();
    cfg.read_timeout = read_timeout;
    kube::Client::try_from(cfg).unwrap()
}

fn kubeconfig(url: &str) -> String {
    informer_apiserver::kubeconfig_yaml(url, None, false)
}

fn lw(client: kube::Client) -> KubeListerWatcher<Cm> {
    KubeListerWatcher::<Cm>::new(client, Some("default"))
}

/// The failure of a LIST and of a WATCH through `lw`.
async fn failures(lw: &KubeListerWatcher<Cm>) -> [TransportFailure; 2] {
    let failure = |r: Result<(), Error>| match r {
        Err(Error::Transport { failure, .. }) => failure,
        other => panic!("expected a transport error, got {other:?}"),
    };
    let list = lw.list(&ListOptions::default()).await.map(drop);
    let watch = lw.watch(&ListOptions::default()).await.map(drop);
    [failure(list), failure(watch)]
}

/// A server that serves TLS with a certificate from an authority the client does not know.
async fn tls_server_of_an_unknown_authority() -> informer_apiserver::ApiServer {
    let cert = WebhookCertificate::for_hosts(&["127.0.0.1"]).unwrap();
    let dir = std::env::temp_dir().join(format!("informer-kube-lw-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert_path, &cert.cert_pem).unwrap();
    std::fs::write(&key_path, &cert.key_pem).unwrap();
    let server = informer_apiserver::testing::builder().tls(cert_path, key_path).start().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_of_the_connection_are_connection_failures() {
    use TransportFailure::{ConnectionLost, ConnectionRefused};
    // Refused: a port nothing listens on any more.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    assert_eq!(failures(&lw(client(&kubeconfig(&url), None).await)).await, [ConnectionRefused; 2], "refused");
    for (answer, what) in [(Answer::Reset, "reset"), (Answer::Close, "closed before the answer (EOF)")] {
        let url = scripted(answer).await;
        assert_eq!(failures(&lw(client(&kubeconfig(&url), None).await)).await, [ConnectionLost; 2], "{what}");
    }
    let url = scripted(Answer::Hang).await;
    let timing_out = client(&kubeconfig(&url), Some(Duration::from_millis(200))).await;
    assert_eq!(failures(&lw(timing_out)).await, [ConnectionLost; 2], "timed out");
    // A list body cut short (unexpected EOF).
    let url = scripted(Answer::HalfBody).await;
    let list = lw(client(&kubeconfig(&url), None).await).list(&ListOptions::default()).await;
    assert!(
        matches!(&list, Err(Error::Transport { failure: ConnectionLost, .. })),
        "a list body cut short: {:?}",
        list.map(drop)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_transport_failures_are_not_connection_failures() {
    let other = [TransportFailure::Other; 2];
    let server = tls_server_of_an_unknown_authority().await;
    let unknown_ca = lw(client(&kubeconfig(&server.url()), None).await);
    assert_eq!(failures(&unknown_ca).await, other, "a certificate from an unknown authority");
    let not_tls = scripted(Answer::NotTls).await.replace("http://", "https://");
    assert_eq!(failures(&lw(client(&kubeconfig(&not_tls), None).await)).await, other, "TLS with a non-TLS server");
    let unknown_host = "http://no-such-host.invalid:6443";
    assert_eq!(failures(&lw(client(&kubeconfig(unknown_host), None).await)).await, other, "DNS resolution");
    let not_http = scripted(Answer::Garbage).await;
    assert_eq!(failures(&lw(client(&kubeconfig(&not_http), None).await)).await, other, "an answer that is not HTTP");
    // An exec-credential plugin that gives an expired token once (when the client is built) and
    // fails from then on: every request runs it again.
    let dir = std::env::temp_dir().join(format!("informer-kube-lw-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plugin = dir.join("plugin.sh");
    let ran = dir.join("ran");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\nif [ -e {ran} ]; then echo 'credentials revoked' >&2; exit 1; fi\ntouch {ran}\n\
             echo '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\
             \"status\":{{\"token\":\"t\",\"expirationTimestamp\":\"2000-01-01T00:00:00Z\"}}}}'\n",
            ran = ran.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let exec = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    insecure-skip-tls-verify: true\n\
         contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    exec:\n\
         \x20     apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
        server.url(),
        plugin.display()
    );
    let revoked = lw(client(&exec, None).await);
    assert_eq!(failures(&revoked).await, other, "a failing exec-credential plugin");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A reflector whose client does not trust the server's certificate retries after the exponential
/// backoff, not the short pause kept for a server that is away: with a 10 s pause and a backoff of
/// 10, 20, 40 ms, four lists happen within a few hundred milliseconds only if the backoff applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflector_that_cannot_verify_the_server_backs_off_exponentially() {
    let server = tls_server_of_an_unknown_authority().await;
    let lists = Arc::new((AtomicUsize::new(0), Notify::new()));
    let errors: Arc<parking_lot::Mutex<Vec<String>>> = Arc::default();
    let hooks = ReflectorHooks {
        before_list: Some(Arc::new({
            let lists = lists.clone();
            move |_: &str| {
                lists.0.fetch_add(1, Ordering::SeqCst);
                lists.1.notify_waiters();
            }
        })),
        watch_error: Some(Arc::new({
            let errors = errors.clone();
            move |e: &Error| errors.lock().push(e.to_string())
        })),
        ..Default::default()
    };
    let opts = ReflectorOptions {
        name: "unknown-authority".into(),
        streaming_list: false,
        backoff: BackoffConfig {
            initial: Duration::from_millis(10),
            cap: Duration::from_millis(40),
            jitter: 0.0,
            unreachable: Duration::from_secs(10),
            ..Default::default()
        },
        ..Default::default()
    };
    let queue = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let reflector =
        Arc::new(Reflector::new(Arc::new(lw(client(&kubeconfig(&server.url()), None).await)), queue, opts, hooks));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (reflector.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    let four_lists = async {
        loop {
            let next = lists.1.notified();
            tokio::pin!(next);
            next.as_mut().enable();
            if lists.0.load(Ordering::SeqCst) >= 4 {
                break;
            }
            next.await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), four_lists)
        .await
        .unwrap_or_else(|_| panic!("four lists within 5 s; errors {:?}", errors.lock()));
    assert!(errors.lock().iter().all(|e| e.contains("UnknownIssuer")), "{:?}", errors.lock());
    cancel.cancel();
    task.await.unwrap();
}
