//! What most programs use, in one import: `use informer::prelude::*;`.
//!
//! ```no_run
//! use informer::prelude::*;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::new(kube::Client::try_default().await?);
//! let pods = factory.informer::<Pod>();
//! pods.add_event_handler(HandlerFns::new().on_add(|pod, _| println!("added {}", pod.key())))?;
//! factory.start(&CancellationToken::new());
//! # Ok(()) }
//! ```

pub use crate::runner::{Action, ControllerRunner};
pub use crate::{
    BacklogPolicy, CancellationToken, DeletedObject, HandlerFns, HandlerOptions, HandlerRegistration, InformerOptions,
    KubeListerWatcher, LabelSelector, Lister, Notification, NotificationStream, Object, ObjectKey,
    ResourceEventHandler, SharedIndexInformer, SharedInformerFactory,
};
