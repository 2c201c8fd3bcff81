//! The decoders of list and watch bodies, for lister-watchers of one's own over raw HTTP (they
//! are [`KubeListerWatcher`](crate::KubeListerWatcher)'s; see [`crate::kube_lw`]).

pub use crate::kube_lw::{
    DEFAULT_MAX_EVENT_BYTES, Decoded, EventDecoder, ListDecoder, TypeMeta, decode_error_body, decode_list,
};
