//! The leader election state machine on paused time, against an in-memory lock: acquiring,
//! renewing, expiry after a leader dies, release on cancel, conflicts between racing candidates,
//! a leader that cannot renew stepping down before its lease can expire elsewhere, a leader
//! writing back a lease deleted or emptied under it, the health check of a stuck leader, the
//! `StoppedLeading` of every exit, wall clocks that jump or disagree, configuration checks and
//! the master-status metric.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::memory_lock::{Faults, MemoryStore};
use common::{LEASE, MAX_RETRY_WAIT, RENEW, RETRY, until_event};
use informer::leader_election::{
    LeaderElectionConfig, LeaderElectionMetrics, LeaderElectionRecord, LeaderElector, LeaderEvent, LeaderEvents,
};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

struct Candidate {
    elector: LeaderElector,
    events: LeaderEvents,
    faults: Faults,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Candidate {
    fn start(
        store: &Arc<MemoryStore>,
        who: &str,
        tweak: impl FnOnce(LeaderElectionConfig) -> LeaderElectionConfig,
    ) -> Self {
        let (lock, faults) = store.lock(who);
        let elector = LeaderElector::new(tweak(LeaderElectionConfig::new(lock, who))).unwrap();
        let events = elector.subscribe();
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (e, c) = (elector.clone(), cancel.clone());
            async move { e.run(c).await.unwrap() }
        });
        Candidate { elector, events, faults, cancel, task }
    }

    async fn next(&mut self) -> LeaderEvent {
        until_event(&mut self.events, Duration::from_secs(3600), |_| true).await
    }

    /// Waits for `NewLeader(Some(self))` then `StartedLeading`; returns the term's token.
    async fn expect_leading(&mut self) -> CancellationToken {
        let me = self.elector.identity().to_string();
        loop {
            match self.next().await {
                LeaderEvent::NewLeader(Some(who)) if who == me => break,
                LeaderEvent::NewLeader(_) => {}
                e => panic!("{me}: expected NewLeader({me}), got {e:?}"),
            }
        }
        match self.next().await {
            LeaderEvent::StartedLeading(t) => t,
            e => panic!("{me}: expected StartedLeading, got {e:?}"),
        }
    }

    async fn expect_new_leader(&mut self, who: Option<&str>) {
        match self.next().await {
            LeaderEvent::NewLeader(w) => assert_eq!(w.as_deref(), who),
            e => panic!("expected NewLeader({who:?}), got {e:?}"),
        }
    }

    async fn expect_stopped(&mut self) {
        match self.next().await {
            LeaderEvent::StoppedLeading => {}
            e => panic!("expected StoppedLeading, got {e:?}"),
        }
    }

    fn assert_quiet(&mut self) {
        if let Some(e) = self.events.try_recv() {
            panic!("{}: unexpected event {e:?}", self.elector.identity());
        }
    }
}

fn same(c: LeaderElectionConfig) -> LeaderElectionConfig {
    c
}

/// The last write by `who` at or before now.
fn last_write_by(store: &MemoryStore, who: &str) -> common::memory_lock::Write {
    store.writes().into_iter().rev().find(|w| w.by == who).expect("a write")
}

#[tokio::test(start_paused = true)]
async fn acquires_an_absent_lease_and_renews_it_every_retry_period() {
    let store = MemoryStore::new();
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = LeaderElectionMetrics::new(&mut registry);
    let mut a = Candidate::start(&store, "a", |c| c.metrics(&metrics).name("demo"));
    let term = a.expect_leading().await;
    assert!(a.elector.is_leader());
    assert_eq!(a.elector.leader().as_deref(), Some("a"));
    assert_eq!(metrics.master_status("demo"), Some(1));
    let created = store.record().unwrap();
    assert_eq!(created.holder_identity, "a");
    assert_eq!(created.lease_duration_seconds, 15);
    assert_eq!(created.lease_transitions, 0);
    assert!(created.acquire_time.is_some());
    assert_eq!(created.acquire_time, created.renew_time);

    tokio::time::sleep(Duration::from_secs(61)).await;
    let writes = store.writes();
    assert_eq!(writes.len(), 31, "one create, then a renewal every 2 s");
    for pair in writes.windows(2) {
        assert_eq!(pair[1].at - pair[0].at, RETRY);
        assert!(pair[1].record.renew_time > pair[0].record.renew_time);
        assert_eq!(pair[1].record.acquire_time, created.acquire_time);
        assert_eq!(pair[1].record.lease_transitions, 0);
        assert_eq!(pair[1].record.holder_identity, "a");
    }
    assert!(a.elector.is_leader() && !term.is_cancelled());
    a.assert_quiet();
    assert_eq!(metrics.slowpath("demo"), 0, "every renewal took the optimistic path");

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains(r#"leader_election_master_status{name="demo"} 1"#), "{text}");

    a.cancel.cancel();
    a.task.await.unwrap();
    assert!(term.is_cancelled() && !a.elector.is_leader());
    assert_eq!(metrics.master_status("demo"), Some(0));
    assert_eq!(store.record().unwrap().holder_identity, "a", "no release unless asked for");
}

#[tokio::test(start_paused = true)]
async fn a_candidate_takes_over_a_lease_duration_after_it_last_saw_the_dead_leader_renew() {
    let store = MemoryStore::new();
    let mut a = Candidate::start(&store, "a", same);
    let a_term = a.expect_leading().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut b = Candidate::start(&store, "b", same);
    b.expect_new_leader(Some("a")).await;

    // B stands by as long as A renews.
    tokio::time::sleep(Duration::from_secs(60)).await;
    b.assert_quiet();
    assert!(!b.elector.is_leader());

    // A dies: no release, no more renewals.
    a.task.abort();
    assert!(a.task.await.unwrap_err().is_cancelled());
    assert!(a_term.is_cancelled(), "dropping the elector ends its term");
    let died = last_write_by(&store, "a");
    let b_term = b.expect_leading().await;
    let waited = Instant::now() - died.at;
    assert!(waited >= LEASE, "took over {waited:?} after the last renewal");
    assert!(waited <= LEASE + 2 * MAX_RETRY_WAIT, "took over {waited:?} after the last renewal");
    let r = store.record().unwrap();
    assert_eq!(r.holder_identity, "b");
    assert_eq!(r.lease_transitions, 1);
    assert_eq!(r.acquire_time, r.renew_time);
    assert!(r.acquire_time > died.record.acquire_time);
    assert!(!b_term.is_cancelled() && b.elector.is_leader());
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_lets_a_successor_start_within_one_retry() {
    let store = MemoryStore::new();
    let mut a = Candidate::start(&store, "a", |c| c.release_on_cancel(true));
    let a_term = a.expect_leading().await;
    let mut b = Candidate::start(&store, "b", same);
    b.expect_new_leader(Some("a")).await;
    tokio::time::sleep(Duration::from_secs(30)).await;

    a.cancel.cancel();
    a.expect_stopped().await;
    assert!(a_term.is_cancelled());
    (&mut a.task).await.unwrap();
    let released = store.writes().into_iter().rev().find(|w| w.record.holder_identity.is_empty()).unwrap();
    assert_eq!(released.by, "a");
    let r = &released.record;
    assert_eq!((r.lease_duration_seconds, r.lease_transitions), (1, 0), "client-go's release record");
    assert_eq!(r.acquire_time, r.renew_time);
    a.expect_new_leader(None).await;
    assert_eq!(a.elector.leader(), None);

    b.expect_leading().await;
    let waited = Instant::now() - released.at;
    assert!(waited <= MAX_RETRY_WAIT, "took over {waited:?} after the release");
    let r = store.record().unwrap();
    assert_eq!((r.holder_identity.as_str(), r.lease_transitions, r.lease_duration_seconds), ("b", 1, 15));
}

#[tokio::test(start_paused = true)]
async fn candidates_racing_for_a_free_lease_conflict_and_exactly_one_wins() {
    let store = MemoryStore::new();
    store.put(LeaderElectionRecord { lease_duration_seconds: 1, lease_transitions: 7, ..Default::default() });
    let mut cs: Vec<Candidate> = ["a", "b", "c"].iter().map(|w| Candidate::start(&store, w, same)).collect();
    for c in &cs {
        // Every call takes 10 ms, so the three reads happen before any write.
        c.faults.latency(Duration::from_millis(10));
    }
    let [ca, cb, cc] = &mut cs[..] else { unreachable!() };
    let winner = tokio::select! {
        _ = ca.expect_leading() => "a",
        _ = cb.expect_leading() => "b",
        _ = cc.expect_leading() => "c",
    };
    assert_eq!(store.conflicts(), 2, "the two losers' writes were refused");
    tokio::time::sleep(Duration::from_secs(120)).await;
    let r = store.record().unwrap();
    assert_eq!((r.holder_identity.as_str(), r.lease_transitions), (winner, 8));
    let takeovers = store.writes().iter().filter(|w| w.by != "outside" && w.by != winner).count();
    assert_eq!(takeovers, 0, "only the winner ever wrote");
    for c in &mut cs {
        if c.elector.identity() != winner {
            assert!(!c.elector.is_leader());
            assert_eq!(c.elector.leader().as_deref(), Some(winner));
            while let Some(e) = c.events.try_recv() {
                assert!(matches!(&e, LeaderEvent::NewLeader(Some(w)) if w == winner), "{e:?}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_renewal_that_meets_a_newer_version_reads_the_lease_and_renews() {
    let store = MemoryStore::new();
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = LeaderElectionMetrics::new(&mut registry);
    let mut a = Candidate::start(&store, "a", |c| c.metrics(&metrics).name("x"));
    let term = a.expect_leading().await;
    // Renewals happen at even seconds; the test acts at odd ones.
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Someone else changed the object (its metadata): the optimistic write gets a conflict.
    store.touch();
    tokio::time::sleep(RETRY).await;
    assert_eq!(metrics.slowpath("x"), 1);
    assert_eq!(store.conflicts(), 1);
    // A renewal lands but its answer is lost: the next optimistic write is stale too.
    a.faults.lose_answers(true);
    tokio::time::sleep(RETRY).await;
    a.faults.lose_answers(false);
    tokio::time::sleep(RETRY).await;
    assert_eq!(metrics.slowpath("x"), 2);
    assert_eq!(store.conflicts(), 2);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(!term.is_cancelled() && a.elector.is_leader());
    a.assert_quiet();
    let r = store.record().unwrap();
    assert_eq!((r.holder_identity.as_str(), r.lease_transitions), ("a", 0));
}

/// A leader whose calls fail (or hang) steps down exactly a renew deadline after the start of
/// its last successful renewal, five seconds before another candidate may take over.
async fn steps_down_before_expiry(fault: impl Fn(&Faults, bool)) {
    let store = MemoryStore::new();
    let mut a = Candidate::start(&store, "a", same);
    let term = a.expect_leading().await;
    let mut b = Candidate::start(&store, "b", same);
    b.expect_new_leader(Some("a")).await;
    tokio::time::sleep(Duration::from_secs(21)).await;

    fault(&a.faults, true);
    let last = last_write_by(&store, "a").at;
    a.expect_stopped().await;
    let stepped_down = Instant::now();
    assert_eq!(stepped_down - last, RENEW);
    assert!(term.is_cancelled() && !a.elector.is_leader());

    b.expect_leading().await;
    let taken = Instant::now();
    assert!(taken - last >= LEASE, "B took over {:?} after A's last renewal", taken - last);
    assert!(taken - stepped_down >= LEASE - RENEW);

    // A recovers and stands by behind B.
    fault(&a.faults, false);
    a.expect_new_leader(Some("b")).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    a.assert_quiet();
    assert!(b.elector.is_leader() && !a.elector.is_leader());
    assert_eq!(store.record().unwrap().lease_transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_calls_fail_steps_down_before_the_lease_can_expire() {
    steps_down_before_expiry(Faults::fail).await;
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_calls_hang_steps_down_before_the_lease_can_expire() {
    steps_down_before_expiry(Faults::hang).await;
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_finds_another_holder_steps_down_at_once() {
    let store = MemoryStore::new();
    let mut a = Candidate::start(&store, "a", same);
    let term = a.expect_leading().await;
    // Someone else wrote the lease (as after this leader was paused for longer than the lease).
    let mut r = store.record().unwrap();
    r.holder_identity = "z".into();
    r.lease_transitions += 1;
    let put = Instant::now();
    store.put(r);
    a.expect_stopped().await;
    let waited = Instant::now() - put;
    assert!(waited <= RETRY, "stepped down {waited:?} after the lease was taken, not within one retry");
    assert!(term.is_cancelled());
    a.expect_new_leader(Some("z")).await;
    assert!(!a.elector.is_leader());
    assert!(store.writes().iter().rev().take_while(|w| w.by != "outside").all(|w| w.by != "a"));
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_finds_its_lease_deleted_creates_it_again_and_keeps_its_term() {
    let store = MemoryStore::new();
    let mut a = Candidate::start(&store, "a", same);
    let term = a.expect_leading().await;
    let first = store.record().unwrap();
    // Renewals happen at even seconds; the test acts at odd ones.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut r = store.record().unwrap();
    r.lease_transitions = 5;
    store.put(r);
    tokio::time::sleep(RETRY).await;
    assert_eq!(store.record().unwrap().lease_transitions, 5, "renewed over the outside write");
    store.remove();
    let removed = Instant::now();
    tokio::time::sleep(RETRY).await;
    let w = last_write_by(&store, "a");
    assert!(w.at > removed && w.at - removed <= RETRY, "created again {:?} after the delete", w.at - removed);
    // client-go creates the record prepared for its optimistic renewal: its own last write's
    // acquire time and transitions.
    let r = store.record().unwrap();
    assert_eq!((r.holder_identity.as_str(), r.lease_transitions), ("a", 5));
    assert_eq!(r.acquire_time, first.acquire_time);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(!term.is_cancelled() && a.elector.is_leader(), "the same term goes on");
    a.assert_quiet();
    assert_eq!(store.record().unwrap().lease_transitions, 5);
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_finds_no_holder_takes_the_lease_back_and_keeps_its_term() {
    let store = MemoryStore::new();
    let mut a = Candidate::start(&store, "a", same);
    let term = a.expect_leading().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = store.record().unwrap();
    // Someone cleared the holder, as a release writes it.
    let then: Timestamp = "2025-01-01T00:00:00.000000Z".parse().unwrap();
    store.put(LeaderElectionRecord {
        holder_identity: String::new(),
        lease_duration_seconds: 1,
        acquire_time: Some(then),
        renew_time: Some(then),
        lease_transitions: 3,
        ..Default::default()
    });
    let cleared = Instant::now();
    tokio::time::sleep(RETRY).await;
    let w = last_write_by(&store, "a");
    assert!(w.at > cleared && w.at - cleared <= RETRY);
    let r = store.record().unwrap();
    assert_eq!(r.holder_identity, "a");
    assert_eq!(r.lease_transitions, 4, "a holder other than itself was read: one more transition");
    assert_eq!(r.lease_duration_seconds, 15);
    assert_eq!(r.acquire_time, before.acquire_time, "client-go keeps the acquire time of its own last write");
    assert!(r.renew_time > Some(then));
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(!term.is_cancelled() && a.elector.is_leader(), "the same term goes on");
    a.assert_quiet();
    assert_eq!(store.record().unwrap().lease_transitions, 4);
}

/// `check` fails only for a term its task has not ended although the last renewal is more than
/// the lease duration plus the tolerance old: here, while `run`'s future is not polled.
#[tokio::test(start_paused = true)]
async fn check_reports_a_stuck_leader_past_its_lease() {
    let store = MemoryStore::new();
    let (lock, _) = store.lock("a");
    let elector = LeaderElector::new(LeaderElectionConfig::new(lock, "a").name("demo")).unwrap();
    let mut events = elector.subscribe();
    assert!(elector.check(Duration::ZERO).is_ok(), "standing by");
    let cancel = CancellationToken::new();
    let mut run = std::pin::pin!(elector.run(cancel.clone()));
    let started = tokio::select! {
        _ = &mut run => panic!("run returned"),
        e = until_event(&mut events, LEASE, |e| matches!(e, LeaderEvent::StartedLeading(_))) => e,
    };
    let LeaderEvent::StartedLeading(term) = started else { unreachable!() };
    tokio::select! {
        _ = &mut run => panic!("run returned"),
        () = tokio::time::sleep(Duration::from_secs(31)) => {}
    }
    assert!(elector.check(Duration::ZERO).is_ok(), "renewing");

    // `run` is not polled from here on: the elector is stuck.
    let last = last_write_by(&store, "a").at;
    tokio::time::sleep_until(last + LEASE).await;
    assert!(!elector.is_leader(), "the belief ended at the renew deadline");
    assert!(!term.is_cancelled(), "the token waits for the elector's task");
    assert!(elector.check(Duration::ZERO).is_ok(), "exactly the lease duration: tolerated");
    tokio::time::sleep(Duration::from_millis(1)).await;
    let err = elector.check(Duration::ZERO).unwrap_err();
    assert_eq!(err.name, "demo");
    assert_eq!(err.since_renewal, LEASE + Duration::from_millis(1));
    assert!(elector.check(Duration::from_secs(5)).is_ok());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(elector.check(Duration::from_secs(5)).is_err());

    // Running again, the elector ends the term at once, and the check passes.
    let resumed = tokio::time::Instant::now();
    tokio::select! {
        _ = &mut run => panic!("run returned"),
        _ = until_event(&mut events, LEASE, |e| matches!(e, LeaderEvent::StoppedLeading)) => {}
    }
    assert_eq!(tokio::time::Instant::now(), resumed, "the term ends without waiting");
    assert!(term.is_cancelled());
    assert!(elector.check(Duration::ZERO).is_ok());
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn every_exit_of_run_reports_stopped_leading() {
    let store = MemoryStore::new();
    store.put(LeaderElectionRecord { holder_identity: "z".into(), lease_duration_seconds: 3600, ..Default::default() });
    // Cancelled while standing by behind another holder: StoppedLeading, as client-go's
    // OnStoppedLeading runs whenever Run returns.
    let mut b = Candidate::start(&store, "b", same);
    b.expect_new_leader(Some("z")).await;
    b.cancel.cancel();
    b.expect_stopped().await;
    (&mut b.task).await.unwrap();
    b.assert_quiet();

    // Its future dropped while standing by: the same.
    let mut c = Candidate::start(&store, "c", same);
    c.expect_new_leader(Some("z")).await;
    c.task.abort();
    c.expect_stopped().await;
    c.assert_quiet();

    // A leader cancelled: the StoppedLeading ending its term is the only one.
    store.remove();
    let mut a = Candidate::start(&store, "a", same);
    a.expect_leading().await;
    a.cancel.cancel();
    a.expect_stopped().await;
    (&mut a.task).await.unwrap();
    a.assert_quiet();

    // A leader that lost its term and is cancelled while campaigning again: one for the term,
    // one for the exit.
    store.remove();
    let mut d = Candidate::start(&store, "d", same);
    d.expect_leading().await;
    d.faults.fail(true);
    d.expect_stopped().await;
    tokio::time::sleep(RETRY * 3).await;
    d.assert_quiet();
    d.cancel.cancel();
    d.expect_stopped().await;
    (&mut d.task).await.unwrap();
    d.assert_quiet();
}

/// Wall clocks that jump or disagree change only the informational timestamps: A's clock is a
/// day behind and jumps a week further back mid-term, B's is a day ahead and jumps forward; A
/// keeps leading, and B takes over exactly as without skew, a lease duration after it last saw
/// the record change.
#[tokio::test(start_paused = true)]
async fn wall_clock_skew_and_jumps_do_not_move_expiry() {
    let store = MemoryStore::new();
    let day = SignedDuration::from_hours(24);
    let a_offset = Arc::new(parking_lot::Mutex::new(-day));
    let b_offset = Arc::new(parking_lot::Mutex::new(day));
    let clock = |o: &Arc<parking_lot::Mutex<SignedDuration>>| {
        let o = o.clone();
        move || Timestamp::now().checked_add(*o.lock()).unwrap()
    };
    let mut a = Candidate::start(&store, "a", |c| c.wall_clock(clock(&a_offset)));
    let a_term = a.expect_leading().await;
    let mut b = Candidate::start(&store, "b", |c| c.wall_clock(clock(&b_offset)));
    b.expect_new_leader(Some("a")).await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    *a_offset.lock() = -day * 8;
    *b_offset.lock() = day * 8;
    tokio::time::sleep(Duration::from_secs(40)).await;
    b.assert_quiet();
    assert!(a.elector.is_leader() && !a_term.is_cancelled());
    let before_jump = store.writes().iter().filter(|w| w.by == "a").count();
    assert!(before_jump >= 30);
    let r = store.record().unwrap();
    assert!(r.renew_time.unwrap() < Timestamp::now().checked_sub(day * 7).unwrap(), "{r:?}");

    a.task.abort();
    let _ = a.task.await;
    let died = last_write_by(&store, "a");
    b.expect_leading().await;
    let waited = Instant::now() - died.at;
    assert!(waited >= LEASE && waited <= LEASE + 2 * MAX_RETRY_WAIT, "{waited:?}");
    let r = store.record().unwrap();
    assert!(r.acquire_time.unwrap() > Timestamp::now().checked_add(day * 7).unwrap(), "{r:?}");
}

#[tokio::test(start_paused = true)]
async fn stamps_from_a_custom_wall_clock_are_written_in_microseconds() {
    let store = MemoryStore::new();
    let t: Timestamp = "2026-03-01T10:00:00.123456789Z".parse().unwrap();
    let mut a = Candidate::start(&store, "a", |c| c.wall_clock(move || t));
    a.expect_leading().await;
    tokio::time::sleep(RETRY * 2 + Duration::from_secs(1)).await;
    let micro: Timestamp = "2026-03-01T10:00:00.123456Z".parse().unwrap();
    let writes = store.writes();
    assert!(writes.len() >= 2, "a create and a renewal: {writes:?}");
    for w in writes {
        assert_eq!((w.record.acquire_time, w.record.renew_time), (Some(micro), Some(micro)), "{w:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_lease_written_by_another_client_is_judged_by_its_own_duration() {
    // A holder with a 4 s lease whose timestamps are a year old: expiry comes from the record's
    // duration and the local observation, not from our 15 s nor from the old renewTime.
    let store = MemoryStore::new();
    let old: Timestamp = "2025-01-01T00:00:00.000000Z".parse().unwrap();
    let held = |n: i64| LeaderElectionRecord {
        holder_identity: "other".into(),
        lease_duration_seconds: 4,
        acquire_time: Some(old),
        renew_time: Some(old.checked_add(SignedDuration::from_secs(n)).unwrap()),
        lease_transitions: 3,
        ..Default::default()
    };
    store.put(held(0));
    let mut b = Candidate::start(&store, "b", same);
    b.expect_new_leader(Some("other")).await;
    for n in 1..=10 {
        tokio::time::sleep(Duration::from_secs(3)).await;
        store.put(held(n));
    }
    b.assert_quiet();
    let last = Instant::now();
    b.expect_leading().await;
    let waited = Instant::now() - last;
    assert!(waited >= Duration::from_secs(4) && waited <= Duration::from_secs(4) + 2 * MAX_RETRY_WAIT, "{waited:?}");
    assert_eq!(store.record().unwrap().lease_transitions, 4);
}

#[tokio::test(start_paused = true)]
async fn a_second_run_is_refused_and_events_follow_every_transition() {
    let store = MemoryStore::new();
    let mut a = Candidate::start(&store, "a", same);
    a.expect_leading().await;
    assert!(a.elector.run(CancellationToken::new()).await.is_err());
    // Lose the lease, then win it back: a new term with a new token.
    a.faults.fail(true);
    a.expect_stopped().await;
    a.faults.fail(false);
    // The record still names it, so no new leader is reported: the next term just starts.
    let second = match a.next().await {
        LeaderEvent::StartedLeading(t) => t,
        e => panic!("expected StartedLeading, got {e:?}"),
    };
    assert!(!second.is_cancelled() && a.elector.is_leader());
    let r = store.record().unwrap();
    assert_eq!((r.holder_identity.as_str(), r.lease_transitions), ("a", 0), "still its own lease: a renewal");
}

#[test]
fn configuration_is_checked_as_client_go_does() {
    let store = MemoryStore::new();
    let cfg = || LeaderElectionConfig::new(store.lock("a").0, "a");
    assert!(cfg().validate().is_ok());
    assert_eq!(cfg().lease_duration_seconds(), 15);
    let bad = [
        LeaderElectionConfig::new(store.lock("a").0, ""),
        cfg().renew_deadline(Duration::from_secs(15)),
        cfg().retry_period(Duration::from_secs(9)),
        cfg().retry_period(Duration::ZERO),
        // 10.9 s is written as 10: not longer than the renew deadline.
        cfg().lease_duration(Duration::from_millis(10_900)),
        // 1.2 × the retry period does not fit in a Duration: refused, not a panic.
        cfg().retry_period(Duration::MAX),
        cfg().lease_duration(Duration::MAX).renew_deadline(Duration::MAX).retry_period(Duration::MAX),
    ];
    for c in bad {
        assert!(LeaderElector::new(c.clone()).is_err(), "{c:?}");
    }
    assert!(
        cfg()
            .lease_duration(Duration::from_secs(2))
            .renew_deadline(Duration::from_millis(1500))
            .retry_period(Duration::from_millis(500))
            .validate()
            .is_ok()
    );
}
