//! The leader election record: what a lock stores (client-go's `LeaderElectionRecord`) and its
//! mapping to a `coordination.k8s.io/v1` `LeaseSpec`.
//!
//! Invariants: the mapping is client-go's (`LeaderElectionRecordToLeaseSpec` and back), so a
//! Lease written by either elector reads the same in the other: every field the elector writes
//! is present (an empty `holderIdentity` is written as `""`, never left out), times are
//! `MicroTime` (RFC 3339 with exactly six fractional digits, UTC), and `preferredHolder` and
//! `strategy` are read (they count as changes of the record) but never written. Timestamps in a
//! record are informational: the elector never compares them with its own clock.

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;

/// The state of an election as stored in its lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// The identity holding the lease; empty when nobody holds it (after a release).
    pub holder_identity: String,
    /// How long, in whole seconds, others must see the record unchanged before taking over.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lease (by the holder's wall clock).
    pub acquire_time: Option<Timestamp>,
    /// When the current holder last renewed the lease (by the holder's wall clock).
    pub renew_time: Option<Timestamp>,
    /// How many times the lease changed hands.
    pub lease_transitions: i32,
    /// Coordinated leader election's preferred holder (read only).
    pub preferred_holder: Option<String>,
    /// Coordinated leader election's strategy (read only).
    pub strategy: Option<String>,
}

impl LeaderElectionRecord {
    /// Reads a Lease's spec (absent fields read as empty, zero or `None`, as in client-go).
    pub fn from_lease_spec(spec: &LeaseSpec) -> Self {
        LeaderElectionRecord {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            lease_transitions: spec.lease_transitions.unwrap_or(0),
            preferred_holder: spec.preferred_holder.clone().filter(|s| !s.is_empty()),
            strategy: spec.strategy.clone().filter(|s| !s.is_empty()),
        }
    }

    /// The Lease spec that stores this record, with every field client-go writes.
    pub fn to_lease_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.map(MicroTime),
            renew_time: self.renew_time.map(MicroTime),
            lease_transitions: Some(self.lease_transitions),
            preferred_holder: self.preferred_holder.clone(),
            strategy: self.strategy.clone(),
        }
    }

    /// Whether someone holds the lease.
    pub fn is_held(&self) -> bool {
        !self.holder_identity.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_spec_round_trip_and_wire_format() {
        let t: Timestamp = "2026-03-01T10:00:00.123456Z".parse().unwrap();
        let r = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(t),
            renew_time: Some(t),
            lease_transitions: 3,
            ..Default::default()
        };
        let spec = r.to_lease_spec();
        assert_eq!(LeaderElectionRecord::from_lease_spec(&spec), r);
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            serde_json::json!({"holderIdentity": "a", "leaseDurationSeconds": 15,
                "acquireTime": "2026-03-01T10:00:00.123456Z", "renewTime": "2026-03-01T10:00:00.123456Z",
                "leaseTransitions": 3})
        );
        // A released lease keeps an empty holderIdentity on the wire.
        let released = LeaderElectionRecord { holder_identity: String::new(), ..r };
        assert_eq!(serde_json::to_value(released.to_lease_spec()).unwrap()["holderIdentity"], "");
    }

    #[test]
    fn absent_fields_read_as_empty() {
        let r = LeaderElectionRecord::from_lease_spec(&LeaseSpec::default());
        assert_eq!(r, LeaderElectionRecord::default());
        assert!(!r.is_held());
    }
}
