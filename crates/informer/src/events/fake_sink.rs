//! A sink for the broadcasters' tests (events.k8s.io's and core/v1's): it answers each write
//! from a script (an error, or success when the script says none or runs out) and keeps every
//! call with the time it came, under tokio's (paused) clock.
//!
//! Invariants: calls are kept in the order they came; a successful write answers the event as
//! the kind's `store` function makes it.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::time::Instant;

use super::SinkError;

/// One write a sink was asked for: its verb, the event's name and count, the patch, when.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) verb: &'static str,
    pub(crate) name: String,
    pub(crate) count: Option<i32>,
    pub(crate) patch: Option<Value>,
    pub(crate) at: Instant,
}

/// The scripted sink (cheap to clone: clones share their calls and script).
pub(crate) struct FakeSink<E>(Arc<Script<E>>);

impl<E> Clone for FakeSink<E> {
    fn clone(&self) -> Self {
        FakeSink(self.0.clone())
    }
}

pub(crate) struct Script<E> {
    calls: Mutex<Vec<Call>>,
    answers: Mutex<VecDeque<Option<SinkError>>>,
    made: tokio::sync::watch::Sender<usize>,
    /// The event's name and the count the calls record.
    describe: fn(&E) -> (String, Option<i32>),
    /// What a successful write answers, given the number of the call.
    store: fn(&E, usize) -> E,
}

impl<E> FakeSink<E> {
    /// A sink answering from `script`, describing and storing events with the given functions.
    pub(crate) fn new(
        script: Vec<Option<SinkError>>,
        describe: fn(&E) -> (String, Option<i32>),
        store: fn(&E, usize) -> E,
    ) -> Self {
        FakeSink(Arc::new(Script {
            calls: Mutex::new(Vec::new()),
            answers: Mutex::new(script.into()),
            made: tokio::sync::watch::channel(0).0,
            describe,
            store,
        }))
    }

    /// Records a call and answers it from the script.
    pub(crate) fn answer(&self, verb: &'static str, event: &E, patch: Option<&Value>) -> Result<E, SinkError> {
        let (name, count) = (self.0.describe)(event);
        let n = {
            let mut calls = self.0.calls.lock();
            calls.push(Call { verb, name, count, patch: patch.cloned(), at: Instant::now() });
            calls.len()
        };
        self.0.made.send_replace(n);
        match self.0.answers.lock().pop_front().flatten() {
            Some(e) => Err(e),
            None => Ok((self.0.store)(event, n)),
        }
    }

    /// The calls, once there are `n`.
    pub(crate) async fn calls(&self, n: usize) -> Vec<Call> {
        self.0.made.subscribe().wait_for(|m| *m >= n).await.unwrap();
        self.0.calls.lock().clone()
    }

    /// How many calls there were.
    pub(crate) fn count(&self) -> usize {
        self.0.calls.lock().len()
    }
}

/// A Status refusal for a script.
pub(crate) fn status(code: u16, reason: &str) -> Option<SinkError> {
    Some(SinkError::Status { code, reason: reason.into(), message: String::new() })
}

/// No answer, for a script.
pub(crate) fn unreachable() -> Option<SinkError> {
    Some(SinkError::Unreachable("connection refused".into()))
}
