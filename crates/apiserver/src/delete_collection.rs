//! `DELETE` of a collection, as kube-apiserver's registry deletes one: the collection is listed
//! a page at a time (the request's `limit`, else pages of [`PAGE_SIZE`]) and every listed object
//! deleted with the request's options; an object already gone is passed over, any other failure
//! is the answer.
//!
//! Invariants: with a `limit` only that page is deleted, and the answer is that page as a LIST
//! answers it (its `continue` token deletes the next); without one every page is, and the answer
//! lists every object deleted under the first page's metadata. Admission sees each deletion as
//! kube's DeleteCollection offers it: the object as `oldObject`, no name, and the request's
//! namespace (none for a cluster-scoped resource).

use std::sync::Arc;
use std::time::Duration;

use crate::delete_options::DeleteOpts;
use crate::list::{self, ItemForm, ListBody, ListOptions};
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::Store;

/// How many objects a collection deletion lists at a time when the request sets no limit (kube's
/// `deleteCollectionPageSize`).
pub const PAGE_SIZE: usize = 10_000;

/// Deletes the objects of `info` in `ns` that `opts` and `sel` select; the answer's body.
pub async fn delete_collection(
    store: &Store,
    info: &ResourceInfo,
    ns: Option<&str>,
    (mut opts, sel): (ListOptions, &Selectors),
    delete: &DeleteOpts,
    rv_wait: Duration,
) -> Result<ListBody, ApiError> {
    let delete = DeleteOpts { collection: Some(ns.unwrap_or_default().to_string()), ..delete.clone() };
    let has_limit = opts.limit > 0;
    if !has_limit {
        opts.limit = PAGE_SIZE;
    }
    let mut first: Option<Vec<u8>> = None;
    let mut deleted: Vec<Arc<StoredObject>> = Vec::new();
    loop {
        let page = list::page(store, info, ns, &opts, sel, rv_wait).await?;
        for o in &page.items {
            match store.delete(info, &o.namespace, &o.name, &delete).await {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let head = first.get_or_insert_with(|| list::list_head(info, ns, sel, &page, false));
        let next = list::next_continue(info, ns, &page);
        deleted.extend(page.items);
        match next {
            Some(token) if !has_limit => {
                opts.continue_token = Some(token);
                opts.resource_version = None;
                opts.resource_version_match = None;
            }
            _ => {
                let form = ItemForm::Object(info.list_items_have_kind);
                return Ok(ListBody::new(std::mem::take(head), deleted, form));
            }
        }
    }
}
