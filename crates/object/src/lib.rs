//! Kubernetes objects as the API server sent them: bytes in, [`Object`]s out.
//!
//! The contract:
//! - **Bytes → [`Object`].** An object is built from its JSON by reading only its identity
//!   (namespace, name, resourceVersion, uid, labels, and the positions of `managedFields`' field
//!   sets); the rest is validated and kept as received. [`Object::raw_json`] gives back exactly the
//!   bytes received. Malformed JSON or a missing name is a [`DecodeError`], never a panic.
//! - **A typed decode equals `serde_json::from_slice`.** [`Object::get`] and [`Object::decode`]
//!   give, for every target type, exactly what `serde_json::from_slice` of the received bytes
//!   gives: the same value, or an error where serde_json fails. They are faster than serde_json
//!   (a typed decoder over the scanner's structural index, field sets shared by many objects copied
//!   decoded), and whatever they do not reproduce exactly is handed to serde_json itself.
//! - **Watch and list bodies frame into objects** ([`frame`]): one watch event per line, list items
//!   as their bytes arrive, whatever the chunking; corrupt, truncated or oversized input is a
//!   [`frame::FrameError`].
//!
//! Property tests hold the contract against serde_json on generated and byte-edited documents
//! (pods captured from a real kube-apiserver among them); `cargo bench -p informer-object`
//! measures it.
//!
//! ```
//! use informer_object::Object;
//! use k8s_openapi::api::core::v1::Pod;
//! let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"prod",
//!     "resourceVersion":"7"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;
//! let pod: Object<Pod> = Object::from_json(&json[..]).unwrap();
//! assert_eq!((pod.key().as_str(), pod.resource_version()), ("prod/web", Some("7")));
//! assert_eq!(pod.decode().unwrap(), serde_json::from_slice::<Pod>(json).unwrap());
//! ```
//!
//! Unsafe code, each use with a `// SAFETY:` comment: the AVX2 kernel of the scanner (its loads and
//! the runtime-detected dispatch), the single allocation of an object and of a key (initialized
//! bytes, known UTF-8), and the seed-type match of the substituted decode (a move between
//! identical types).

#![deny(missing_docs)]

pub mod frame;
mod key;
mod object;

pub use key::{KeyError, ObjectKey};
pub use object::{DecodeError, Object};
