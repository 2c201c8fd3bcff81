//! `KubeListerWatcher` over real HTTP against a server that sends list bodies with chunked transfer encoding (no
//! Content-Length, as kube-apiserver does for large lists): items are decoded frame by frame as they arrive, and
//! a second list decodes the same way.

use informer::{KubeListerWatcher, ListOptions, ListerWatcher};
use k8s_openapi::api::core::v1::ConfigMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A list body of `n` config maps at resourceVersion `rv`.
fn list_body(n: usize, rv: u64) -> Vec<u8> {
    let items: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","namespace":"default","resourceVersion":"{}","labels":{{"i":"{i}"}}}},"data":{{"k":"{}"}}}}"#,
                rv - 1,
                "x".repeat(i % 300)
            )
        })
        .collect();
    format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":[{}]}}"#,
        items.join(",")
    )
    .into_bytes()
}

/// Serves each request on each connection with the next body, chunked into pieces of 1,000 bytes.
async fn serve_chunked(listener: TcpListener, bodies: Vec<Vec<u8>>) {
    let mut bodies = bodies.into_iter();
    loop {
        let Ok((mut sock, _)) = listener.accept().await else { return };
        loop {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match sock.read(&mut byte).await {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            if !head.ends_with(b"\r\n\r\n") {
                break; // the client closed the connection
            }
            let Some(body) = bodies.next() else { return };
            let mut out =
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            for chunk in body.chunks(1000) {
                out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                out.extend_from_slice(chunk);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
            if sock.write_all(&out).await.is_err() {
                break;
            }
        }
    }
}

#[tokio::test]
async fn chunked_list_bodies_decode_completely() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let first = list_body(400, 50);
    assert!(first.len() > 60_000, "many chunks");
    tokio::spawn(serve_chunked(listener, vec![first, list_body(900, 70)]));

    let cfg = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let client = kube::Client::try_from(cfg).unwrap();
    let lw = KubeListerWatcher::<ConfigMap>::new(client, Some("default"));

    let list = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(list.resource_version, "50");
    assert_eq!(list.items.len(), 400);
    for (i, o) in list.items.iter().enumerate() {
        assert_eq!(o.key().as_str(), format!("default/cm-{i}"));
        assert_eq!(o.label("i"), Some(i.to_string().as_str()));
        assert_eq!(o.get().unwrap().data.as_ref().unwrap()["k"].len(), i % 300);
    }
    // The second list is larger than the first (its buffer was sized from the first and must grow).
    let list = lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!((list.resource_version.as_str(), list.items.len()), ("70", 900));
    assert_eq!(list.items[899].name(), "cm-899");
    assert_eq!(list.items[899].resource_version(), Some("69"));
}
