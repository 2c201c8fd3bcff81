//! Prometheus metrics of leader electors, with client-go's names (component-base's
//! `leaderelection` metrics provider).
//!
//! | metric | type | labels | updated |
//! |---|---|---|---|
//! | `leader_election_master_status` | gauge | `name` | 1 when the elector starts leading, 0 when it is created and when it stops leading |
//! | `leader_election_slowpath_total` | counter | `name` | each renewal that had to read the lease first (the optimistic write failed) |
//!
//! A [`LeaderElectionMetrics`] is registered **once** per registry and shared by every elector
//! reporting to it; `name` is the elector's [`name`](super::LeaderElectionConfig::name).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Labels of the leader election series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ElectionLabels {
    /// The election's name (by default the lock's name).
    pub name: String,
}

/// The leader election metric families (see the module docs). Cheap to clone.
///
/// ```
/// use informer::leader_election::LeaderElectionMetrics;
/// use prometheus_client::registry::Registry;
/// let mut registry = Registry::default();
/// let metrics = LeaderElectionMetrics::new(&mut registry);
/// assert_eq!(metrics.master_status("my-controller"), None);
/// ```
#[derive(Clone, Debug)]
pub struct LeaderElectionMetrics {
    status: Family<ElectionLabels, Gauge>,
    slowpath: Family<ElectionLabels, Counter>,
}

impl LeaderElectionMetrics {
    /// Creates the families and registers them in `registry`. Call it once per registry.
    pub fn new(registry: &mut Registry) -> Self {
        let m = LeaderElectionMetrics { status: Family::default(), slowpath: Family::default() };
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            m.status.clone(),
        );
        registry.register(
            "leader_election_slowpath",
            "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
            m.slowpath.clone(),
        );
        m
    }

    /// `leader_election_master_status{name}` (None before any elector of that name exists).
    pub fn master_status(&self, name: &str) -> Option<i64> {
        self.status.get(&ElectionLabels { name: name.to_string() }).map(|g| g.get())
    }

    /// `leader_election_slowpath_total{name}` (0 when absent).
    pub fn slowpath(&self, name: &str) -> u64 {
        self.slowpath.get(&ElectionLabels { name: name.to_string() }).map(|c| c.get()).unwrap_or(0)
    }

    pub(crate) fn series(&self, name: &str) -> ElectionSeries {
        let l = ElectionLabels { name: name.to_string() };
        ElectionSeries {
            status: self.status.get_or_create(&l).clone(),
            slowpath: self.slowpath.get_or_create(&l).clone(),
        }
    }
}

/// One elector's series, resolved once.
#[derive(Clone, Debug)]
pub(crate) struct ElectionSeries {
    pub status: Gauge,
    pub slowpath: Counter,
}
