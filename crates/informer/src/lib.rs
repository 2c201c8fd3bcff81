//! informer
