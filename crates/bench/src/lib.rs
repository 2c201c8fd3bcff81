//! The benchmark workload and measurements shared by `informer bench` and the side-by-side
//! binaries (`w1-compare`, `kube-runtime-bench`, the server benchmarks): the W1 server ([`w1`]),
//! the readings every client takes the same way ([`measure`]), the server storages
//! ([`backend`]) and the loading of a server with objects and their status (`seed`). See docs/benchmarks.md.

#![deny(missing_docs)]

pub mod backend;
pub mod measure;
#[cfg(feature = "kube-runtime")]
pub mod seed;
pub mod w1;
