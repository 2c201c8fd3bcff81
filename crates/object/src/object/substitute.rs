//! Typed decodes that copy already decoded `managedFields` field sets instead of parsing them.
//!
//! The `fieldsV1` values of `metadata.managedFields` are a quarter of a typical pod's JSON and,
//! decoded into k8s-openapi's `FieldsV1` (a `serde_json::Value` tree of maps), about a third of
//! the cost of a typed decode. Most are shared by many objects (see [`super::fragment`]), so a
//! shared fragment keeps its decoded value and every typed decode of an object holding it copies
//! that value (a tree clone: no parsing, no key comparisons) instead of parsing the bytes again.
//!
//! How: the document is assembled with the JSON literal `null` in place of each substituted field
//! set, and deserialized through [`Proxy`], a serde deserializer wrapped around the JSON
//! deserializer that follows the path `metadata` → `managedFields` → entry *k* → `fieldsV1` as the
//! target type's visitors walk the document (every other member goes straight to the JSON
//! deserializer, unwrapped). At a substituted position it checks that the placeholder is there
//! and hands the decoded value over: by clone when the target's field is `Option<FieldsV1>`,
//! `FieldsV1`, `Value` or `Option<Value>`, or skipped when the target ignores the member.
//!
//! Invariant: the result is either exactly what decoding the whole JSON would give, or an error
//! (then the caller decodes the whole JSON). Anything the proxy cannot follow is an error, never a
//! guess: a target that reads the field set as any other type, captures a subtree holding a
//! placeholder as raw JSON, or reads it as an enum; a key on the path read as anything but a
//! string (not compared); a position whose value is not the placeholder.
//! Positions come from the scanner, which records for each shared span its entry index and marks
//! documents whose paths are not unique (duplicate `metadata`, `managedFields` or `fieldsV1`
//! members); those are never substituted. Keys are compared decoded on both sides.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The deepest field set (arrays and objects within arrays and objects) a substitution may hand
/// over: serde_json refuses documents nested more than 127 deep, and a field set sits four levels
/// down (the document, `metadata`, `managedFields`, the entry). A deeper set decodes on its own
/// but not in its document, so it is never substituted (the whole JSON gives the error).
pub(crate) const MAX_NESTING: usize = 123;

/// The field sets to hand over, by `managedFields` entry index.
pub(crate) type Substitutions<'v> = [(u32, &'v Value)];

/// Decodes `doc` (with `null` at every substituted position) into `K`, taking each substituted
/// field set from `subs`. An error means "decode the whole JSON instead", not that it is invalid.
pub(crate) fn decode<K: de::DeserializeOwned>(doc: &str, subs: &Substitutions<'_>) -> Result<K, serde_json::Error> {
    let errors = super::de::errors_made();
    let mut de = serde_json::Deserializer::from_str(doc);
    let k = decode_with(&mut de, subs)?;
    de.end()?;
    if super::de::errors_made() != errors {
        return Err(cannot_follow("a target that went on after an error"));
    }
    Ok(k)
}

/// [`decode`] with the deserializer `de` of the document (which the caller checks the end of).
pub(crate) fn decode_with<'de, K: de::Deserialize<'de>, D: Deserializer<'de>>(
    de: D,
    subs: &Substitutions<'_>,
) -> Result<K, D::Error> {
    K::deserialize(Proxy { de, at: At::Root, subs })
}

/// Where on the followed path a value is.
#[derive(Clone, Copy)]
enum At {
    /// The document.
    Root,
    /// `metadata`.
    Metadata,
    /// `metadata.managedFields`.
    ManagedFields,
    /// `metadata.managedFields[k]`.
    Entry(u32),
}

impl At {
    /// The member of a map at this position that continues the path.
    fn next_key(self) -> &'static str {
        match self {
            At::Root => "metadata",
            At::Metadata => "managedFields",
            At::ManagedFields => "",
            At::Entry(_) => "fieldsV1",
        }
    }
}

/// serde_json's marker for capturing a value as raw JSON text.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// The proxy's error. Counted (see [`super::de::note_error`]): a target that catches it and goes on
/// made something else than what the whole JSON decodes to, so the decode is refused anyway.
fn cannot_follow<E: de::Error>(what: &str) -> E {
    super::de::note_error();
    E::custom(format_args!("substituted decode cannot follow {what}"))
}

/// A deserializer for a value on the followed path.
struct Proxy<'s, 'v, D> {
    de: D,
    at: At,
    subs: &'s Substitutions<'v>,
}

/// Deserializer methods that may visit a map or sequence on the path: the visitor is wrapped.
macro_rules! wrapped {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method($($arg,)* Wrap { visitor, at: self.at, subs: self.subs })
        }
    )*};
}

/// Deserializer methods that cannot reach into a map or sequence: passed through.
macro_rules! direct {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Proxy<'_, '_, D> {
    type Error = D::Error;

    wrapped! {
        deserialize_any(), deserialize_map(), deserialize_seq(), deserialize_option(),
        deserialize_tuple(len: usize), deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        // serde_json reads an array asked for as bytes as a sequence.
        deserialize_bytes(), deserialize_byte_buf(),
    }

    // `ignored_any` skips the value unread: a placeholder it skips changes nothing.
    direct! {
        deserialize_bool(), deserialize_i8(), deserialize_i16(), deserialize_i32(), deserialize_i64(),
        deserialize_i128(), deserialize_u8(), deserialize_u16(), deserialize_u32(), deserialize_u64(),
        deserialize_u128(), deserialize_f32(), deserialize_f64(), deserialize_char(), deserialize_str(),
        deserialize_string(), deserialize_unit(),
        deserialize_identifier(), deserialize_ignored_any(), deserialize_unit_struct(name: &'static str),
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        if name == RAW_VALUE_TOKEN {
            return Err(cannot_follow("raw JSON"));
        }
        self.de.deserialize_newtype_struct(name, Wrap { visitor, at: self.at, subs: self.subs })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, D::Error> {
        Err(cannot_follow("an enum"))
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// Visitor methods passed through unchanged.
macro_rules! visits {
    ($field:ident; $($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.$field.$method(v)
        }
    )*};
}

/// A visitor on the followed path: maps and sequences it is given are wrapped.
struct Wrap<'s, 'v, V> {
    visitor: V,
    at: At,
    subs: &'s Substitutions<'v>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, '_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.visitor.expecting(f)
    }

    visits! { visitor;
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64), visit_i128(i128),
        visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64), visit_u128(u128), visit_f32(f32),
        visit_f64(f64), visit_char(char), visit_str(&str), visit_borrowed_str(&'de str), visit_string(String),
        visit_bytes(&[u8]), visit_borrowed_bytes(&'de [u8]), visit_byte_buf(Vec<u8>),
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.visitor.visit_some(Proxy { de, at: self.at, subs: self.subs })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.visitor.visit_newtype_struct(Proxy { de, at: self.at, subs: self.subs })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        match self.at {
            At::ManagedFields => self.visitor.visit_seq(Entries { seq, next: 0, subs: self.subs }),
            // No placeholder is inside any other sequence.
            _ => self.visitor.visit_seq(seq),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        match self.at {
            // The scanner records nothing when `managedFields` is not an array.
            At::ManagedFields => self.visitor.visit_map(map),
            at => self.visitor.visit_map(Members { map, at, subs: self.subs, on_path: false }),
        }
    }

    fn visit_enum<A: EnumAccess<'de>>(self, _data: A) -> Result<Self::Value, A::Error> {
        Err(cannot_follow("an enum"))
    }
}

/// The entries of `managedFields`, each followed with its index.
struct Entries<'s, 'v, A> {
    seq: A,
    next: u32,
    subs: &'s Substitutions<'v>,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Entries<'_, '_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        let at = At::Entry(self.next);
        self.next = self.next.saturating_add(1);
        self.seq.next_element_seed(Follow { seed, at, subs: self.subs })
    }

    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

/// Deserializes a value on the path through a [`Proxy`].
struct Follow<'s, 'v, T> {
    seed: T,
    at: At,
    subs: &'s Substitutions<'v>,
}

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Follow<'_, '_, T> {
    type Value = T::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<T::Value, D::Error> {
        self.seed.deserialize(Proxy { de, at: self.at, subs: self.subs })
    }
}

/// The members of a map on the path: the one that continues it is followed (or substituted).
struct Members<'s, 'v, A> {
    map: A,
    at: At,
    subs: &'s Substitutions<'v>,
    /// Whether the key just read continues the path.
    on_path: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Members<'_, '_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        let mut read = None;
        let key = self.map.next_key_seed(KeySeed { seed, wanted: self.at.next_key(), read: &mut read })?;
        // A key the target read as something else than a string (a number, an enum) was not
        // compared: whether it continues the path is unknown.
        if key.is_some() && read.is_none() {
            return Err(cannot_follow("a key read as another type"));
        }
        self.on_path = read == Some(true);
        Ok(key)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        if !std::mem::take(&mut self.on_path) {
            return self.map.next_value_seed(seed);
        }
        let subs = self.subs;
        match self.at {
            At::Root => self.map.next_value_seed(Follow { seed, at: At::Metadata, subs }),
            At::Metadata => self.map.next_value_seed(Follow { seed, at: At::ManagedFields, subs }),
            At::ManagedFields => self.map.next_value_seed(seed),
            At::Entry(k) => match subs.iter().find(|(entry, _)| *entry == k) {
                Some(&(_, value)) => self.map.next_value_seed(Substitute::<T> { seed: PhantomData, value }),
                None => self.map.next_value_seed(seed),
            },
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A map key, compared (decoded) with the key that continues the path: `read` is set to whether
/// it is that key when the target reads it as a string (directly, or inside an `Option` or a
/// newtype), and left `None` otherwise.
struct KeySeed<'f, K> {
    seed: K,
    wanted: &'static str,
    read: &'f mut Option<bool>,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for KeySeed<'_, K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<K::Value, D::Error> {
        self.seed.deserialize(KeyDeserializer { de, wanted: self.wanted, read: self.read })
    }
}

struct KeyDeserializer<'f, D> {
    de: D,
    wanted: &'static str,
    read: &'f mut Option<bool>,
}

/// Every deserializer method of a key: the visitor is told to compare the key it sees.
macro_rules! key_methods {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method($($arg,)* KeyVisitor { visitor, wanted: self.wanted, read: self.read })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeyDeserializer<'_, D> {
    type Error = D::Error;

    key_methods! {
        deserialize_any(), deserialize_bool(), deserialize_i8(), deserialize_i16(), deserialize_i32(),
        deserialize_i64(), deserialize_i128(), deserialize_u8(), deserialize_u16(), deserialize_u32(),
        deserialize_u64(), deserialize_u128(), deserialize_f32(), deserialize_f64(), deserialize_char(),
        deserialize_str(), deserialize_string(), deserialize_bytes(), deserialize_byte_buf(),
        deserialize_option(), deserialize_unit(), deserialize_map(), deserialize_seq(),
        deserialize_identifier(), deserialize_ignored_any(), deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str), deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// Records whether the key it is given is the wanted one, then passes it on.
struct KeyVisitor<'f, V> {
    visitor: V,
    wanted: &'static str,
    read: &'f mut Option<bool>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for KeyVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.visitor.expecting(f)
    }

    visits! { visitor;
        visit_bool(bool), visit_i8(i8), visit_i16(i16), visit_i32(i32), visit_i64(i64), visit_i128(i128),
        visit_u8(u8), visit_u16(u16), visit_u32(u32), visit_u64(u64), visit_u128(u128), visit_f32(f32),
        visit_f64(f64), visit_char(char),
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        *self.read = Some(v == self.wanted);
        self.visitor.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        *self.read = Some(v == self.wanted);
        self.visitor.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        *self.read = Some(v == self.wanted);
        self.visitor.visit_string(v)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        *self.read = Some(v == self.wanted.as_bytes());
        self.visitor.visit_bytes(v)
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
        *self.read = Some(v == self.wanted.as_bytes());
        self.visitor.visit_borrowed_bytes(v)
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Self::Value, E> {
        *self.read = Some(v == self.wanted.as_bytes());
        self.visitor.visit_byte_buf(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.visitor.visit_some(KeyDeserializer { de, wanted: self.wanted, read: self.read })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.visitor.visit_newtype_struct(KeyDeserializer { de, wanted: self.wanted, read: self.read })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.visitor.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.visitor.visit_map(map)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.visitor.visit_enum(data)
    }
}

/// The value at a substituted position: checks the placeholder, then hands over the field set
/// as the value of seed type `T` (the seed itself carries nothing: only known seed types, which
/// are all `PhantomData`, are answered).
struct Substitute<'v, T> {
    seed: PhantomData<T>,
    value: &'v Value,
}

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Substitute<'_, T> {
    type Value = T::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<T::Value, D::Error> {
        de.deserialize_any(Placeholder)?;
        let (v, _) = (self.value, self.seed);
        if let Some(out) = same_seed::<T, PhantomData<Option<FieldsV1>>>(|| Some(FieldsV1(v.clone())))
            .or_else(|| same_seed::<T, PhantomData<FieldsV1>>(|| FieldsV1(v.clone())))
            .or_else(|| same_seed::<T, PhantomData<Option<Value>>>(|| Some(v.clone())))
            .or_else(|| same_seed::<T, PhantomData<Value>>(|| v.clone()))
            .or_else(|| same_seed::<T, PhantomData<IgnoredAny>>(|| IgnoredAny))
        {
            return Ok(out);
        }
        Err(cannot_follow("a field set read as another type"))
    }
}

/// Accepts the placeholder `null` only.
struct Placeholder;

impl<'de> Visitor<'de> for Placeholder {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the placeholder null")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// `make()`, as the value of seed type `T`, when `T` is the seed type `P` (whose value `make`
/// builds); `None` otherwise.
#[allow(unsafe_code)]
fn same_seed<'de, T: DeserializeSeed<'de>, P: DeserializeSeed<'de> + NoLifetimes>(
    make: impl FnOnce() -> P::Value,
) -> Option<T::Value> {
    if typeid::of::<T>() != typeid::of::<P>() {
        return None;
    }
    let value = ManuallyDrop::new(make());
    // SAFETY: `typeid::of` is the `TypeId` of the type with its lifetimes erased, and `P` has no
    // lifetimes (`NoLifetimes`), so equal ids mean `T` is exactly `P`, hence `T::Value` is
    // `P::Value`: reading the value as that type is a move (the original is not dropped).
    Some(unsafe { std::ptr::read((&*value as *const P::Value).cast::<T::Value>()) })
}

/// Seed types [`same_seed`] may compare against.
///
/// # Safety
/// Implement only for types without lifetime parameters: `typeid::of` erases lifetimes, so only
/// then do equal ids mean equal types.
#[allow(unsafe_code)]
unsafe trait NoLifetimes {}
// SAFETY: no lifetime parameters.
#[allow(unsafe_code)]
unsafe impl NoLifetimes for PhantomData<Option<FieldsV1>> {}
// SAFETY: no lifetime parameters.
#[allow(unsafe_code)]
unsafe impl NoLifetimes for PhantomData<FieldsV1> {}
// SAFETY: no lifetime parameters.
#[allow(unsafe_code)]
unsafe impl NoLifetimes for PhantomData<Option<Value>> {}
// SAFETY: no lifetime parameters.
#[allow(unsafe_code)]
unsafe impl NoLifetimes for PhantomData<Value> {}
// SAFETY: no lifetime parameters.
#[allow(unsafe_code)]
unsafe impl NoLifetimes for PhantomData<IgnoredAny> {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::core::{DynamicObject, PartialObjectMeta};
    use serde::Deserialize;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    use super::super::fragment::DECODED_MIN_HOLDERS;
    use super::super::{NO_ENTRY, Object};
    use super::*;

    /// A pod whose two large field sets carry `tag` (so no other test shares them).
    fn pod(tag: &str, name: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "fieldsV1":
                    {"f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:ownerReferences": {}}, "f:tag": tag}},
                {"manager": "tiny", "fieldsV1": {"f:x": {}}},
                {"manager": "kubelet", "operation": "Update", "subresource": "status", "time": "2026-11-01T10:00:05Z",
                 "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}}}, "f:tag": tag}}
            ]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        })
    }

    /// Enough objects holding the same field sets for them to be decoded and shared.
    fn widely_held(tag: &str) -> Vec<Object<Pod>> {
        (0..=DECODED_MIN_HOLDERS)
            .map(|i| Object::from_json(serde_json::to_vec(&pod(tag, &format!("p{i}"))).unwrap()).unwrap())
            .collect()
    }

    /// `o`'s JSON with `null` at every substituted position, and the substitutions.
    fn placeholders<K>(o: &Object<K>) -> (String, Vec<(u32, Value)>) {
        let splices = &o.header().splices;
        let mut doc = Vec::new();
        o.write_json_with(&mut doc, |i| splices[i].fragment.decoded().is_some());
        let subs = splices.iter().filter_map(|s| Some((s.entry, s.fragment.decoded()?.clone()))).collect();
        (String::from_utf8(doc).unwrap(), subs)
    }

    fn substituted<K: DeserializeOwned>(doc: &str, subs: &[(u32, Value)]) -> Result<K, serde_json::Error> {
        let subs: Vec<(u32, &Value)> = subs.iter().map(|(e, v)| (*e, v)).collect();
        decode(doc, &subs)
    }

    fn plain<K: DeserializeOwned, T>(o: &Object<T>) -> K {
        serde_json::from_slice(&o.raw_json()).unwrap()
    }

    #[test]
    fn widely_held_field_sets_are_copied_into_typed_decodes() {
        let objects = widely_held("copied");
        let o = &objects[0];
        let (doc, subs) = placeholders(o);
        assert_eq!(subs.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 2], "both large sets, by entry index");
        assert_eq!(doc.matches("null").count(), 2);
        let want: Pod = plain(o);
        assert_eq!(substituted::<Pod>(&doc, &subs).unwrap(), want);
        assert_eq!(o.decode().unwrap(), want);
        assert_eq!(o.get().unwrap(), &want);
        // Other kinds of target with the same metadata type, and a schemaless one.
        assert_eq!(substituted::<DynamicObject>(&doc, &subs).unwrap(), plain::<DynamicObject, _>(o));
        let meta: PartialObjectMeta<Pod> = substituted(&doc, &subs).unwrap();
        assert_eq!(meta.metadata, plain::<PartialObjectMeta<Pod>, _>(o).metadata);
        assert_eq!(substituted::<Value>(&doc, &subs).unwrap(), plain::<Value, _>(o));
        assert_eq!(o.cast::<Value>().decode().unwrap(), plain::<Value, _>(o));
    }

    #[test]
    fn targets_that_skip_the_field_sets_decode_without_them() {
        #[derive(Deserialize, PartialEq, Debug)]
        struct Spec {
            spec: Value,
        }
        #[derive(Deserialize, PartialEq, Debug)]
        struct Entry {
            manager: String,
        }
        #[derive(Deserialize, PartialEq, Debug)]
        #[serde(rename_all = "camelCase")]
        struct Meta {
            managed_fields: Vec<Entry>,
        }
        #[derive(Deserialize, PartialEq, Debug)]
        struct Managers {
            metadata: Meta,
        }
        let objects = widely_held("skipped");
        let (doc, subs) = placeholders(&objects[0]);
        assert_eq!(substituted::<Spec>(&doc, &subs).unwrap(), plain::<Spec, _>(&objects[0]));
        assert_eq!(substituted::<Managers>(&doc, &subs).unwrap(), plain::<Managers, _>(&objects[0]));
    }

    #[test]
    fn targets_that_read_field_sets_otherwise_are_refused_and_decoded_whole() {
        #[derive(Deserialize, PartialEq, Debug)]
        #[serde(rename_all = "camelCase")]
        struct Entry {
            fields_v1: Option<BTreeMap<String, Value>>,
        }
        #[derive(Deserialize, PartialEq, Debug)]
        #[serde(rename_all = "camelCase")]
        struct Meta {
            managed_fields: Vec<Entry>,
        }
        #[derive(Deserialize, PartialEq, Debug)]
        struct Typed {
            metadata: Meta,
        }
        #[derive(Deserialize)]
        struct Raw {
            metadata: Box<serde_json::value::RawValue>,
        }
        #[derive(Deserialize, PartialEq, Debug)]
        #[serde(untagged)]
        enum Either {
            Pod { metadata: ObjectMeta },
        }
        let objects = widely_held("refused");
        let o = &objects[0];
        let (doc, subs) = placeholders(o);
        assert!(substituted::<Typed>(&doc, &subs).is_err());
        assert_eq!(o.cast::<Typed>().decode().unwrap(), plain::<Typed, _>(o));
        assert!(substituted::<Raw>(&doc, &subs).is_err(), "raw JSON would hold the placeholders");
        let raw = o.cast::<Raw>().decode().unwrap();
        assert_eq!(raw.metadata.get(), plain::<Raw, _>(o).metadata.get());
        assert!(raw.metadata.get().contains("f:ownerReferences"));
        assert!(substituted::<Either>(&doc, &subs).is_err(), "buffered content is not followed");
        assert_eq!(o.cast::<Either>().decode().unwrap(), plain::<Either, _>(o));
        // A target that catches the refusal and goes on (here: a field set it cannot read
        // becomes `None`) is refused all the same: its value would not be the whole JSON's.
        #[derive(PartialEq, Debug)]
        struct LenientEntry(Option<BTreeMap<String, Value>>);
        impl<'de> Deserialize<'de> for LenientEntry {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = LenientEntry;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("an entry")
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<LenientEntry, A::Error> {
                        let mut sets = None;
                        while let Some(k) = m.next_key::<String>()? {
                            if k == "fieldsV1" {
                                sets = m.next_value::<Option<BTreeMap<String, Value>>>().ok().flatten();
                            } else {
                                m.next_value::<IgnoredAny>()?;
                            }
                        }
                        Ok(LenientEntry(sets))
                    }
                }
                d.deserialize_map(V)
            }
        }
        #[derive(Deserialize, PartialEq, Debug)]
        #[serde(rename_all = "camelCase")]
        struct LenientMeta {
            managed_fields: Vec<LenientEntry>,
        }
        #[derive(Deserialize, PartialEq, Debug)]
        struct Lenient {
            metadata: LenientMeta,
        }
        assert!(substituted::<Lenient>(&doc, &subs).is_err());
        let whole = plain::<Lenient, _>(o);
        assert!(whole.metadata.managed_fields.iter().all(|e| e.0.is_some()));
        assert_eq!(o.cast::<Lenient>().decode().unwrap(), whole);
    }

    #[test]
    fn a_position_without_the_placeholder_is_refused() {
        let objects = widely_held("no-placeholder");
        let o = &objects[0];
        let (_, subs) = placeholders(o);
        // The whole JSON: the field sets are where the placeholders should be.
        let whole = String::from_utf8(o.raw_json().into_owned()).unwrap();
        assert!(substituted::<Pod>(&whole, &subs).is_err());
        assert!(substituted::<Value>(&whole, &subs).is_err());
        // A substitution for an entry whose value is not the placeholder.
        let wrong: Vec<(u32, Value)> = subs.iter().map(|(e, v)| (e + 1, v.clone())).collect();
        let (doc, _) = placeholders(o);
        assert!(substituted::<Pod>(&doc, &wrong).is_err());
    }

    /// Documents whose `metadata`, `managedFields` or `fieldsV1` members repeat: the last one
    /// counts for every decoder here, and nothing is substituted by position.
    #[test]
    fn documents_with_repeated_members_are_never_substituted() {
        let set = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}},"f:ownerReferences":{}},"f:tag":"repeated"}"#;
        let docs = [
            format!(
                r#"{{"metadata":{{"name":"a","managedFields":[{{"fieldsV1":null}}]}},"metadata":{{"name":"NAME","managedFields":[{{"fieldsV1":{set}}}]}}}}"#
            ),
            format!(
                r#"{{"metadata":{{"name":"NAME","managedFields":[{{"fieldsV1":{set}}}],"managedFields":[{{"manager":"m","fieldsV1":{set}}}]}}}}"#
            ),
            format!(r#"{{"metadata":{{"name":"NAME","managedFields":[{{"fieldsV1":{set},"fieldsV1":null}}]}}}}"#),
            format!(r#"{{"metadata":{{"name":"NAME","managedFields":[{{"fieldsV1":null,"fieldsV1":{set}}}]}}}}"#),
        ];
        for doc in &docs {
            let objects: Vec<Object<Pod>> = (0..=DECODED_MIN_HOLDERS)
                .map(|i| Object::from_json(doc.replace("NAME", &format!("p{i}"))).unwrap())
                .collect();
            let o = &objects[0];
            assert!(!o.header().splices.is_empty(), "{doc}");
            assert!(o.header().splices.iter().all(|s| s.entry == NO_ENTRY), "{doc}");
            assert_eq!(o.decode().unwrap(), plain::<Pod, _>(o), "{doc}");
            assert_eq!(o.cast::<Value>().decode().unwrap(), plain::<Value, _>(o), "{doc}");
        }
    }

    #[test]
    fn keys_are_compared_inside_options_and_newtypes_and_refused_as_enums() {
        #[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord, Debug)]
        struct Key(String);
        #[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord, Debug)]
        #[serde(rename_all = "camelCase")]
        enum Member {
            ApiVersion,
            Kind,
            Metadata,
            Spec,
        }
        let objects = widely_held("keys");
        let o = &objects[0];
        let (doc, subs) = placeholders(o);
        // Followed: the field sets are handed over (before the fix a newtype or `Option` key was
        // not compared and the placeholder came back as `null`).
        #[derive(Deserialize, PartialEq, Debug)]
        struct Newtypes {
            metadata: BTreeMap<Key, Value>,
        }
        let want = plain::<Newtypes, _>(o);
        assert!(want.metadata[&Key("managedFields".into())][0]["fieldsV1"].is_object());
        assert_eq!(substituted::<Newtypes>(&doc, &subs).unwrap(), want);
        assert_eq!(o.cast::<Newtypes>().decode().unwrap(), want);
        type Optional = BTreeMap<Option<Key>, Value>;
        let want = plain::<Optional, _>(o);
        assert!(want[&Some(Key("metadata".into()))]["managedFields"][0]["fieldsV1"].is_object());
        assert_eq!(substituted::<Optional>(&doc, &subs).unwrap(), want);
        // An enum key is not compared: refused, then decoded whole.
        type Enum = BTreeMap<Member, Value>;
        assert!(substituted::<Enum>(&doc, &subs).is_err());
        assert_eq!(o.cast::<Enum>().decode().unwrap(), plain::<Enum, _>(o));
    }

    /// serde_json refuses documents nested more than 127 deep; a field set decodes on its own at
    /// depths its document refuses, and must then give the document's error, not a value.
    #[test]
    fn field_sets_too_deep_for_their_document_are_never_substituted() {
        for depth in [MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1, 127] {
            let set =
                format!("{}{{\"f:tag\":\"deep-{depth}\"}}{}", "{\"f:a\":".repeat(depth - 1), "}".repeat(depth - 1));
            let doc =
                format!(r#"{{"metadata":{{"name":"NAME","managedFields":[{{"manager":"m","fieldsV1":{set}}}]}}}}"#);
            let objects: Vec<Object<Pod>> = (0..=DECODED_MIN_HOLDERS)
                .map(|i| Object::from_json(doc.replace("NAME", &format!("p{i}"))).unwrap())
                .collect();
            let o = &objects[0];
            let (_, subs) = placeholders(o);
            assert_eq!(subs.len(), usize::from(depth <= MAX_NESTING), "depth {depth}");
            let whole = o.raw_json();
            let want = serde_json::from_slice::<Pod>(&whole).map_err(|e| e.to_string());
            assert_eq!(want.is_ok(), depth <= MAX_NESTING, "depth {depth}");
            let got = o.decode().map_err(|e| e.to_string().replace("invalid object JSON: ", ""));
            assert_eq!(got, want, "depth {depth}");
            let value = serde_json::from_slice::<Value>(&whole).map_err(|e| e.to_string());
            let got = o.cast::<Value>().decode().map_err(|e| e.to_string().replace("invalid object JSON: ", ""));
            assert_eq!(got, value, "depth {depth}");
        }
    }

    proptest::proptest! {
        /// Whatever the field sets (objects or not, around other members, in any entry, after
        /// entries without one or that are not objects), widely held or not, a typed decode gives
        /// what decoding the whole JSON gives, and so does the substituted decode alone.
        #[test]
        fn typed_decodes_equal_decoding_the_whole_json(
            sets in proptest::collection::vec((0usize..6, proptest::bool::ANY, "[a-z\\\\\"\u{e9}]{0,12}"), 0..5),
            tag in 0u64..u64::MAX,
            holders in proptest::sample::select(vec![1, DECODED_MIN_HOLDERS + 1]),
        ) {
            let entries: Vec<Value> = sets
                .iter()
                .map(|(kind, before, text)| {
                    let set = match kind {
                        0 => json!({"f:spec": {"f:x": {}, "f:y": text}, "f:pad": "p".repeat(80), "tag": tag}),
                        1 => json!({"f:shared": "s".repeat(100)}),
                        2 => json!(text),
                        3 => json!([tag, text]),
                        // Entries that shift the index of the ones after them: one without a
                        // field set, one that is not an object.
                        4 => return json!({"manager": text}),
                        _ => return json!(text),
                    };
                    if *before { json!({"manager": text, "fieldsV1": set}) } else { json!({"fieldsV1": set, "z": text}) }
                })
                .collect();
            let objects: Vec<Object<Pod>> = (0..holders)
                .map(|i| {
                    let v = json!({"metadata": {"name": format!("p{i}"), "managedFields": entries}, "spec": {}});
                    Object::from_json(serde_json::to_vec(&v).unwrap()).unwrap()
                })
                .collect();
            let o = &objects[0];
            let whole = o.raw_json();
            proptest::prop_assert_eq!(o.cast::<Value>().decode().unwrap(), serde_json::from_slice::<Value>(&whole).unwrap());
            let pod = serde_json::from_slice::<Pod>(&whole).map_err(|e| e.to_string());
            proptest::prop_assert_eq!(o.decode().map_err(|e| e.to_string().replace("invalid object JSON: ", "")), pod.clone());
            // The substituted decode itself (not its fallback) gives the same, whenever a large
            // field set is widely held.
            let (doc, subs) = placeholders(o);
            let large = sets.iter().filter(|(kind, ..)| *kind < 2).count();
            if holders > DECODED_MIN_HOLDERS {
                proptest::prop_assert_eq!(subs.len(), large);
            } else {
                // Only the constant set may have been decoded (by an earlier case) and kept.
                proptest::prop_assert!(subs.len() <= sets.iter().filter(|(kind, ..)| *kind == 1).count());
            }
            if !subs.is_empty() {
                proptest::prop_assert_eq!(substituted::<Value>(&doc, &subs).unwrap(), serde_json::from_slice::<Value>(&whole).unwrap());
                if let Ok(pod) = pod {
                    proptest::prop_assert_eq!(substituted::<Pod>(&doc, &subs).unwrap(), pod);
                }
            }
        }
    }
}
