//! The TCP connections the server opens to the workloads it talks to — a kubelet's address, a
//! pod or a Service's endpoint behind a proxy, a webhook — with their failures worded as Go's
//! dialer words them, since they reach clients inside kube's messages (`dial tcp
//! 10.0.0.1:8080: connect: connection refused`).
//!
//! Invariants: a host name is resolved and its addresses tried in turn within one time limit;
//! a name that does not resolve is reported as Go's resolver reports it, naming the system's
//! first name server (`lookup <name> on 10.0.0.10:53: no such host`);
//! a port outside 0–65535 is refused before any lookup (`dial tcp: address <port>: invalid
//! port`); an address is written as Go's `net.JoinHostPort` writes it (IPv6 in brackets).

use std::time::Duration;

use tokio::net::TcpStream;

/// How long kube-apiserver's dialers wait for a connection (Go's `net.Dialer{Timeout: 30s}`).
pub(crate) const GO_DIAL_LIMIT: Duration = Duration::from_secs(30);

/// Go's `net.JoinHostPort`.
pub(crate) fn join_host_port(host: &str, port: impl std::fmt::Display) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

/// A connection to `host`:`port`, within `limit`; the error in Go's dialer's words.
pub(crate) async fn connect(host: &str, port: i64, limit: Duration) -> Result<TcpStream, String> {
    if u16::try_from(port).is_err() {
        return Err(format!("dial tcp: address {port}: invalid port"));
    }
    let address = join_host_port(host, port);
    let connect = async {
        let no_host = || format!("dial tcp: {}", no_such_host(host));
        let targets: Vec<std::net::SocketAddr> = match tokio::net::lookup_host(&address).await {
            Ok(found) => found.collect(),
            Err(_) => return Err(no_host()),
        };
        let mut last = no_host();
        for target in targets {
            match TcpStream::connect(target).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = format!("dial tcp {target}: {}", connect_error(&e)),
            }
        }
        Err(last)
    };
    match tokio::time::timeout(limit, connect).await {
        Ok(done) => done,
        Err(_) => Err(format!("dial tcp {address}: i/o timeout")),
    }
}

/// Go's resolver's words for a name that does not resolve: the name server asked is the
/// system's first (`/etc/resolv.conf`), or Go's default, `[::1]:53`, without one.
pub(crate) fn no_such_host(host: &str) -> String {
    let configured = std::fs::read_to_string("/etc/resolv.conf").ok().and_then(|conf| {
        conf.lines().find_map(|l| l.trim().strip_prefix("nameserver").map(|ns| ns.trim().to_string()))
    });
    let server = configured.map(|ns| join_host_port(&ns, 53)).unwrap_or_else(|| "[::1]:53".into());
    format!("lookup {host} on {server}: no such host")
}

/// How Go's dialer words a failed connect.
fn connect_error(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => "connect: connection refused".into(),
        Some(libc::EHOSTUNREACH) => "connect: no route to host".into(),
        Some(libc::ENETUNREACH) => "connect: network is unreachable".into(),
        Some(libc::ETIMEDOUT) => "connect: connection timed out".into(),
        _ => format!("connect: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_joined_as_go_joins_them() {
        assert_eq!(join_host_port("10.0.0.1", 80), "10.0.0.1:80");
        assert_eq!(join_host_port("fd00::1", "443"), "[fd00::1]:443");
    }

    #[tokio::test]
    async fn failures_are_worded_as_go_words_them() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let refused = connect("127.0.0.1", i64::from(port), Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(refused, format!("dial tcp 127.0.0.1:{port}: connect: connection refused"));
        let invalid = connect("127.0.0.1", 70000, Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(invalid, "dial tcp: address 70000: invalid port");
        let unknown = connect("no-such-host.invalid", 80, GO_DIAL_LIMIT).await.unwrap_err();
        assert!(unknown.starts_with("dial tcp: lookup no-such-host.invalid on "), "{unknown}");
        assert!(unknown.ends_with(":53: no such host"), "{unknown}");
    }
}
