//! Borrowed, allocation-light parsing of the few fields the cache needs from an object's JSON.
//!
//! [`ObjectHead`] holds `apiVersion`, `kind` and, from `metadata`, the name, namespace,
//! resourceVersion, uid, labels and annotations; strings borrow from the input unless they contain
//! escapes. Annotations are only decoded on request (watch bookmarks carry a flag in them; objects
//! need none). [`ObjectHead::parse`] fills it with the hand-written scanner of
//! [`scan`](super::scan) — the only JSON work done per object on the event path; the full typed
//! decode happens later, on first use (see [`crate::Object`]). The serde derive is the reference
//! implementation the scanner is tested against; [`CowStr`] and [`StrPairs`] are also used by the
//! watch decoder's fallback path.
//!
//! Invariant: a successful parse means the input was one structurally valid JSON object.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use smallvec::SmallVec;

/// The head of an object: type meta plus the identity metadata fields.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub(crate) struct ObjectHead<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    pub api_version: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    pub kind: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    pub metadata: Option<MetaHead<'a>>,
}

/// The identity fields of `metadata`.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub(crate) struct MetaHead<'a> {
    #[serde(borrow, default)]
    pub name: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    pub namespace: Option<CowStr<'a>>,
    #[serde(rename = "resourceVersion", borrow, default)]
    pub resource_version: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    pub uid: Option<CowStr<'a>>,
    #[serde(borrow, default)]
    pub labels: Option<StrPairs<'a>>,
    #[serde(borrow, default)]
    pub annotations: Option<StrPairs<'a>>,
    /// The `fieldsV1` values of `managedFields` that are JSON objects, as spans of the input, in
    /// document order (see [`super::fragment`]).
    #[serde(rename = "managedFields", borrow, default)]
    pub fields_v1: FieldsV1Spans<'a>,
}

/// The `fieldsV1` objects of `metadata.managedFields`, borrowed from the input, each with the
/// index of its entry in `managedFields`. Whatever else `managedFields` holds is skipped (the
/// typed decode checks its shape, if it is ever read).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct FieldsV1Spans<'a> {
    /// (entry index, span from `{` to `}`), in document order.
    pub spans: SmallVec<[(u32, &'a [u8]); 2]>,
    /// Set when the entry indices may not name a unique place in the document: `metadata` or
    /// `managedFields` appeared twice, or an entry has two `fieldsV1` members. The spans are
    /// still found (and shared), but never substituted by position (see `super::substitute`).
    pub ambiguous: bool,
}

/// The serde reference of the scanner's `managedFields` walk (the scanner's tests compare
/// against it): the whole value unparsed, then its entries, then each entry's members.
impl<'de: 'a, 'a> Deserialize<'de> for FieldsV1Spans<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_json::value::RawValue;
        let all: &'de RawValue = Deserialize::deserialize(d)?;
        let mut out = FieldsV1Spans::default();
        if all.get().starts_with('[') {
            let entries: Vec<&'a RawValue> = serde_json::from_str(all.get()).map_err(de::Error::custom)?;
            for (i, entry) in entries.into_iter().enumerate().filter(|(_, e)| e.get().starts_with('{')) {
                let members: Members<'a, &'a RawValue> =
                    serde_json::from_str(entry.get()).map_err(de::Error::custom)?;
                let mut seen = false;
                for (k, v) in members.0 {
                    if &*k == "fieldsV1" {
                        out.ambiguous |= std::mem::replace(&mut seen, true);
                        if v.get().starts_with('{') {
                            out.spans.push((i as u32, v.get().as_bytes()));
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A JSON object of string values, kept as borrowed pairs in document order.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct StrPairs<'a>(pub SmallVec<[(Cow<'a, str>, Cow<'a, str>); 8]>);

impl<'de: 'a, 'a> Deserialize<'de> for StrPairs<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = Members::<'a, CowStr<'a>>::deserialize(d)?;
        Ok(StrPairs(m.0.into_iter().map(|(k, v)| (k.0, v.0)).collect()))
    }
}

/// A JSON object's members in document order (null reads as no members), keys borrowed from
/// the input unless they have escapes.
struct Members<'a, V>(SmallVec<[(CowStr<'a>, V); 8]>);

impl<'de: 'a, 'a, V: Deserialize<'de>> Deserialize<'de> for Members<'a, V> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis<'a, V>(std::marker::PhantomData<(&'a (), V)>);
        impl<'de: 'a, 'a, V: Deserialize<'de>> Visitor<'de> for Vis<'a, V> {
            type Value = Members<'a, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Members(SmallVec::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = SmallVec::new();
                while let Some(member) = map.next_entry()? {
                    out.push(member);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_any(Vis(std::marker::PhantomData))
    }
}

/// A string that borrows from the input when it has no escapes.
#[derive(Debug, PartialEq)]
pub(crate) struct CowStr<'a>(pub Cow<'a, str>);

impl std::ops::Deref for CowStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = CowStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

impl<'a> ObjectHead<'a> {
    /// Parses the head of one JSON object (the fast scanner). `metadata.annotations` is checked
    /// to be a map of strings but left out (`None`); see [`ObjectHead::parse_with_annotations`].
    pub(crate) fn parse(json: &'a [u8]) -> Result<Self, super::scan::ScanError> {
        super::scan::scan_head_with(json, super::scan::Annotations::Skip)
    }

    /// [`ObjectHead::parse`], annotations included (for watch bookmarks).
    pub(crate) fn parse_with_annotations(json: &'a [u8]) -> Result<Self, super::scan::ScanError> {
        super::scan::scan_head(json)
    }

    /// The serde_json reference implementation of [`ObjectHead::parse`] (the scanner's tests
    /// compare against it).
    #[cfg(test)]
    pub(crate) fn parse_reference(json: &'a [u8]) -> Result<Self, serde_json::Error> {
        // A struct also deserializes from an array; an object must be a JSON object.
        match json.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => serde_json::from_slice(json),
            _ => Err(<serde_json::Error as de::Error>::custom("expected a JSON object")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_identity_and_skips_the_rest() {
        let j = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"managedFields":[{"a":{"b":[1,2,{"c":null}]}}],
            "name":"p\u0041","namespace":"ns","resourceVersion":"12","uid":"u-1","labels":{"app":"x","t":"y"}},
            "spec":{"containers":[{"name":"c"}]},"status":{}}"#;
        let h = ObjectHead::parse(j).unwrap();
        assert_eq!(h.kind.as_deref(), Some("Pod"));
        assert_eq!(h.api_version.as_deref(), Some("v1"));
        let m = h.metadata.unwrap();
        assert_eq!(m.name.as_deref(), Some("pA"));
        assert!(matches!(m.namespace, Some(CowStr(Cow::Borrowed("ns")))));
        assert_eq!(m.resource_version.as_deref(), Some("12"));
        assert_eq!(m.uid.as_deref(), Some("u-1"));
        let l = m.labels.unwrap().0;
        assert_eq!(l.len(), 2);
        assert_eq!((l[1].0.as_ref(), l[1].1.as_ref()), ("t", "y"));
    }

    #[test]
    fn rejects_malformed_and_wrongly_typed_input() {
        assert!(ObjectHead::parse(b"{\"metadata\":{\"name\":1}}").is_err());
        assert!(ObjectHead::parse(b"{\"metadata\":{\"labels\":{\"a\":1}}}").is_err());
        assert!(ObjectHead::parse(b"{\"metadata\":").is_err());
        assert!(ObjectHead::parse(b"[]").is_err());
        assert!(ObjectHead::parse(b"{} trailing").is_err());
        // null labels are accepted as empty
        let h = ObjectHead::parse(b"{\"metadata\":{\"name\":\"a\",\"labels\":null}}").unwrap();
        assert!(h.metadata.unwrap().labels.is_none());
    }
}
