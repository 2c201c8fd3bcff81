//! Indexer / thread-safe store behaviour, ported from client-go's index_test.go,
//! thread_safe_store_test.go and the store parts of store_test.go / controller_test.go
//! (reference: client-go-semantics.md §3.2–§3.4, §8.8).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use informer::store::TransactionError;
use informer::{IndexError, IndexFuncError, Indexer, Indexers, NAMESPACE_INDEX, Object, Txn};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

/// A pod `ns/name` (cluster-scoped when `ns` is empty) with a resourceVersion and labels.
fn pod(ns: &str, name: &str, rv: &str, labels: &[(&str, &str)]) -> Object<Pod> {
    let mut meta = json!({ "name": name });
    if !ns.is_empty() {
        meta["namespace"] = json!(ns);
    }
    if !rv.is_empty() {
        meta["resourceVersion"] = json!(rv);
    }
    if !labels.is_empty() {
        let l: serde_json::Map<String, serde_json::Value> =
            labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        meta["labels"] = serde_json::Value::Object(l);
    }
    Object::from_json(serde_json::to_vec(&json!({ "apiVersion": "v1", "kind": "Pod", "metadata": meta })).unwrap())
        .unwrap()
}

/// client-go's testUsersIndexFunc: the comma-separated `users` label, one value per user.
fn users(o: &Object<Pod>) -> Result<Vec<String>, IndexFuncError> {
    Ok(o.label("users").map(|u| u.split(',').map(str::to_string).collect()).unwrap_or_default())
}

/// The `app` label, or no value.
fn app(o: &Object<Pod>) -> Result<Vec<String>, IndexFuncError> {
    Ok(o.label("app").map(|a| vec![a.to_string()]).unwrap_or_default())
}

/// Fails for objects labelled `bad=true`.
fn picky(o: &Object<Pod>) -> Result<Vec<String>, IndexFuncError> {
    if o.label("bad") == Some("true") {
        return Err(IndexFuncError(format!("refusing {}", o.key())));
    }
    Ok(vec![o.name().to_string()])
}

fn keys(v: Vec<informer::ObjectKey>) -> Vec<String> {
    v.into_iter().map(|k| k.to_string()).collect()
}

fn sorted_keys(objs: &[Object<Pod>]) -> Vec<String> {
    let mut v: Vec<String> = objs.iter().map(|o| o.key().to_string()).collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Every stored key → resourceVersion.
fn contents(s: &Indexer<Pod>) -> BTreeMap<String, String> {
    s.list().iter().map(|o| (o.key().to_string(), o.resource_version().unwrap_or("").to_string())).collect()
}

#[test]
fn add_update_delete_get_list() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new());
    assert!(s.is_empty());
    s.add(pod("ns", "a", "1", &[])).unwrap();
    s.add(pod("ns", "b", "2", &[])).unwrap();
    s.add(pod("", "node", "3", &[])).unwrap();
    assert_eq!(s.len(), 3);
    assert_eq!(sorted(keys(s.list_keys())), ["node", "ns/a", "ns/b"]);
    assert_eq!(sorted_keys(&s.list()), ["node", "ns/a", "ns/b"]);
    assert_eq!(s.get_by_key("ns/a").unwrap().resource_version(), Some("1"));
    assert_eq!(s.get_by_key("node").unwrap().name(), "node");
    assert!(s.get_by_key("ns/zzz").is_none());
    assert!(s.contains_key("ns/b"));

    // update replaces the stored object; get(obj) looks up by the object's key
    s.update(pod("ns", "a", "4", &[])).unwrap();
    assert_eq!(s.get(&pod("ns", "a", "", &[])).unwrap().resource_version(), Some("4"));
    // add of an existing key is an update, not a duplicate
    s.add(pod("ns", "a", "5", &[])).unwrap();
    assert_eq!(s.len(), 3);
    assert_eq!(s.get_by_key("ns/a").unwrap().resource_version(), Some("5"));

    // delete returns the removed (stored) object, not the argument
    let removed = s.delete(&pod("ns", "a", "6", &[])).unwrap();
    assert_eq!(removed.resource_version(), Some("5"));
    assert!(s.get_by_key("ns/a").is_none());
    assert!(s.delete(&pod("ns", "a", "7", &[])).is_none(), "deleting an absent key is a no-op");
    assert_eq!(s.delete_key("node").unwrap().name(), "node");
    assert!(s.delete_key("node").is_none());
    assert_eq!(keys(s.list_keys()), ["ns/b"]);

    let mut seen = Vec::new();
    s.for_each(|o| seen.push(o.key().to_string()));
    assert_eq!(seen, ["ns/b"]);
}

#[test]
fn stored_objects_are_shared_handles() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new());
    let p = pod("ns", "a", "1", &[]);
    s.add(p.clone()).unwrap();
    assert!(s.get_by_key("ns/a").unwrap().ptr_eq(&p));
    assert!(s.list()[0].ptr_eq(&p));
}

/// The store and its indexes hold a key of their own, never the allocation of the object it came
/// from, and keep it through new versions of the object (index values changing or not).
#[test]
fn stored_keys_are_allocations_of_their_own_kept_across_versions() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", app));
    let first = pod("ns", "a", "1", &[("app", "x")]);
    s.add(first.clone()).unwrap();
    let stored = s.list_keys().remove(0);
    assert_eq!(stored, *first.key());
    assert!(!stored.ptr_eq(first.key()), "a copy, not the first version's key");
    assert!(s.index_keys("app", "x").unwrap()[0].ptr_eq(&stored), "the index shares the store's key");

    for (rv, app_label) in [("2", "x"), ("3", "y")] {
        let next = pod("ns", "a", rv, &[("app", app_label)]);
        s.update(next.clone()).unwrap();
        assert!(s.list_keys()[0].ptr_eq(&stored), "kept when version {rv} replaces the object");
        assert!(s.index_keys("app", app_label).unwrap()[0].ptr_eq(&stored));
        assert!(s.get_by_key("ns/a").unwrap().ptr_eq(&next));
    }

    let listed = [pod("ns", "b", "4", &[]), pod("ns", "c", "5", &[])];
    s.replace(&listed[..], "5").unwrap();
    for k in s.list_keys() {
        assert!(listed.iter().all(|o| !o.key().ptr_eq(&k)), "replace copies {k} too");
    }
}

#[test]
fn replace_swaps_content_and_rebuilds_indexes() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", app).with_namespace_index());
    s.add(pod("ns", "a", "1", &[("app", "web")])).unwrap();
    s.add(pod("ns", "b", "2", &[("app", "db")])).unwrap();
    s.replace(
        vec![
            pod("ns", "b", "10", &[("app", "web")]),
            pod("other", "c", "11", &[("app", "cache")]),
            // duplicate key in the list: the later object wins
            pod("other", "c", "12", &[("app", "queue")]),
        ],
        "20",
    )
    .unwrap();
    assert_eq!(contents(&s), BTreeMap::from([("ns/b".into(), "10".into()), ("other/c".into(), "12".into())]));
    assert_eq!(keys(s.index_keys("app", "web").unwrap()), ["ns/b"]);
    assert!(s.index_keys("app", "db").unwrap().is_empty());
    assert!(s.index_keys("app", "cache").unwrap().is_empty(), "the overwritten duplicate left no index entry");
    assert_eq!(keys(s.index_keys("app", "queue").unwrap()), ["other/c"]);
    assert_eq!(sorted(s.list_index_func_values("app")), ["queue", "web"]);
    assert_eq!(sorted(s.list_index_func_values(NAMESPACE_INDEX)), ["ns", "other"]);
    assert_eq!(s.last_resource_version().as_deref(), Some("20"));

    s.replace(Vec::new(), "21").unwrap();
    assert!(s.is_empty());
    assert_eq!(s.index_value_count("app").unwrap(), 0);
    assert_eq!(s.index_value_count(NAMESPACE_INDEX).unwrap(), 0);
    assert_eq!(s.last_resource_version().as_deref(), Some("21"));
}

/// index_test.go TestMultiIndexKeys: a multi-value index function, updates moving keys between
/// values, deletes emptying values.
#[test]
fn multi_value_index_keys() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("byUser", users));
    s.add(pod("", "one", "1", &[("users", "ernie,bert")])).unwrap();
    s.add(pod("", "two", "1", &[("users", "bert,oscar")])).unwrap();
    s.add(pod("", "tre", "1", &[("users", "ernie,elmo")])).unwrap();

    let expected =
        [("ernie", vec!["one", "tre"]), ("bert", vec!["one", "two"]), ("elmo", vec!["tre"]), ("oscar", vec!["two"])];
    for (user, want) in &expected {
        assert_eq!(keys(s.index_keys("byUser", user).unwrap()), *want, "IndexKeys({user}) sorted");
        assert_eq!(sorted_keys(&s.by_index("byUser", user).unwrap()), *want, "ByIndex({user})");
    }
    assert!(s.index_keys("byUser", "nobody").unwrap().is_empty());
    assert_eq!(sorted(s.list_index_func_values("byUser")), ["bert", "elmo", "ernie", "oscar"]);

    // update moves "two" from bert,oscar to elmo only
    s.update(pod("", "two", "2", &[("users", "elmo")])).unwrap();
    assert_eq!(keys(s.index_keys("byUser", "bert").unwrap()), ["one"]);
    assert_eq!(keys(s.index_keys("byUser", "elmo").unwrap()), ["tre", "two"]);
    assert!(s.index_keys("byUser", "oscar").unwrap().is_empty());
    assert!(!s.list_index_func_values("byUser").contains(&"oscar".to_string()), "emptied value removed");

    // deleting "one" empties "bert"
    s.delete(&pod("", "one", "3", &[])).unwrap();
    assert!(s.index_keys("byUser", "bert").unwrap().is_empty());
    assert_eq!(sorted(s.list_index_func_values("byUser")), ["elmo", "ernie"]);
    assert_eq!(s.index_value_count("byUser").unwrap(), 2);
}

#[test]
fn index_returns_union_of_objects_sharing_any_value() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("byUser", users));
    s.add(pod("", "one", "1", &[("users", "ernie,bert")])).unwrap();
    s.add(pod("", "two", "1", &[("users", "bert,oscar")])).unwrap();
    s.add(pod("", "tre", "1", &[("users", "elmo")])).unwrap();
    // the probe object need not be stored
    let probe = pod("", "probe", "", &[("users", "ernie,oscar")]);
    assert_eq!(sorted_keys(&s.index("byUser", &probe).unwrap()), ["one", "two"], "no duplicates in the union");
    let single = pod("", "probe", "", &[("users", "elmo")]);
    assert_eq!(sorted_keys(&s.index("byUser", &single).unwrap()), ["tre"]);
    assert!(s.index("byUser", &pod("", "p", "", &[])).unwrap().is_empty());
    assert_eq!(s.index("nope", &probe).unwrap_err(), IndexError::NoSuchIndex("nope".into()));
}

#[test]
fn unknown_index_names() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", app));
    s.add(pod("ns", "a", "1", &[("app", "web")])).unwrap();
    assert_eq!(s.by_index("nope", "web").unwrap_err(), IndexError::NoSuchIndex("nope".into()));
    assert_eq!(s.index_keys("nope", "web").unwrap_err(), IndexError::NoSuchIndex("nope".into()));
    assert!(s.index_value_count("nope").is_err());
    // client-go returns an empty list for ListIndexFuncValues of an unknown index
    assert!(s.list_index_func_values("nope").is_empty());
    assert_eq!(s.index_names(), ["app"]);
}

#[test]
fn namespace_index() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with_namespace_index());
    s.add(pod("a", "x", "1", &[])).unwrap();
    s.add(pod("a", "y", "1", &[])).unwrap();
    s.add(pod("b", "x", "1", &[])).unwrap();
    s.add(pod("", "cluster", "1", &[])).unwrap();
    assert_eq!(keys(s.index_keys(NAMESPACE_INDEX, "a").unwrap()), ["a/x", "a/y"]);
    assert_eq!(keys(s.index_keys(NAMESPACE_INDEX, "b").unwrap()), ["b/x"]);
    assert_eq!(
        keys(s.index_keys(NAMESPACE_INDEX, "").unwrap()),
        ["cluster"],
        "cluster-scoped objects index under \"\""
    );
    assert_eq!(sorted(s.list_index_func_values(NAMESPACE_INDEX)), ["", "a", "b"]);
    s.delete_key("b/x");
    assert_eq!(sorted(s.list_index_func_values(NAMESPACE_INDEX)), ["", "a"]);
}

/// shared_informer_test.go TestIndexer / thread_safe_store: AddIndexers after objects exist.
#[test]
fn add_indexers_indexes_existing_objects() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with_namespace_index());
    s.add(pod("ns", "a", "1", &[("app", "web"), ("users", "ernie")])).unwrap();
    s.add(pod("ns", "b", "1", &[("app", "db"), ("users", "ernie,bert")])).unwrap();
    s.add(pod("ns", "c", "1", &[])).unwrap();

    s.add_indexers(Indexers::new().with("app", app).with("byUser", users)).unwrap();
    assert_eq!(s.index_names(), ["namespace", "app", "byUser"]);
    assert_eq!(keys(s.index_keys("app", "web").unwrap()), ["ns/a"]);
    assert_eq!(keys(s.index_keys("app", "db").unwrap()), ["ns/b"]);
    assert_eq!(keys(s.index_keys("byUser", "ernie").unwrap()), ["ns/a", "ns/b"]);
    assert_eq!(sorted(s.list_index_func_values("app")), ["db", "web"]);

    // later writes maintain the new indexes too (and the old ones)
    s.update(pod("ns", "a", "2", &[("app", "db")])).unwrap();
    assert_eq!(keys(s.index_keys("app", "db").unwrap()), ["ns/a", "ns/b"]);
    assert!(s.index_keys("app", "web").unwrap().is_empty());
    assert_eq!(keys(s.index_keys("byUser", "ernie").unwrap()), ["ns/b"]);
    s.delete_key("ns/b");
    assert_eq!(keys(s.index_keys("app", "db").unwrap()), ["ns/a"]);
    assert!(s.index_keys("byUser", "ernie").unwrap().is_empty());
    assert_eq!(keys(s.index_keys(NAMESPACE_INDEX, "ns").unwrap()), ["ns/a", "ns/c"]);

    // adding no indexers is fine
    s.add_indexers(Indexers::new()).unwrap();
    assert_eq!(s.index_names().len(), 3);
}

#[test]
fn add_indexers_conflict_is_rejected_and_changes_nothing() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", app));
    s.add(pod("ns", "a", "1", &[("app", "web"), ("users", "ernie")])).unwrap();
    // one new name plus one conflicting name: nothing at all is added
    let err = s.add_indexers(Indexers::new().with("byUser", users).with("app", app)).unwrap_err();
    assert!(matches!(err, IndexError::Conflict(ref n) if n == "app"), "{err:?}");
    assert!(err.to_string().contains("indexer conflict"));
    assert_eq!(s.index_names(), ["app"]);
    assert!(s.index_keys("byUser", "ernie").is_err(), "the non-conflicting index was not added either");
    assert_eq!(keys(s.index_keys("app", "web").unwrap()), ["ns/a"]);
    // a later write still works and maintains only the original index
    s.update(pod("ns", "a", "2", &[("app", "db")])).unwrap();
    assert_eq!(keys(s.index_keys("app", "db").unwrap()), ["ns/a"]);
}

#[test]
fn add_indexers_with_failing_function_changes_nothing() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new());
    s.add(pod("ns", "ok", "1", &[])).unwrap();
    s.add(pod("ns", "bad", "1", &[("bad", "true")])).unwrap();
    let err = s.add_indexers(Indexers::new().with("picky", picky)).unwrap_err();
    assert!(matches!(err, IndexError::Func { ref index, .. } if index == "picky"), "{err:?}");
    assert!(s.index_names().is_empty());
    assert_eq!(s.len(), 2);
}

/// thread_safe_store_test.go TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex /
/// TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex.
#[test]
fn emptied_index_values_are_removed_and_non_empty_kept() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", app));
    s.add(pod("ns", "a", "1", &[("app", "web")])).unwrap();
    s.add(pod("ns", "b", "1", &[("app", "web")])).unwrap();
    s.delete_key("ns/a");
    assert_eq!(keys(s.index_keys("app", "web").unwrap()), ["ns/b"], "non-empty set kept");
    assert_eq!(s.index_value_count("app").unwrap(), 1);
    s.delete(&pod("ns", "b", "2", &[]));
    assert_eq!(s.index_value_count("app").unwrap(), 0, "emptied set removed");
    assert!(s.list_index_func_values("app").is_empty());
}

/// kubernetes#84959: an object whose index value changes on every update must not leak values.
#[test]
fn high_churn_index_values_do_not_leak() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", app).with_namespace_index());
    for i in 0..10_000 {
        let v = format!("v{i}");
        s.update(pod("ns", "churn", &i.to_string(), &[("app", &v)])).unwrap();
    }
    assert_eq!(s.index_value_count("app").unwrap(), 1);
    assert_eq!(s.list_index_func_values("app"), ["v9999"]);
    assert_eq!(keys(s.index_keys("app", "v9999").unwrap()), ["ns/churn"]);
    assert_eq!(s.index_value_count(NAMESPACE_INDEX).unwrap(), 1);
    // also through an object that flips between multi-value sets
    for i in 0..1000 {
        let v = format!("u{i},w{i}");
        s.update(pod("ns", "multi", "1", &[("app", "x"), ("users", &v)])).unwrap();
    }
    assert_eq!(s.index_value_count("app").unwrap(), 2);
    s.delete_key("ns/churn");
    s.delete_key("ns/multi");
    assert_eq!(s.index_value_count("app").unwrap(), 0);
}

/// Unchanged single values: the entry keeps its place, the index function runs once per write
/// (on the new object only; old values are remembered, not recomputed).
#[test]
fn unchanged_single_value_fast_path() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", move |o: &Object<Pod>| {
        c.fetch_add(1, Ordering::SeqCst);
        app(o)
    }));
    s.add(pod("ns", "a", "1", &[("app", "web")])).unwrap();
    s.add(pod("ns", "b", "1", &[("app", "web")])).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    for rv in 2..50 {
        s.update(pod("ns", "a", &rv.to_string(), &[("app", "web")])).unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 50, "one index call per write, never on the old object");
    assert_eq!(keys(s.index_keys("app", "web").unwrap()), ["ns/a", "ns/b"]);
    assert_eq!(s.index_value_count("app").unwrap(), 1);
    assert_eq!(
        s.by_index("app", "web").unwrap().iter().find(|o| o.name() == "a").unwrap().resource_version(),
        Some("49")
    );
    // deletes never call the index function
    s.delete_key("ns/a");
    assert_eq!(calls.load(Ordering::SeqCst), 50);
    assert_eq!(keys(s.index_keys("app", "web").unwrap()), ["ns/b"]);
}

#[test]
fn index_function_error_changes_nothing() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", app).with("picky", picky));
    s.add(pod("ns", "a", "1", &[("app", "web")])).unwrap();
    let before = contents(&s);

    // add of a new object
    let err = s.add(pod("ns", "b", "2", &[("app", "db"), ("bad", "true")])).unwrap_err();
    assert!(matches!(err, IndexError::Func { ref index, ref key, .. } if index == "picky" && key.as_str() == "ns/b"));
    assert_eq!(contents(&s), before);
    assert!(s.index_keys("app", "db").unwrap().is_empty(), "no partial indexing by the other function");
    assert_eq!(s.last_resource_version().as_deref(), Some("1"), "resourceVersion unchanged");

    // update of an existing object
    assert!(s.update(pod("ns", "a", "3", &[("app", "db"), ("bad", "true")])).is_err());
    assert_eq!(contents(&s), before);
    assert_eq!(keys(s.index_keys("app", "web").unwrap()), ["ns/a"]);
    assert!(s.index_keys("app", "db").unwrap().is_empty());
    assert_eq!(keys(s.index_keys("picky", "a").unwrap()), ["ns/a"]);
    assert_eq!(s.last_resource_version().as_deref(), Some("1"));

    // replace with one bad object: the whole replace is refused
    assert!(s.replace(vec![pod("ns", "x", "4", &[]), pod("ns", "y", "4", &[("bad", "true")])], "4").is_err());
    assert_eq!(contents(&s), before);
    assert_eq!(keys(s.index_keys("app", "web").unwrap()), ["ns/a"]);
    assert_eq!(s.last_resource_version().as_deref(), Some("1"));
}

/// thread_safe_store_test.go / controller_test.go TestStoreResourceVersion.
#[test]
fn resource_version_tracking() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new());
    assert_eq!(s.last_resource_version(), None);
    s.add(pod("ns", "a", "5", &[])).unwrap();
    assert_eq!(s.last_resource_version().as_deref(), Some("5"));
    s.update(pod("ns", "a", "5", &[])).unwrap(); // same RV
    assert_eq!(s.last_resource_version().as_deref(), Some("5"));
    s.update(pod("ns", "b", "7", &[])).unwrap();
    assert_eq!(s.last_resource_version().as_deref(), Some("7"));
    // an object without a resourceVersion leaves it unchanged
    s.add(pod("ns", "norv", "", &[])).unwrap();
    assert_eq!(s.last_resource_version().as_deref(), Some("7"));
    // delete with a newer object (the DELETED event) advances it
    s.delete(&pod("ns", "a", "9", &[]));
    assert_eq!(s.last_resource_version().as_deref(), Some("9"));
    // a delete by key (no object) leaves it unchanged
    s.delete_key("ns/b");
    assert_eq!(s.last_resource_version().as_deref(), Some("9"));
    // a delete object without RV leaves it unchanged
    s.delete(&pod("ns", "norv", "", &[]));
    assert_eq!(s.last_resource_version().as_deref(), Some("9"));
    // replace sets the list's RV, regardless of the objects' RVs
    s.replace(vec![pod("ns", "c", "3", &[])], "12").unwrap();
    assert_eq!(s.last_resource_version().as_deref(), Some("12"));
    // bookmark
    s.bookmark("15");
    assert_eq!(s.last_resource_version().as_deref(), Some("15"));
    assert_eq!(s.len(), 1, "bookmarks do not touch content");
    // transaction: the last operation's object
    s.transaction(vec![Txn::Add(pod("ns", "d", "16", &[])), Txn::Update(pod("ns", "c", "17", &[]))]).unwrap();
    assert_eq!(s.last_resource_version().as_deref(), Some("17"));
    s.transaction(vec![Txn::Add(pod("ns", "e", "18", &[])), Txn::Delete(pod("ns", "d", "19", &[]))]).unwrap();
    assert_eq!(s.last_resource_version().as_deref(), Some("19"));
    assert_eq!(contents(&s), BTreeMap::from([("ns/c".into(), "17".into()), ("ns/e".into(), "18".into())]));
}

#[test]
fn transaction_applies_in_order() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("app", app));
    s.add(pod("ns", "old", "1", &[("app", "web")])).unwrap();
    s.transaction(vec![
        Txn::Add(pod("ns", "a", "2", &[("app", "web")])),
        Txn::Update(pod("ns", "a", "3", &[("app", "db")])),
        Txn::Delete(pod("ns", "old", "4", &[])),
        Txn::Add(pod("ns", "b", "5", &[("app", "db")])),
        Txn::Delete(pod("ns", "never-existed", "6", &[])),
    ])
    .unwrap();
    assert_eq!(contents(&s), BTreeMap::from([("ns/a".into(), "3".into()), ("ns/b".into(), "5".into())]));
    assert_eq!(keys(s.index_keys("app", "db").unwrap()), ["ns/a", "ns/b"]);
    assert_eq!(s.index_value_count("app").unwrap(), 1, "web emptied and removed");
    assert_eq!(s.last_resource_version().as_deref(), Some("6"));
    s.transaction(Vec::new()).unwrap();
    assert_eq!(s.last_resource_version().as_deref(), Some("6"));
}

/// controller_test.go TestProcessDeltasInBatch partial failures / store_test transaction index errors.
#[test]
fn transaction_partial_failure_reports_successful_indices() {
    let s: Indexer<Pod> = Indexer::new(Indexers::new().with("picky", picky));
    s.add(pod("ns", "keep", "1", &[])).unwrap();
    let err: TransactionError = s
        .transaction(vec![
            Txn::Add(pod("ns", "a", "2", &[])),
            Txn::Add(pod("ns", "b", "3", &[("bad", "true")])),
            Txn::Update(pod("ns", "keep", "4", &[("bad", "true")])),
            Txn::Delete(pod("ns", "a", "5", &[])),
            Txn::Add(pod("ns", "c", "6", &[])),
            Txn::Update(pod("ns", "d", "7", &[("bad", "true")])),
        ])
        .unwrap_err();
    assert_eq!(err.successful, [0, 3, 4]);
    assert_eq!(err.total, 6);
    assert_eq!(err.errors.len(), 3);
    assert!(err.errors.iter().all(|e| matches!(e, IndexError::Func { .. })));
    let failed: Vec<&str> = err
        .errors
        .iter()
        .map(|e| match e {
            IndexError::Func { key, .. } => key.as_str(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(failed, ["ns/b", "ns/keep", "ns/d"]);
    assert!(err.to_string().contains("3 of 6"));
    // successful ones applied, failed ones not (keep still at rv 1)
    assert_eq!(contents(&s), BTreeMap::from([("ns/c".into(), "6".into()), ("ns/keep".into(), "1".into())]));
    assert_eq!(keys(s.index_keys("picky", "keep").unwrap()), ["ns/keep"]);
    assert!(s.index_keys("picky", "a").unwrap().is_empty());
    assert!(s.index_keys("picky", "b").unwrap().is_empty());
    // RV of the last *applied* operation
    assert_eq!(s.last_resource_version().as_deref(), Some("6"));

    // all fail
    let err = s.transaction(vec![Txn::Add(pod("ns", "x", "8", &[("bad", "true")]))]).unwrap_err();
    assert!(err.successful.is_empty());
    assert_eq!(err.total, 1);
    assert_eq!(s.last_resource_version().as_deref(), Some("6"));
}

/// Readers running against a writer never observe a torn state: a replace is seen whole, and
/// index results always agree with the stored objects.
#[test]
fn concurrent_readers_never_see_torn_state() {
    const KEYS: usize = 20;
    let s: Arc<Indexer<Pod>> = Arc::new(Indexer::new(
        Indexers::new()
            .with("gen", |o: &Object<Pod>| Ok(o.label("gen").map(|g| vec![g.to_string()]).unwrap_or_default())),
    ));
    let generation = |g: usize| -> Vec<Object<Pod>> {
        (0..KEYS).map(|i| pod("ns", &format!("p{i}"), &g.to_string(), &[("gen", &g.to_string())])).collect()
    };
    s.replace(generation(0), "0").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicUsize::new(0));

    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (s, stop, checks) = (s.clone(), stop.clone(), checks.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // A listing is one consistent snapshot: every object of a replace generation,
                    // or a generation plus the single-key churn on p0.
                    let all = s.list();
                    let gens: BTreeSet<&str> =
                        all.iter().filter(|o| o.name() != "p0").map(|o| o.label("gen").unwrap()).collect();
                    assert_eq!(gens.len(), 1, "torn replace observed: {gens:?}");
                    assert_eq!(all.len(), KEYS, "a replace or an update never changes the count");
                    // Index and items agree.
                    let g = *gens.iter().next().unwrap();
                    for o in s.by_index("gen", g).unwrap() {
                        assert_eq!(o.label("gen"), Some(g), "index points at an object with another value");
                    }
                    let ks = s.index_keys("gen", g).unwrap();
                    assert!(ks.windows(2).all(|w| w[0] < w[1]), "index_keys sorted and unique");
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    // keep writing until the readers have checked plenty of states while the writer ran
    let mut g = 1;
    while g < 300 || checks.load(Ordering::Relaxed) < 200 {
        s.replace(generation(g), &g.to_string()).unwrap();
        // churn one key through its own values between replaces
        s.update(pod("ns", "p0", &g.to_string(), &[("gen", &format!("x{g}"))])).unwrap();
        assert!(s.index_value_count("gen").unwrap() <= 2);
        g += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("reader saw a torn state");
    }
    assert_eq!(s.len(), KEYS);
    assert_eq!(s.index_value_count("gen").unwrap(), 2);
}

/// Recomputes index `name` from the stored objects and compares it with the indexer's view.
fn assert_index_consistent(s: &Indexer<Pod>, name: &str, f: fn(&Object<Pod>) -> Result<Vec<String>, IndexFuncError>) {
    let mut want: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for o in s.list() {
        for v in f(&o).unwrap() {
            want.entry(v).or_default().insert(o.key().to_string());
        }
    }
    let mut got: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for v in s.list_index_func_values(name) {
        let ks: BTreeSet<String> = keys(s.index_keys(name, &v).unwrap()).into_iter().collect();
        assert!(!ks.is_empty(), "{name}: empty value {v:?} kept");
        got.insert(v, ks);
    }
    assert_eq!(got, want, "index {name} disagrees with the stored objects");
}

/// add_indexers while another thread writes: once quiet, both the old and the new index agree
/// with the stored objects (no write is lost from the new index, none indexed twice).
#[test]
fn add_indexers_concurrent_with_writer() {
    fn app2(o: &Object<Pod>) -> Result<Vec<String>, IndexFuncError> {
        Ok(o.label("app").map(|a| vec![format!("2-{a}")]).unwrap_or_default())
    }
    for round in 0..8 {
        let s: Arc<Indexer<Pod>> = Arc::new(Indexer::new(Indexers::new().with("app", app)));
        for i in 0..50 {
            s.add(pod("ns", &format!("p{i}"), "1", &[("app", "v0")])).unwrap();
        }
        let started = Arc::new(AtomicBool::new(false));
        let writer = {
            let (s, started) = (s.clone(), started.clone());
            std::thread::spawn(move || {
                let mut x: u64 = 0x9e3779b97f4a7c15 ^ round;
                for n in 0..2000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = format!("p{}", x % 60);
                    match x % 5 {
                        0 => {
                            s.delete_key(&format!("ns/{k}"));
                        }
                        1 => s.replace(s.list(), &n.to_string()).unwrap(),
                        _ => s.update(pod("ns", &k, &n.to_string(), &[("app", &format!("v{}", x % 7))])).unwrap(),
                    }
                    if n == 100 {
                        started.store(true, Ordering::SeqCst);
                    }
                }
            })
        };
        while !started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        s.add_indexers(Indexers::new().with("app2", app2)).unwrap();
        writer.join().unwrap();
        assert_index_consistent(&s, "app", app);
        assert_index_consistent(&s, "app2", app2);
    }
}

/// add_indexers completes while a writer keeps writing, as client-go's AddIndexers does (an
/// indexing pass redone after every concurrent write would never finish on a large store with a
/// steady write stream).
#[test]
fn add_indexers_is_not_starved_by_a_busy_writer() {
    const N: usize = 20_000;
    const MAX_WRITES: u64 = 300_000;
    let s: Arc<Indexer<Pod>> = Arc::new(Indexer::new(Indexers::new().with("app", app)));
    for i in 0..N {
        s.add(pod("ns", &format!("p{i}"), "1", &[("app", "v0")])).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (s, stop, writes) = (s.clone(), stop.clone(), writes.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) && n < MAX_WRITES {
                n += 1;
                let k = format!("p{}", n % N as u64);
                s.update(pod("ns", &k, &n.to_string(), &[("app", &format!("v{}", n % 13))])).unwrap();
                writes.fetch_add(1, Ordering::SeqCst);
            }
            n < MAX_WRITES
        })
    };
    while writes.load(Ordering::SeqCst) < 100 {
        std::thread::yield_now();
    }
    s.add_indexers(Indexers::new().with("byUser", users).with("app-again", app)).unwrap();
    stop.store(true, Ordering::SeqCst);
    assert!(writer.join().unwrap(), "add_indexers only completed once the writer gave up");
    assert_index_consistent(&s, "app", app);
    assert_index_consistent(&s, "app-again", app);
    assert_index_consistent(&s, "byUser", users);
}
