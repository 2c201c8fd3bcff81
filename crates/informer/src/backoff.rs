//! How long a reflector waits before it retries: client-go's exponential backoff for a server
//! that answers with errors (or a request that fails for a cause that stays), a short fixed pause
//! while the connection to the server fails, and the server's own `Retry-After` when it gives one.
//!
//! [`Backoff`] is client-go's reflector backoff: 0.8 s doubling to a 30 s cap, each delay jittered
//! up to +100%, the sequence restarted when the last restart is more than 2 minutes old.
//!
//! [`RetryPolicy`] chooses the delay of each failure (one policy per reflector, shared by every
//! retry path: relists, watch-establishment retries, 429s, streaming-list retries):
//! - the server gave `Retry-After` (429, or a Status with `retryAfterSeconds`): exactly that, at
//!   most the cap; the backoff does not advance;
//! - the connection itself failed (refused, reset, EOF or unexpected EOF, broken pipe, timed out,
//!   HTTP/2 GOAWAY or connection lost: [`Error::is_connection_failure`]): a short pause,
//!   `unreachable` jittered up to +100% (default 1–2 s); the backoff does not advance. A server
//!   that is down does no work for a refused connection, and an informer must come back within
//!   seconds of the server, however long the outage was;
//! - any other error — an error answer, or a transport failure that is not the connection's (TLS
//!   verification, DNS resolution, failing credentials or exec-credential plugin, a malformed
//!   answer), which stays until someone fixes it: the backoff's next delay.
//!
//! The backoff restarts from its first delay when the server has shown it is healthy again: a
//! watch delivered an event after the list — for a streaming list, after its initial-events-end
//! bookmark — ([`RetryPolicy::progress`]), or the server answered after its connection had failed
//! ([`RetryPolicy::answered`]). A list that succeeds, streaming or paged, is not progress by
//! itself: when every watch after it fails, the relists that follow space out along the backoff.
//! Differences from client-go, whose backoff only restarts after 2 minutes without any failure:
//! after an outage of any length client-go may sleep up to 60 s (30 s cap, jittered) past the
//! server's return, this policy at most `2 × unreachable`.
//!
//! Time comes from tokio's clock, so tests run it under a paused clock.

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

use crate::listwatch::Error;

/// Backoff parameters (client-go `wait.Backoff` plus the reset period and the unreachable pause).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// The largest base delay.
    pub cap: Duration,
    /// Growth factor per step.
    pub factor: f64,
    /// Jitter: each delay is `d + random[0, jitter) * d`.
    pub jitter: f64,
    /// The sequence restarts when the last restart is older than this.
    pub reset_after: Duration,
    /// The pause before retrying after a failure of the connection (refused or lost; jittered
    /// like the backoff).
    pub unreachable: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            cap: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
            unreachable: Duration::from_secs(1),
        }
    }
}

impl BackoffConfig {
    fn jittered(&self, base: Duration) -> Duration {
        if self.jitter > 0.0 { base + base.mul_f64(rand::rng().random_range(0.0..self.jitter)) } else { base }
    }
}

/// A stateful backoff (see the module documentation).
#[derive(Debug)]
pub struct Backoff {
    cfg: BackoffConfig,
    next: Duration,
    last_reset: Option<Instant>,
}

impl Backoff {
    /// A fresh backoff.
    pub fn new(cfg: BackoffConfig) -> Self {
        Backoff { cfg, next: cfg.initial, last_reset: None }
    }

    /// The next delay (advances the sequence).
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        match self.last_reset {
            Some(t) if now.duration_since(t) <= self.cfg.reset_after => {}
            _ => self.reset_at(now),
        }
        let base = self.next.min(self.cfg.cap);
        let grown = base.mul_f64(self.cfg.factor);
        self.next = if grown > self.cfg.cap { self.cfg.cap } else { grown };
        self.cfg.jittered(base)
    }

    /// Restarts the sequence: the next delay is the first one.
    pub fn reset(&mut self) {
        self.reset_at(Instant::now());
    }

    fn reset_at(&mut self, now: Instant) {
        self.next = self.cfg.initial;
        self.last_reset = Some(now);
    }

    /// Sleeps for the next delay.
    pub async fn wait(&mut self) {
        let d = self.next_delay();
        tokio::time::sleep(d).await;
    }
}

/// Chooses the delay before each retry (see the module documentation).
#[derive(Debug)]
pub struct RetryPolicy {
    cfg: BackoffConfig,
    backoff: Backoff,
    unreachable: bool,
}

impl RetryPolicy {
    /// A policy with a fresh backoff.
    pub fn new(cfg: BackoffConfig) -> Self {
        RetryPolicy { cfg, backoff: Backoff::new(cfg), unreachable: false }
    }

    /// The delay before retrying after `err`.
    pub fn delay(&mut self, err: &Error) -> Duration {
        if err.is_connection_failure() {
            self.unreachable = true;
            return self.cfg.jittered(self.cfg.unreachable);
        }
        if let Error::Transport { .. } = err {
            // No answer, but not for want of a server: the cause stays until it is fixed.
            return self.backoff.next_delay();
        }
        self.answered();
        match err.retry_after() {
            Some(after) => after.min(self.cfg.cap),
            None => self.backoff.next_delay(),
        }
    }

    /// The server answered (any HTTP response, success or error): if the connection to it had
    /// failed, the backoff restarts, since a server that comes back is a new server.
    pub fn answered(&mut self) {
        if self.unreachable {
            self.unreachable = false;
            self.backoff.reset();
        }
    }

    /// A watch delivered an event after the list (a successful list alone is not progress): the
    /// server is healthy, the backoff restarts.
    pub fn progress(&mut self) {
        self.unreachable = false;
        self.backoff.reset();
    }

    /// Whether the last failure was a failure of the connection itself (refused or lost).
    pub fn is_unreachable(&self) -> bool {
        self.unreachable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listwatch::{Status, TransportFailure};

    #[tokio::test(start_paused = true)]
    async fn doubles_to_the_cap_with_jitter_and_resets() {
        let mut b = Backoff::new(BackoffConfig::default());
        let mut base = 0.8;
        for _ in 0..10 {
            let d = b.next_delay().as_secs_f64();
            let expect = f64::min(base, 30.0);
            assert!(d >= expect && d < 2.0 * expect + 1e-9, "{d} not in [{expect}, {})", 2.0 * expect);
            base *= 2.0;
        }
        tokio::time::advance(Duration::from_secs(121)).await;
        let d = b.next_delay().as_secs_f64();
        assert!((0.8..1.6).contains(&d), "reset after 2 min: {d}");
    }

    #[tokio::test(start_paused = true)]
    async fn no_jitter_is_exact() {
        let mut b = Backoff::new(BackoffConfig {
            jitter: 0.0,
            initial: Duration::from_millis(10),
            cap: Duration::from_millis(100),
            ..Default::default()
        });
        let ds: Vec<u128> = (0..6).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(ds, [10, 20, 40, 80, 100, 100]);
        b.reset();
        assert_eq!(b.next_delay().as_millis(), 10);
    }

    fn exact() -> BackoffConfig {
        BackoffConfig {
            jitter: 0.0,
            initial: Duration::from_millis(800),
            cap: Duration::from_secs(30),
            unreachable: Duration::from_secs(1),
            ..Default::default()
        }
    }

    fn internal() -> Error {
        Error::api(Status { code: 500, reason: "InternalError".into(), ..Default::default() })
    }

    fn refused() -> Error {
        Error::Transport { message: "connection refused".into(), failure: TransportFailure::ConnectionRefused }
    }

    fn transport(failure: TransportFailure) -> Error {
        Error::Transport { message: String::new(), failure }
    }

    /// A failure of the connection gets the short pause; any other transport failure (TLS, DNS,
    /// credentials, a malformed answer) the exponential backoff, as an error answer does.
    #[tokio::test(start_paused = true)]
    async fn only_connection_failures_get_the_short_pause() {
        let mut p = RetryPolicy::new(exact());
        let ms = |d: Duration| d.as_millis();
        for _ in 0..3 {
            assert_eq!(ms(p.delay(&transport(TransportFailure::ConnectionLost))), 1000);
            assert_eq!(ms(p.delay(&transport(TransportFailure::ConnectionRefused))), 1000);
        }
        let other: Vec<u128> = (0..7).map(|_| ms(p.delay(&transport(TransportFailure::Other)))).collect();
        assert_eq!(other, [800, 1600, 3200, 6400, 12800, 25600, 30000]);
    }

    #[tokio::test(start_paused = true)]
    async fn unreachable_servers_get_a_short_pause_that_leaves_the_backoff_alone() {
        let mut p = RetryPolicy::new(exact());
        let ms = |d: Duration| d.as_millis();
        assert_eq!(ms(p.delay(&internal())), 800);
        assert_eq!(ms(p.delay(&internal())), 1600);
        for _ in 0..100 {
            assert_eq!(ms(p.delay(&refused())), 1000, "however long the outage");
        }
        assert!(p.is_unreachable());
        // The server answers again: a new server, the backoff starts over.
        assert_eq!(ms(p.delay(&internal())), 800);
        assert!(!p.is_unreachable());
        assert_eq!(ms(p.delay(&internal())), 1600);
        assert_eq!(ms(p.delay(&internal())), 3200);
        p.progress();
        assert_eq!(ms(p.delay(&internal())), 800, "progress restarts the backoff");
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_obeyed_up_to_the_cap_without_advancing_the_backoff() {
        let mut p = RetryPolicy::new(exact());
        let with_ra = |secs: u64| Error::Api {
            status: Box::new(Status { code: 429, reason: "TooManyRequests".into(), ..Default::default() }),
            retry_after: Some(Duration::from_secs(secs)),
        };
        assert_eq!(p.delay(&internal()).as_millis(), 800);
        assert_eq!(p.delay(&with_ra(1)), Duration::from_secs(1));
        assert_eq!(p.delay(&with_ra(7)), Duration::from_secs(7));
        assert_eq!(p.delay(&with_ra(3600)), Duration::from_secs(30), "capped");
        assert_eq!(p.delay(&internal()).as_millis(), 1600, "the backoff did not advance");
    }
}
