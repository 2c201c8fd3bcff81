//! Retrying a write that lost a race (client-go's `util/retry`): [`retry_on_conflict`] runs a
//! read-modify-write again when the server answers 409 Conflict, [`on_error`] when any error the
//! caller names retriable comes back.
//!
//! Invariants, as client-go's `wait.ExponentialBackoff` under them: the function runs at most
//! [`Backoff::steps`] times; between two runs the pause is the step's duration jittered up to
//! `+jitter ×` itself, the duration then multiplied by `factor`; a duration past `cap` ends
//! the runs; an error that is not retriable is returned at once, and when the
//! runs are spent the last retriable error is. The function must read the object again on every
//! run: a conflict means the copy it changed is stale.
//!
//! Differences: `steps: 0` runs the function once (client-go runs nothing and reports success);
//! when the cap ends the runs, the pause before the run that will not come is not slept; factors
//! and jitters that would overflow a `Duration` saturate instead of panicking.

use std::future::Future;
use std::time::Duration;

use rand::Rng;

/// How often and how far apart to retry (client-go's `wait.Backoff`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The most runs (0 is taken as 1).
    pub steps: u32,
    /// The first pause.
    pub duration: Duration,
    /// What each pause is multiplied by for the next.
    pub factor: f64,
    /// Each pause is lengthened by up to this fraction of itself, at random.
    pub jitter: f64,
    /// The longest pause (`None`: no limit); a pause that would be longer ends the runs.
    pub cap: Option<Duration>,
}

/// For conflicts between clients changing the same object (client-go's `DefaultRetry`): 5 runs,
/// 10 ms apart.
pub const DEFAULT_RETRY: Backoff =
    Backoff { steps: 5, duration: Duration::from_millis(10), factor: 1.0, jitter: 0.1, cap: None };

/// For a client changing an object that controllers also change (client-go's `DefaultBackoff`):
/// 4 runs, 10, 50 and 250 ms apart.
pub const DEFAULT_BACKOFF: Backoff =
    Backoff { steps: 4, duration: Duration::from_millis(10), factor: 5.0, jitter: 0.1, cap: None };

impl Backoff {
    /// The next pause, and the state after it (client-go's `Backoff.Step`).
    fn step(&mut self) -> Duration {
        let mut pause = self.duration;
        if self.steps > 0 {
            self.steps -= 1;
            if self.factor != 0.0 {
                self.duration = scaled(self.duration, self.factor);
                if let Some(cap) = self.cap.filter(|c| !c.is_zero() && self.duration > *c) {
                    self.duration = cap;
                    self.steps = 0;
                }
            }
        }
        if self.jitter > 0.0 && self.jitter.is_finite() {
            pause = pause.saturating_add(scaled(pause, rand::rng().random_range(0.0..self.jitter)));
        }
        pause
    }
}

/// `d × factor`, at most `Duration::MAX`, at least zero.
fn scaled(d: Duration, factor: f64) -> Duration {
    let fallback = if factor > 0.0 { Duration::MAX } else { Duration::ZERO };
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(fallback)
}

/// Runs `f` until it succeeds, returns an error `retriable` refuses, or `backoff`'s runs are
/// spent (then the last error).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use informer::retry::{DEFAULT_RETRY, on_error};
/// let mut runs = 0;
/// let out: Result<u32, &str> = on_error(DEFAULT_RETRY, |e| *e == "busy", || {
///     runs += 1;
///     let answer = if runs < 3 { Err("busy") } else { Ok(runs) };
///     async move { answer }
/// })
/// .await;
/// assert_eq!(out, Ok(3));
/// # });
/// ```
pub async fn on_error<T, E, F, Fut>(
    mut backoff: Backoff,
    mut retriable: impl FnMut(&E) -> bool,
    mut f: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    backoff.steps = backoff.steps.max(1);
    loop {
        let e = match f().await {
            Ok(value) => return Ok(value),
            Err(e) if retriable(&e) => e,
            Err(e) => return Err(e),
        };
        if backoff.steps == 1 {
            return Err(e);
        }
        let pause = backoff.step();
        if backoff.steps == 0 {
            // The cap was reached: no run follows (client-go sleeps the pause first).
            return Err(e);
        }
        tokio::time::sleep(pause).await;
    }
}

/// The reasons of apimachinery's `StatusReason`s, which decide over the code.
const KNOWN_REASONS: [&str; 19] = [
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// Whether an error is the server's Conflict (a write from a stale read), as apimachinery's
/// `IsConflict` judges: reason `Conflict`, or code 409 with a reason it does not know (an
/// `AlreadyExists` is a 409 too, and no conflict).
pub fn is_conflict(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(status) => {
            status.reason == "Conflict" || (status.code == 409 && !KNOWN_REASONS.contains(&status.reason.as_str()))
        }
        _ => false,
    }
}

/// Runs a read-modify-write `f` again while the server answers 409 Conflict, up to `backoff`'s
/// runs (client-go's `RetryOnConflict`). `f` must read the object afresh each time and return
/// the write's error unchanged; any other error, or the last conflict, is returned.
///
/// ```no_run
/// # async fn example(client: kube::Client) -> Result<(), kube::Error> {
/// use informer::retry::{DEFAULT_RETRY, retry_on_conflict};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{Api, PostParams};
///
/// let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
/// retry_on_conflict(DEFAULT_RETRY, || async {
///     let mut cm = configmaps.get("settings").await?;
///     cm.data.get_or_insert_with(Default::default).insert("mode".into(), "fast".into());
///     configmaps.replace("settings", &PostParams::default(), &cm).await
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn retry_on_conflict<T, F, Fut>(backoff: Backoff, f: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    on_error(backoff, is_conflict, f).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn runs_steps_times_with_steps_minus_one_pauses() {
        let start = tokio::time::Instant::now();
        let mut runs = Vec::new();
        let backoff = Backoff { jitter: 0.0, ..DEFAULT_BACKOFF };
        let out: Result<(), &str> = on_error(
            backoff,
            |_| true,
            || {
                runs.push(start.elapsed());
                async { Err("conflict") }
            },
        )
        .await;
        assert_eq!(out, Err("conflict"));
        let ms: Vec<u128> = runs.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, [0, 10, 60, 310]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_not_retriable_ends_at_once_and_success_returns_the_value() {
        let mut runs = 0;
        let out: Result<u8, &str> = on_error(
            DEFAULT_RETRY,
            |e| *e == "conflict",
            || {
                runs += 1;
                async { Err("forbidden") }
            },
        )
        .await;
        assert_eq!((out, runs), (Err("forbidden"), 1));

        let mut runs = 0;
        let out: Result<u8, &str> = on_error(
            DEFAULT_RETRY,
            |e| *e == "conflict",
            || {
                runs += 1;
                let r = if runs == 2 { Ok(7) } else { Err("conflict") };
                async move { r }
            },
        )
        .await;
        assert_eq!(out, Ok(7));
    }

    #[tokio::test(start_paused = true)]
    async fn the_cap_ends_the_runs_after_its_pause_and_jitter_stays_within_bounds() {
        let start = tokio::time::Instant::now();
        let mut runs = Vec::new();
        let backoff = Backoff {
            steps: 10,
            duration: Duration::from_millis(100),
            factor: 3.0,
            jitter: 0.0,
            cap: Some(Duration::from_millis(500)),
        };
        let _: Result<(), ()> = on_error(
            backoff,
            |_| true,
            || {
                runs.push(start.elapsed().as_millis());
                async { Err(()) }
            },
        )
        .await;
        // 100, then 300 (the next, 900, is past the cap and ends the runs without a pause).
        assert_eq!(runs, [0, 100]);
        let huge = Backoff { steps: 3, duration: Duration::MAX, factor: 1e300, jitter: f64::INFINITY, cap: None };
        let mut b = huge;
        assert_eq!((b.step(), b.step()), (Duration::MAX, Duration::MAX));
        assert_eq!(start.elapsed(), Duration::from_millis(100));

        let mut b = Backoff { jitter: 0.5, ..DEFAULT_RETRY };
        for _ in 0..100 {
            let pause = b.step();
            assert!(pause >= Duration::from_millis(10) && pause < Duration::from_millis(15), "{pause:?}");
        }
    }

    #[tokio::test]
    async fn zero_steps_run_once() {
        let mut runs = 0;
        let out: Result<(), ()> = on_error(
            Backoff { steps: 0, ..DEFAULT_RETRY },
            |_| true,
            || {
                runs += 1;
                async { Err(()) }
            },
        )
        .await;
        assert_eq!((out, runs), (Err(()), 1));
    }
}
