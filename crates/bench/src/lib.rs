//! The benchmark workload and measurements shared by `informer bench` and the side-by-side
//! binaries (`w1-compare`, `kube-runtime-bench`): the W1 server ([`w1`]) and the readings every
//! client takes the same way ([`measure`]). See docs/benchmarks.md.

#![deny(missing_docs)]

pub mod measure;
pub mod w1;
