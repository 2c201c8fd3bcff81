//! Object keys: the identity of an object in every cache, queue and index (`namespace/name`, or
//! `name` for cluster-scoped objects, as client-go's `MetaNamespaceKeyFunc` formats it). The type
//! lives in the `informer-object` crate; see [`ObjectKey`].

pub use informer_object::{KeyError, ObjectKey};
