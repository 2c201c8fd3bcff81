//! client-go's reflector backoff: 0.8 s doubling to a 30 s cap, each delay jittered up to +100%,
//! the whole sequence reset when the last reset is more than 2 minutes old.
//!
//! One [`Backoff`] is shared by every retry path of a reflector (relists, watch-establishment
//! retries, 429s, streaming-list retries), so a failing reflector stays near 0.22 requests/s.
//! Time comes from tokio's clock, so tests run it under a paused clock.

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

/// Backoff parameters (client-go `wait.Backoff` plus the reset period).
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
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            cap: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
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
            _ => {
                self.next = self.cfg.initial;
                self.last_reset = Some(now);
            }
        }
        let base = self.next.min(self.cfg.cap);
        let grown = base.mul_f64(self.cfg.factor);
        self.next = if grown > self.cfg.cap { self.cfg.cap } else { grown };
        if self.cfg.jitter > 0.0 { base + base.mul_f64(rand::rng().random_range(0.0..self.cfg.jitter)) } else { base }
    }

    /// Sleeps for the next delay.
    pub async fn wait(&mut self) {
        let d = self.next_delay();
        tokio::time::sleep(d).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
