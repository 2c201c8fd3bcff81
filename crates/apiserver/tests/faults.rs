//! The faults of a real kube-apiserver, produced by the embedded server's controls and checked
//! over HTTP: graceful shutdown, restart with a cold watch cache, a watch cache behind its
//! storage, unresponsive watchers closed, connections cut in the middle of an event, HTTP/2
//! GOAWAY, slow responses.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Empty};
use informer_apiserver::{ApiServer, GracefulShutdown, ShutdownAnswer, UnresponsiveClose};
use serde_json::{Value, json};

/// The `/readyz` code.
async fn readyz(c: &Client) -> u16 {
    c.get("/readyz").await.code
}

/// A graceful shutdown under way: a watch open and a slow request in flight when it started.
struct ShuttingDown {
    s: std::sync::Arc<ApiServer>,
    watch: WatchStream,
    slow: tokio::task::JoinHandle<(u16, Duration)>,
    shutdown: tokio::task::JoinHandle<()>,
}

/// The request in flight takes this long.
const SLOW: Duration = Duration::from_millis(600);

/// Starts a graceful shutdown (delay 300 ms) with a watch open and a slow request in flight,
/// and checks the delay: `/readyz` fails while requests are still served.
async fn start_shutdown(send_retry_after: bool) -> ShuttingDown {
    let s = std::sync::Arc::new(server().await);
    let c = Client::new(&s);
    c.post(PODS, &pod("a", json!({}))).await;
    let rv = s.resource_version();
    let watch = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    assert!(s.wait_for_watches(1, SEC).await);
    // Nothing in flight (the watch's handler has returned), then only the slow request.
    assert!(s.controls().wait_drained(SEC).await);
    s.set_latency(SLOW);
    let slow = tokio::spawn({
        let c = Client::new(&s);
        async move {
            let started = Instant::now();
            let code = c.get(PODS).await.code;
            (code, started.elapsed())
        }
    });
    // The handler has read the latency once it counts as in flight.
    assert!(s.controls().wait_for_requests_in_flight(1, SEC).await);
    let shutdown = tokio::spawn({
        let s = s.clone();
        async move {
            s.shutdown_gracefully(GracefulShutdown {
                delay: Duration::from_millis(300),
                drain_timeout: Duration::from_secs(5),
                watch_grace: Duration::from_millis(100),
                send_retry_after,
            })
            .await
        }
    });
    s.set_latency(Duration::ZERO);
    let fresh = Client::new(&s);
    assert_eq!(readyz(&fresh).await, 500);
    assert_eq!(fresh.get(PODS).await.code, 200);
    ShuttingDown { s, watch, slow, shutdown }
}

impl ShuttingDown {
    /// The slow request was drained, the watch ended, the server stopped; it then serves again.
    async fn finish_and_restart(mut self) {
        let (code, took) = self.slow.await.unwrap();
        assert_eq!(code, 200, "the request in progress was drained");
        assert!(took >= SLOW, "the drained request ran its whole course ({took:?})");
        self.watch.expect_end(Duration::from_secs(5)).await;
        self.shutdown.await.unwrap();
        let s = self.s;
        assert!(!s.is_running().await);
        s.restart().await.unwrap();
        assert!(s.wait_ready(SEC).await);
        assert_eq!(Client::new(&s).get(PODS).await.code, 200);
        assert_eq!(readyz(&Client::new(&s)).await, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_with_send_retry_after_answers_429_drains_then_closes() {
    let sd = start_shutdown(true).await;
    // After the delay: 429, Retry-After 5, Connection: close, kube's message.
    let deadline = Instant::now() + Duration::from_secs(5);
    let r = loop {
        let r = Client::new(&sd.s).get(PODS).await;
        if r.code != 200 || Instant::now() > deadline {
            break r;
        }
    };
    assert_eq!(r.code, 429);
    assert_eq!(r.headers["retry-after"], "5");
    assert_eq!(r.headers["connection"], "close");
    assert_eq!(String::from_utf8_lossy(&r.raw), "The apiserver is shutting down, please try again later.\n");
    assert_eq!(Client::new(&sd.s).get("/livez").await.code, 200, "health checks are exempt");
    sd.finish_and_restart().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_closes_the_listener_drains_then_stops() {
    let sd = start_shutdown(false).await;
    // After the delay the listener closes: new connections are refused while the slow request
    // and the watch go on.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::net::TcpStream::connect(sd.s.addr()).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
            // A connection in the backlog when the listener closed is reset.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("connect: {e}"),
            Ok(_) => {
                assert!(Instant::now() < deadline, "the listener stayed open");
                tokio::task::yield_now().await;
            }
        }
    }
    sd.finish_and_restart().await;
}

#[tokio::test]
async fn requests_arriving_during_shutdown_get_503_with_retry_after_1() {
    let s = server().await;
    s.controls().set_shutting_down(Some(ShutdownAnswer::ServiceUnavailable));
    let r = Client::new(&s).get(PODS).await;
    assert_eq!(r.code, 503);
    assert_eq!(r.headers["retry-after"], "1");
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(r.body["reason"], "ServiceUnavailable");
    assert_eq!(r.body["message"], "apiserver is shutting down");
    assert_eq!(r.body["code"], 503);
    assert_eq!(Client::new(&s).get("/readyz").await.code, 500);
    assert_eq!(Client::new(&s).get("/livez").await.code, 200, "health checks are exempt");
    s.controls().set_shutting_down(None);
    assert_eq!(Client::new(&s).get(PODS).await.code, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_watch_cache_answers_429_until_it_is_filled() {
    let s = server().await;
    let c = Client::new(&s);
    c.post(PODS, &pod("a", json!({}))).await;
    s.restart_with_cold_cache(Duration::from_secs(2)).await.unwrap();
    let c = Client::new(&s);
    let r = c.get(PODS).await;
    assert_eq!(r.code, 429);
    assert_eq!(r.body["message"], "storage is (re)initializing");
    assert_eq!(r.headers["retry-after"], "1");
    assert_eq!(r.body["details"]["retryAfterSeconds"], 1);
    let w = c.get(&format!("{PODS}?watch=1&resourceVersion=1")).await;
    assert_eq!(w.code, 429);
    // What the storage can answer without the cache, it does (kube's cacher delegates to
    // etcd): a page without selectors, whatever its resourceVersion, and a GET.
    let page = c.get(&format!("{PODS}?limit=500&resourceVersion=0")).await;
    assert_eq!(page.code, 200, "{}", page.body);
    assert_eq!(page.body["items"][0]["metadata"]["name"], "a");
    assert_eq!(c.get(&format!("{PODS}/a")).await.code, 200);
    assert_eq!(c.get(&format!("{PODS}/a?resourceVersion=0")).await.code, 200);
    assert_eq!(c.get(&format!("{PODS}?limit=500&labelSelector=app%3Dx")).await.code, 429);
    assert_eq!(readyz(&c).await, 500);
    assert!(s.wait_ready(SEC).await);
    assert_eq!(c.get(PODS).await.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(readyz(&c).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_watch_cache_answers_504_for_revisions_it_has_not_reached() {
    let s = informer_apiserver::testing::builder().too_large_rv_wait(Duration::from_millis(200)).start().await.unwrap();
    let c = Client::new(&s);
    s.set_cache_lag(Duration::from_secs(2));
    let created = c.post(PODS, &pod("a", json!({}))).await;
    assert_eq!(created.code, 201);
    let rv = rv_of(&created.body);
    // A watch starts at once (it sends what comes after its resourceVersion); a streaming
    // list waits for the cache, then answers with one ERROR event.
    let plain = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    drop(plain);
    let t = Instant::now();
    let mut w = c
        .watch(&format!(
            "{PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={rv}"
        ))
        .await;
    let e = w.next_within(Duration::from_secs(5)).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(200));
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 504);
    assert_eq!(e["object"]["reason"], "Timeout");
    assert_eq!(e["object"]["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    let l = c.get(&format!("{PODS}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan")).await;
    assert_eq!(l.code, 504);
    // A consistent read does not wait for the cache: it reads the storage.
    let l = c.get(PODS).await;
    assert_eq!(l.code, 200);
    assert_eq!(l.body["items"].as_array().unwrap().len(), 1);
    s.set_cache_lag(Duration::ZERO);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unresponsive_watchers_are_closed_the_streaming_list_without_its_end_bookmark() {
    let s = server().await;
    let c = Client::new(&s);
    let pods: Vec<Value> = (0..200).map(|i| pod(&format!("p{i:03}"), json!({}))).collect();
    s.create_many("pods", pods).await.unwrap();
    s.set_stream_delay(Duration::from_millis(2));
    s.set_unresponsive_close(Some(UnresponsiveClose { buffer: 10, grace: Duration::from_millis(50) }));
    let mut w = c
        .watch(&format!(
            "{PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        ))
        .await;
    // Writes while the initial events are still being sent fill the watcher's buffer.
    for i in 0..30 {
        s.create("pods", pod(&format!("new{i:02}"), json!({}))).await.unwrap();
    }
    let mut events = 0;
    while let Some(e) = w.next_within(Duration::from_secs(10)).await {
        assert_ne!(e["type"], "BOOKMARK", "closed before the end bookmark");
        events += 1;
    }
    assert!(!w.broken, "a clean end of the stream");
    assert!(events < 200, "closed while sending the initial events ({events})");
    assert_eq!(s.controls().unresponsive_closes(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_connections_break_a_watch_in_the_middle_of_an_event() {
    let s = server().await;
    let c = Client::new(&s);
    let rv = s.resource_version();
    let mut w = c.watch(&format!("{PODS}?watch=1&resourceVersion={rv}")).await;
    assert!(s.wait_for_watches(1, SEC).await);
    s.create("pods", pod("a", json!({}))).await.unwrap();
    assert_eq!(w.next_within(SEC).await.unwrap()["object"]["metadata"]["name"], "a");
    s.cut_connections();
    s.create("pods", pod("b", json!({}))).await.unwrap();
    assert!(w.next_within(SEC).await.is_none(), "the cut event is not delivered");
    assert!(w.broken, "the body ends broken, not cleanly");
    // New connections are served.
    assert_eq!(Client::new(&s).get(PODS).await.body["items"].as_array().unwrap().len(), 2);
}

/// A cut closes idle keep-alive connections at once (as a reset socket is closed), so that a
/// client's pool does not hand them out later only to see them fail one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_connections_close_idle_ones_at_once() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = server().await;
    let mut conn = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    conn.write_all(b"GET /version HTTP/1.1\r\nHost: test\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.ends_with(b"}") {
        let n = tokio::time::timeout(SEC, conn.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "closed before the answer");
        answer.extend_from_slice(&buf[..n]);
    }
    assert!(answer.starts_with(b"HTTP/1.1 200"));
    // Idle, kept alive: the cut closes it without waiting for another request.
    s.cut_connections();
    let read = tokio::time::timeout(SEC, conn.read(&mut buf)).await.expect("the idle connection stays open");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}

/// A connection that has not sent its first bytes yet is closed by a cut, and by a GOAWAY, as an
/// idle one is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_yet_to_speak_close_on_a_cut_or_a_goaway() {
    use tokio::io::AsyncReadExt;
    for goaway in [false, true] {
        let s = server().await;
        let mut silent = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
        // A request answered on a later connection: the silent one was accepted before it.
        assert_eq!(Client::new(&s).get("/version").await.code, 200);
        if goaway {
            s.goaway();
        } else {
            s.cut_connections();
        }
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(SEC, silent.read(&mut buf)).await.expect("the connection stays open");
        assert!(matches!(read, Ok(0) | Err(_)), "goaway {goaway}: {read:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_lets_streams_in_progress_finish_and_refuses_new_ones() {
    let s = server().await;
    let stream = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    let conn = tokio::spawn(conn);
    let rv = s.resource_version();
    let req = |path: String| http::Request::get(path).body(Empty::<Bytes>::new()).unwrap();
    let resp = send.send_request(req(format!("{PODS}?watch=1&resourceVersion={rv}"))).await.unwrap();
    assert_eq!(resp.version(), http::Version::HTTP_2);
    let mut body = resp.into_body();
    assert!(s.wait_for_watches(1, SEC).await);
    s.goaway();
    s.create("pods", pod("a", json!({}))).await.unwrap();
    // The watch in progress goes on.
    let frame = tokio::time::timeout(SEC, body.frame()).await.unwrap().unwrap().unwrap();
    let line = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    assert!(line.contains("\"ADDED\"") && line.contains("\"a\""), "{line}");
    // A new stream on this connection is refused.
    let refused = tokio::time::timeout(SEC, send.send_request(req(PODS.to_string()))).await.unwrap();
    assert!(refused.is_err(), "a request after GOAWAY: {refused:?}");
    drop(body);
    let _ = tokio::time::timeout(SEC, conn).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_responses_take_the_latency_set() {
    let s = server().await;
    let c = Client::new(&s);
    s.set_latency(Duration::from_millis(300));
    let t = Instant::now();
    assert_eq!(c.get(PODS).await.code, 200);
    assert!(t.elapsed() >= Duration::from_millis(300));
    s.set_latency(Duration::ZERO);
}
