//! The benchmark workload and measurements shared by `informer bench` and the side-by-side
//! binaries (`w1-compare`, `kube-runtime-bench`, the server benchmarks): the W1 server ([`w1`]),
//! the readings every client takes the same way ([`measure`]) and the server storages
//! ([`backend`]). See docs/benchmarks.md.

#![deny(missing_docs)]

pub mod backend;
pub mod measure;
pub mod w1;
