//! informer

pub mod workqueue;
