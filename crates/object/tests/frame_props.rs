//! Property tests of the watch stream framer: valid streams split at arbitrary chunk boundaries
//! frame to exactly the events sent; arbitrary or truncated bytes never panic, never grow the
//! buffer past the limit, and end in a clear error.

use informer_object::frame::{WatchFrame, WatchFramer};
use k8s_openapi::api::core::v1::Pod;
use proptest::prelude::*;

fn event_json(ty: &str, name: &str, rv: u64, label: &str) -> String {
    let obj = serde_json::json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv.to_string(), "labels": {"l": label}},
        "spec": {"containers": [{"name": "c", "image": "x"}]}
    });
    format!("{}\n", serde_json::json!({"type": ty, "object": obj}))
}

fn drain(d: &mut WatchFramer<Pod>, out: &mut Vec<(String, String, String)>) -> Result<(), String> {
    while let Some(r) = d.next_frame() {
        match r.map_err(|e| e.to_string())? {
            WatchFrame::Added(o) => out.push(("ADDED".into(), o.name().into(), o.label("l").unwrap_or("").into())),
            WatchFrame::Modified(o) => {
                out.push(("MODIFIED".into(), o.name().into(), o.label("l").unwrap_or("").into()))
            }
            WatchFrame::Deleted(o) => out.push(("DELETED".into(), o.name().into(), o.label("l").unwrap_or("").into())),
            f => return Err(format!("unexpected {f:?}")),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn valid_streams_decode_exactly_at_any_chunking(
        events in prop::collection::vec((0usize..3, "[a-z0-9-]{1,20}", "\\PC{0,12}"), 1..20),
        cuts in prop::collection::vec(1usize..300, 0..30),
    ) {
        let types = ["ADDED", "MODIFIED", "DELETED"];
        let mut stream = String::new();
        let mut want = vec![];
        for (i, (t, name, label)) in events.iter().enumerate() {
            stream.push_str(&event_json(types[*t], name, i as u64 + 1, label));
            want.push((types[*t].to_string(), name.clone(), label.clone()));
        }
        let bytes = stream.as_bytes();
        let mut d = WatchFramer::<Pod>::new(1 << 20, None);
        let mut got = vec![];
        let mut pos = 0;
        for c in cuts {
            let end = (pos + c).min(bytes.len());
            d.push(&bytes[pos..end]);
            drain(&mut d, &mut got).unwrap();
            pos = end;
        }
        d.push(&bytes[pos..]);
        drain(&mut d, &mut got).unwrap();
        prop_assert!(d.finish().is_none());
        prop_assert_eq!(got, want);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_stay_bounded(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..40),
    ) {
        let limit = 1024;
        let mut d = WatchFramer::<Pod>::new(limit, None);
        let mut failed = false;
        for c in &chunks {
            d.push(c);
            while let Some(r) = d.next_frame() {
                if r.is_err() { failed = true; break; }
            }
            if failed { break; }
            prop_assert!(d.buffered() <= limit + 200, "buffer grew to {}", d.buffered());
        }
        if !failed {
            let _ = d.finish();
        }
    }

    #[test]
    fn truncated_streams_report_an_error_not_a_partial_event(
        n in 1usize..5,
        cut in 1usize..400,
    ) {
        let mut stream = String::new();
        for i in 0..n {
            stream.push_str(&event_json("ADDED", &format!("p{i}"), i as u64 + 1, "x"));
        }
        let cut = cut.min(stream.len() - 1);
        let mut d = WatchFramer::<Pod>::new(1 << 20, None);
        d.push(&stream.as_bytes()[..cut]);
        let mut got = vec![];
        drain(&mut d, &mut got).unwrap();
        let complete = stream[..cut].matches('\n').count();
        prop_assert_eq!(got.len(), complete);
        match d.finish() {
            None => prop_assert!(stream.as_bytes()[..cut].iter().rev().take_while(|b| **b != b'\n').all(|b| b.is_ascii_whitespace())),
            // Only a cut that removed nothing but the trailing newline leaves a whole event.
            Some(Ok(_)) => prop_assert!(
                stream.as_bytes()[cut..].iter().take_while(|b| **b != b'\n').all(|b| b.is_ascii_whitespace()),
                "a truncated event decoded"
            ),
            Some(Err(_)) => {}
        }
    }
}
