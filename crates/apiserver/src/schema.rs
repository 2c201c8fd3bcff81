//! The OpenAPI schemas of Kubernetes v1.35's built-in types, and walking them field by field.
//!
//! The definitions are Kubernetes' own (see the crate's build step): every type with its
//! properties, `$ref`s between definitions, and the `x-kubernetes-*` extensions that tell how a
//! field merges (`x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` for strategic
//! merge patches; `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and
//! `x-kubernetes-map-type` for server-side apply).
//!
//! Two views walk them: [`Node`]/[`Field`] for strategic merge patches and field validation, and
//! [`TypeRef`]/[`Atom`] for structured merge (server-side apply and `managedFields`), which sees
//! every value as a scalar, a list (atomic, a set, or a map keyed by some of its elements'
//! fields) or a map (a struct with named fields, or a map of one value type; granular or
//! atomic). A [`Schemas`] is either the built-in definitions or one root schema of the same
//! JSON-Schema shape (a custom resource's `openAPIV3Schema`, [`Schemas::from_root`]).
//!
//! Invariants: the definitions are parsed once, on first use, and never change; a type is
//! found by its group, version and kind (`x-kubernetes-group-version-kind`); a [`Node`] whose
//! schema is unknown (a field the schema does not name) answers every question with "no
//! metadata", so callers fall back to plain JSON semantics below it. A type without a schema is
//! *deduced* as structured-merge-diff deduces it: maps granular, lists atomic, whatever the value;
//! the `metadata` of an object, and of an `x-kubernetes-embedded-resource` in a custom resource,
//! is always `ObjectMeta`'s. `x-kubernetes-preserve-unknown-fields` holds for the whole subtree
//! written inline below it (as kube's OpenAPI conversion hands it on; not through a `$ref`): its
//! structs take keys they do not declare, as deduced values, and its schemas without a type are
//! deduced.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The definitions text written by the build step: definition name → schema (OpenAPI v3 form).
const DEFINITIONS: &str = include_str!(concat!(env!("OUT_DIR"), "/kube-definitions.json"));

/// The parsed definitions and an index by group, version and kind; or one root schema.
pub struct Schemas {
    defs: Map<String, Value>,
    by_gvk: HashMap<(String, String, String), String>,
    /// The root schema of a [`Schemas::from_root`].
    #[cfg_attr(not(test), allow(dead_code))]
    root: Option<Value>,
}

/// The built-in types' schemas, parsed on first use.
pub(crate) fn builtin() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| Schemas::parse(DEFINITIONS))
}

impl Schemas {
    fn parse(text: &str) -> Schemas {
        let defs: Map<String, Value> = serde_json::from_str(text).expect("the build step writes a JSON object");
        let mut by_gvk = HashMap::new();
        for (name, schema) in &defs {
            let Some(gvks) = schema.get("x-kubernetes-group-version-kind").and_then(Value::as_array) else {
                continue;
            };
            // A definition naming several kinds (DeleteOptions, WatchEvent…) is shared, not a
            // resource's own type.
            if gvks.len() != 1 {
                continue;
            }
            let s = |k: &str| gvks[0].get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            by_gvk.insert((s("group"), s("version"), s("kind")), name.clone());
        }
        Schemas { defs, by_gvk, root: None }
    }

    /// The schemas of one type given by its root schema: a custom resource's
    /// `openAPIV3Schema` (JSON-Schema with the `x-kubernetes-*` extensions, no `$ref`s). Its
    /// `metadata` is `ObjectMeta`'s whatever the schema says, as kube-apiserver treats it.
    pub fn from_root(root: Value) -> Schemas {
        Schemas { defs: Map::new(), by_gvk: HashMap::new(), root: Some(root) }
    }

    /// The structured-merge view of the root of a [`Schemas::from_root`].
    pub(crate) fn root_type(&self) -> TypeRef<'_> {
        TypeRef {
            schemas: self,
            schema: self.root.as_ref(),
            kind: RefKind::Schema,
            object_root: true,
            definition: None,
            preserve: false,
        }
    }

    /// The structured-merge view of a built-in type, if it is one.
    pub(crate) fn type_of(&self, group: &str, version: &str, kind: &str) -> Option<TypeRef<'_>> {
        let (name, def) = self.defs.get_key_value(self.name_of(group, version, kind)?)?;
        Some(TypeRef {
            schemas: self,
            schema: Some(def),
            kind: RefKind::Schema,
            object_root: true,
            definition: Some(name),
            preserve: false,
        })
    }

    /// Every definition, by name.
    pub(crate) fn definitions(&self) -> &Map<String, Value> {
        &self.defs
    }

    /// The definition name of a type (`io.k8s.api.apps.v1.Deployment`).
    pub(crate) fn name_of(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.by_gvk.get(&(group.to_string(), version.to_string(), kind.to_string())).map(String::as_str)
    }

    /// The root node of a type's schema, if the type is a built-in one.
    pub(crate) fn root(&self, group: &str, version: &str, kind: &str) -> Option<Node<'_>> {
        let name = self.name_of(group, version, kind)?;
        Some(Node { schemas: self, schema: self.defs.get(name) })
    }

    /// The definition `name`, with its name as the definitions hold it (a hash lookup for the
    /// built-in definitions).
    pub(crate) fn definition(&self, name: &str) -> Option<(&str, &Value)> {
        type Index = HashMap<&'static str, (&'static str, &'static Value), foldhash::fast::RandomState>;
        static BUILTIN: OnceLock<Index> = OnceLock::new();
        if std::ptr::eq(self, builtin()) {
            let index = BUILTIN.get_or_init(|| {
                let defs = &builtin().defs;
                let mut index = Index::with_capacity_and_hasher(defs.len(), Default::default());
                index.extend(defs.iter().map(|(k, v)| (k.as_str(), (k.as_str(), v))));
                index
            });
            return index.get(name).copied();
        }
        self.defs.get_key_value(name).map(|(k, v)| (k.as_str(), v))
    }

    /// Follows `$ref` (directly or as the single element of `allOf`) to the schema it names.
    fn resolve<'a>(&'a self, v: &'a Value) -> &'a Value {
        self.resolve_named(v).0
    }

    /// [`Self::resolve`], with the name of the definition reached (None when there was no
    /// `$ref`).
    pub(crate) fn resolve_named<'a>(&'a self, mut v: &'a Value) -> (&'a Value, Option<&'a str>) {
        let mut name = None;
        for _ in 0..16 {
            let r = v.get("$ref").or_else(|| v.get("allOf")?.as_array()?.first()?.get("$ref"));
            match r.and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/")) {
                Some(n) => match self.definition(n) {
                    Some((k, d)) => {
                        v = d;
                        name = Some(k);
                    }
                    None => return (v, name),
                },
                None => return (v, name),
            }
        }
        (v, name)
    }
}

/// A place in a type's schema; `schema` is None where the schema says nothing.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    schemas: &'a Schemas,
    schema: Option<&'a Value>,
}

/// The fields an object's schema allows (see [`Node::members`]).
#[derive(Clone, Copy)]
pub(crate) enum Members<'a> {
    /// Any field: the schema is unknown or keeps unknown fields.
    Any,
    /// A map: every key is a field, each with the map's value schema.
    Map,
    /// A struct: its named properties only.
    Named(&'a Map<String, Value>),
}

impl Members<'_> {
    /// Whether `name` is a field: None when any field is.
    pub(crate) fn knows(&self, name: &str) -> Option<bool> {
        match self {
            Members::Any => None,
            Members::Map => Some(true),
            Members::Named(props) => Some(props.contains_key(name)),
        }
    }
}

/// How one field of an object merges, and the schema of its value (of its items, for a list).
#[derive(Clone, Copy)]
pub(crate) struct Field<'a> {
    /// The value's schema: the items' schema when the field is a list.
    pub(crate) node: Node<'a>,
    /// `x-kubernetes-patch-strategy`: "merge", "retainKeys", "merge,retainKeys", "replace".
    pub(crate) patch_strategy: Option<&'a str>,
    /// `x-kubernetes-patch-merge-key`.
    pub(crate) merge_key: Option<&'a str>,
}

impl<'a> Node<'a> {
    /// A node that knows nothing (plain JSON semantics everywhere below it).
    pub(crate) fn unknown(schemas: &'a Schemas) -> Self {
        Node { schemas, schema: None }
    }

    /// The resolved schema at this node, if known.
    pub(crate) fn schema(&self) -> Option<&'a Value> {
        self.schema.map(|s| self.schemas.resolve(s))
    }

    /// The `type` of the schema here ("object", "array", "string"…), if known.
    #[cfg(test)]
    fn type_name(&self) -> Option<&'a str> {
        self.schema()?.get("type")?.as_str()
    }

    /// Which fields the object this node describes has: [`Members::Any`] when the schema is
    /// unknown or takes any field (no `properties`, or `x-kubernetes-preserve-unknown-fields`).
    pub(crate) fn members(&self) -> Members<'a> {
        let Some(s) = self.schema() else { return Members::Any };
        if s.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true) {
            return Members::Any;
        }
        if s.get("additionalProperties").is_some_and(Value::is_object) {
            return Members::Map;
        }
        match s.get("properties").and_then(Value::as_object) {
            Some(props) => Members::Named(props),
            None => Members::Any,
        }
    }

    /// Field `name` of the object this node describes: a named property, or the value schema
    /// of a map (`additionalProperties`).
    pub(crate) fn field(&self, name: &str) -> Field<'a> {
        let field_schema = self.schema().and_then(|s| {
            s.get("properties")
                .and_then(|p| p.get(name))
                .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
        });
        self.describe(field_schema)
    }

    fn describe(&self, field_schema: Option<&'a Value>) -> Field<'a> {
        let unknown = Field { node: Node::unknown(self.schemas), patch_strategy: None, merge_key: None };
        let Some(fs) = field_schema else { return unknown };
        let s = |k: &str| fs.get(k).and_then(Value::as_str);
        let resolved = self.schemas.resolve(fs);
        let is_list = resolved.get("type").and_then(Value::as_str) == Some("array");
        let value = if is_list { resolved.get("items") } else { Some(fs) };
        Field {
            node: Node { schemas: self.schemas, schema: value },
            patch_strategy: s("x-kubernetes-patch-strategy"),
            merge_key: s("x-kubernetes-patch-merge-key"),
        }
    }
}

/// A place in a schema as structured merge sees it (structured-merge-diff's type reference).
#[derive(Clone, Copy)]
pub(crate) struct TypeRef<'a> {
    schemas: &'a Schemas,
    /// The schema here, unresolved (a property's own schema, with its extensions).
    schema: Option<&'a Value>,
    kind: RefKind,
    /// The root of an object: its `metadata` is `ObjectMeta`.
    object_root: bool,
    /// The definition `schema` is, when it is one itself (not a `$ref` to it).
    definition: Option<&'a str>,
    /// An enclosing schema keeps unknown fields (`x-kubernetes-preserve-unknown-fields`), which
    /// every schema written inline below it inherits.
    preserve: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RefKind {
    /// Described by `schema`.
    Schema,
    /// No schema: maps granular (of deduced values), lists atomic.
    Deduced,
    /// No schema, and atomic whatever the value.
    UntypedAtomic,
}

/// What a value is, for structured merge: structured-merge-diff's atom.
#[derive(Clone, Copy)]
pub(crate) enum Atom<'a> {
    /// A leaf value.
    Scalar(Scalar),
    /// A list.
    List(ListType<'a>),
    /// A struct or a map.
    Map(MapType<'a>),
}

/// The kind of a scalar, as structured merge validates it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    /// A string.
    String,
    /// An integer or a float.
    Numeric,
    /// A boolean.
    Boolean,
    /// Any scalar (`IntOrString`, `Quantity`, no schema).
    Untyped,
}

/// How the elements of a list are told apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ListKind<'a> {
    /// The list is one value.
    Atomic,
    /// A set of scalars (`x-kubernetes-list-type: set`, or a primitive list merged by strategic
    /// merge patches).
    Set,
    /// Elements are maps told apart by these key fields (`x-kubernetes-list-type: map`, or a
    /// strategic merge key).
    Map(&'a [Value]),
}

/// A list's type.
#[derive(Clone, Copy)]
pub(crate) struct ListType<'a> {
    /// How its elements are told apart.
    pub(crate) kind: ListKind<'a>,
    /// The elements' type.
    pub(crate) items: TypeRef<'a>,
}

/// What a `null` in a struct field stands for, once the object is held as its type holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum NullField {
    /// Nothing: the field is left out (an optional field of a built-in type, or of a custom
    /// resource's schema unless `nullable`).
    Drop,
    /// Go's zero value of a field it always serializes.
    Zero(&'static Value),
    /// A null (types without a schema, `nullable` fields).
    Keep,
}

/// A map's or struct's type.
#[derive(Clone, Copy)]
pub(crate) struct MapType<'a> {
    /// The whole map is one value (`x-kubernetes-map-type: atomic`).
    pub(crate) atomic: bool,
    schemas: &'a Schemas,
    /// The struct's named fields.
    properties: Option<&'a Map<String, Value>>,
    /// The type of other keys (a map's values; deduced values where unknown fields are kept).
    elements: Option<TypeRef<'a>>,
    /// The struct's definition (built-in types), for what Go always serializes.
    definition: Option<&'a str>,
    required: Option<&'a [Value]>,
    object_root: bool,
    /// An embedded resource (`x-kubernetes-embedded-resource`): `metadata` is `ObjectMeta`, as
    /// at the root of a custom resource.
    embedded: bool,
    /// Unknown fields are kept here, so inline schemas below keep them too.
    preserve: bool,
}

impl<'a> TypeRef<'a> {
    /// Whether the schema here is an inline string without a format (Go's `string`, not bytes
    /// or a type of its own such as a Quantity).
    fn is_plain_string(&self) -> bool {
        self.schema
            .is_some_and(|s| s.get("type").and_then(Value::as_str) == Some("string") && s.get("format").is_none())
    }

    /// A type without a schema (a custom resource without one): deduced from the values, with
    /// `ObjectMeta` for `metadata`.
    pub(crate) fn unknown_object(schemas: &'a Schemas) -> Self {
        TypeRef { schemas, schema: None, kind: RefKind::Deduced, object_root: true, definition: None, preserve: false }
    }

    fn deduced(schemas: &'a Schemas) -> Self {
        TypeRef { schemas, schema: None, kind: RefKind::Deduced, object_root: false, definition: None, preserve: false }
    }

    fn untyped_atomic(schemas: &'a Schemas) -> Self {
        TypeRef {
            schemas,
            schema: None,
            kind: RefKind::UntypedAtomic,
            object_root: false,
            definition: None,
            preserve: false,
        }
    }

    fn of(schemas: &'a Schemas, schema: &'a Value) -> Self {
        TypeRef {
            schemas,
            schema: Some(schema),
            kind: RefKind::Schema,
            object_root: false,
            definition: None,
            preserve: false,
        }
    }

    /// The type of `schema`, written below a schema that keeps unknown fields when `preserve`:
    /// kube's conversion of OpenAPI schemas hands that on to inline schemas, not to the
    /// definitions a `$ref` names.
    fn below(schemas: &'a Schemas, schema: &'a Value, preserve: bool) -> Self {
        let preserve = preserve && schemas.resolve_named(schema).1.is_none();
        TypeRef { preserve, ..TypeRef::of(schemas, schema) }
    }

    /// The atom for `value` (None: absent): the schema's, or the one the value's JSON type
    /// deduces where there is no schema. A schema allowing several kinds (`oneOf`, no type)
    /// takes the value's.
    pub(crate) fn atom(&self, value: Option<&Value>) -> Atom<'a> {
        let by_value = |map: MapType<'a>, list: ListType<'a>| match value {
            Some(Value::Array(_)) => Atom::List(list),
            Some(Value::Object(_) | Value::Null) | None => Atom::Map(map),
            Some(_) => Atom::Scalar(Scalar::Untyped),
        };
        let plain_map = |atomic: bool, elements: TypeRef<'a>| MapType {
            atomic,
            schemas: self.schemas,
            properties: None,
            elements: Some(elements),
            definition: None,
            required: None,
            object_root: self.object_root,
            embedded: false,
            preserve: false,
        };
        let atomic_list = |items: TypeRef<'a>| ListType { kind: ListKind::Atomic, items };
        let s = self.schemas;
        match self.kind {
            RefKind::Deduced => {
                by_value(plain_map(false, TypeRef::deduced(s)), atomic_list(TypeRef::untyped_atomic(s)))
            }
            RefKind::UntypedAtomic => {
                by_value(plain_map(true, TypeRef::untyped_atomic(s)), atomic_list(TypeRef::untyped_atomic(s)))
            }
            RefKind::Schema => {
                let Some(own) = self.schema else {
                    return by_value(plain_map(false, TypeRef::deduced(s)), atomic_list(TypeRef::untyped_atomic(s)));
                };
                let shape = if std::ptr::eq(s, builtin()) && !self.preserve { builtin_shape(own) } else { None };
                let preserve = self.preserve || keeps_unknown_fields(s, own);
                match shape.unwrap_or_else(|| shape_of(s, own, self.preserve)) {
                    Shape::Struct { properties, elements, atomic, definition, required, embedded } => {
                        Atom::Map(MapType {
                            atomic,
                            schemas: s,
                            properties,
                            elements: match elements {
                                Elements::Schema(e) => Some(TypeRef::below(s, e, preserve)),
                                Elements::Deduced => Some(TypeRef::deduced(s)),
                                Elements::UntypedAtomic => Some(TypeRef::untyped_atomic(s)),
                                Elements::Closed => None,
                            },
                            definition: definition.or(self.definition),
                            required,
                            object_root: self.object_root,
                            embedded,
                            preserve,
                        })
                    }
                    Shape::List { kind, items } => Atom::List(ListType {
                        kind,
                        items: match items {
                            Some(i) => TypeRef::below(s, i, preserve),
                            None => TypeRef::untyped_atomic(s),
                        },
                    }),
                    Shape::Scalar(k) => Atom::Scalar(k),
                    Shape::OneOf => match value {
                        Some(Value::Array(_) | Value::Object(_)) => by_value(
                            plain_map(true, TypeRef::untyped_atomic(s)),
                            atomic_list(TypeRef::untyped_atomic(s)),
                        ),
                        _ => Atom::Scalar(Scalar::Untyped),
                    },
                    Shape::Deduced => {
                        by_value(plain_map(false, TypeRef::deduced(s)), atomic_list(TypeRef::untyped_atomic(s)))
                    }
                    Shape::Untyped => {
                        by_value(plain_map(true, TypeRef::untyped_atomic(s)), atomic_list(TypeRef::untyped_atomic(s)))
                    }
                }
            }
        }
    }
}

/// What a schema says a value is, independently of the value (see [`TypeRef::atom`]).
#[derive(Clone, Copy)]
enum Shape<'a> {
    /// `type: object`: a struct, or a map of `elements`.
    Struct {
        properties: Option<&'a Map<String, Value>>,
        elements: Elements<'a>,
        atomic: bool,
        definition: Option<&'a str>,
        required: Option<&'a [Value]>,
        /// `x-kubernetes-embedded-resource`: an object with `apiVersion`, `kind` and
        /// `ObjectMeta`'s `metadata`.
        embedded: bool,
    },
    /// `type: array`.
    List { kind: ListKind<'a>, items: Option<&'a Value> },
    /// A scalar type.
    Scalar(Scalar),
    /// Several kinds (`oneOf`): the value's.
    OneOf,
    /// No type, unknown fields kept: deduced.
    Deduced,
    /// No type: atomic whatever the value.
    Untyped,
}

/// The type of a map's keys that are not named fields.
#[derive(Clone, Copy)]
enum Elements<'a> {
    Schema(&'a Value),
    Deduced,
    UntypedAtomic,
    /// None: a struct refuses fields it does not declare.
    Closed,
}

/// Whether schema `own` (a property's own schema, with its extensions) says
/// `x-kubernetes-preserve-unknown-fields: true`.
fn keeps_unknown_fields(s: &Schemas, own: &Value) -> bool {
    let flag = |v: &Value| v.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true);
    flag(own) || flag(s.resolve(own))
}

/// The shape of schema `own` (a property's own schema, with its extensions), below a schema
/// that keeps unknown fields when `inherited`.
fn shape_of<'a>(s: &'a Schemas, own: &'a Value, inherited: bool) -> Shape<'a> {
    let (resolved, definition) = s.resolve_named(own);
    let ext = |k: &str| own.get(k).or_else(|| resolved.get(k));
    let preserve = || inherited || keeps_unknown_fields(s, own);
    if ext("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return Shape::Scalar(Scalar::Untyped);
    }
    match resolved.get("type").and_then(Value::as_str) {
        Some("object") => {
            let properties = resolved.get("properties").and_then(Value::as_object);
            let additional = resolved.get("additionalProperties").filter(|a| a.is_object());
            let elements = match (additional, preserve(), properties) {
                (Some(a), _, _) => Elements::Schema(a),
                (None, true, _) => Elements::Deduced,
                (None, false, Some(_)) => Elements::Closed,
                (None, false, None) => Elements::UntypedAtomic,
            };
            Shape::Struct {
                properties,
                elements,
                atomic: ext("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic"),
                definition,
                required: resolved.get("required").and_then(Value::as_array).map(Vec::as_slice),
                embedded: ext("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true),
            }
        }
        Some("array") => Shape::List { kind: list_kind(own, resolved), items: resolved.get("items") },
        Some("string") => Shape::Scalar(Scalar::String),
        Some("integer" | "number") => Shape::Scalar(Scalar::Numeric),
        Some("boolean") => Shape::Scalar(Scalar::Boolean),
        Some(_) => Shape::Scalar(Scalar::Untyped),
        None if resolved.get("oneOf").is_some() => Shape::OneOf,
        None if preserve() => Shape::Deduced,
        None => Shape::Untyped,
    }
}

/// The shape of a built-in schema node, computed once for every node of the definitions.
fn builtin_shape(own: &Value) -> Option<Shape<'static>> {
    type Shapes = HashMap<usize, Shape<'static>, foldhash::fast::RandomState>;
    static SHAPES: OnceLock<Shapes> = OnceLock::new();
    let shapes = SHAPES.get_or_init(|| {
        let b = builtin();
        let mut shapes = Shapes::default();
        fn visit(b: &'static Schemas, v: &'static Value, shapes: &mut Shapes) {
            if shapes.contains_key(&(v as *const Value as usize)) {
                return;
            }
            shapes.insert(v as *const Value as usize, shape_of(b, v, false));
            if let Some(props) = v.get("properties").and_then(Value::as_object) {
                props.values().for_each(|p| visit(b, p, shapes));
            }
            for k in ["items", "additionalProperties"] {
                if let Some(c) = v.get(k).filter(|c| c.is_object()) {
                    visit(b, c, shapes);
                }
            }
        }
        for d in b.defs.values() {
            visit(b, d, &mut shapes);
        }
        shapes
    });
    shapes.get(&(own as *const Value as usize)).copied()
}

/// How a list schema's elements are told apart, as kube's OpenAPI-to-structured-merge
/// conversion decides: `x-kubernetes-list-type` first, else a strategic `merge` (keyed by the
/// merge key, or a set without one), else atomic.
fn list_kind<'a>(own: &'a Value, resolved: &'a Value) -> ListKind<'a> {
    let ext = |k: &str| own.get(k).or_else(|| resolved.get(k));
    match ext("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => return ListKind::Set,
        Some("map") => {
            return match ext("x-kubernetes-list-map-keys").and_then(Value::as_array) {
                Some(keys) if !keys.is_empty() => ListKind::Map(keys.as_slice()),
                _ => ListKind::Atomic,
            };
        }
        Some(_) => return ListKind::Atomic,
        None => {}
    }
    match ext("x-kubernetes-patch-strategy").and_then(Value::as_str) {
        Some("merge" | "merge,retainKeys") => match ext("x-kubernetes-patch-merge-key") {
            Some(k @ Value::String(_)) => ListKind::Map(std::slice::from_ref(k)),
            _ => ListKind::Set,
        },
        _ => ListKind::Atomic,
    }
}

impl<'a> ListType<'a> {
    /// The value a map-list element's key field takes when the element leaves it out: the
    /// `default` of the key's property in a custom resource's schema (kube's OpenAPI conversion
    /// keeps it for structured merge), the built-in types' known ones (`protocol: TCP` of
    /// container and service ports).
    pub(crate) fn key_default(&self, key: &str) -> Option<&'a Value> {
        let own = self.items.schema?;
        let (resolved, def) = self.items.schemas.resolve_named(own);
        if !std::ptr::eq(self.items.schemas, builtin()) {
            return resolved.get("properties")?.get(key)?.get("default");
        }
        crate::managed_fields::presence::key_default(def?, key)
    }
}

impl<'a> MapType<'a> {
    /// The type of key `name`: a named field's, else the map's value type; None for a field a
    /// struct does not declare.
    pub(crate) fn field(&self, name: &str) -> Option<TypeRef<'a>> {
        if self.object_root || self.embedded {
            match name {
                "metadata" => {
                    let b = builtin();
                    let (name, meta) = b.defs.get_key_value("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")?;
                    // A built-in object's metadata is a Go struct (empty labels are left out);
                    // a custom resource's (and an embedded resource's) is unstructured, taken
                    // as sent.
                    let definition = self.definition.filter(|_| self.object_root).map(|_| name.as_str());
                    return Some(TypeRef { definition, ..TypeRef::of(b, meta) });
                }
                "apiVersion" | "kind" => return Some(TypeRef::of(builtin(), &STRING_SCHEMA)),
                _ => {}
            }
        }
        if let Some(p) = self.properties.and_then(|p| p.get(name)) {
            return Some(TypeRef::below(self.schemas, p, self.preserve));
        }
        self.elements
    }

    /// The type of key `name`, deduced from the value for a field a struct does not declare.
    pub(crate) fn field_or_deduced(&self, name: &str) -> TypeRef<'a> {
        self.field(name).unwrap_or_else(|| TypeRef::deduced(self.schemas))
    }

    /// Whether `name` is a field the struct declares (not a map key).
    pub(crate) fn is_named_field(&self, name: &str) -> bool {
        ((self.object_root || self.embedded) && matches!(name, "metadata" | "apiVersion" | "kind"))
            || self.properties.is_some_and(|p| p.contains_key(name))
    }

    /// The value field `name` has in the Go struct of a built-in type, given its JSON value (None:
    /// absent): the zero value Go always serializes where the JSON leaves it out or has `null`,
    /// and nothing for an empty list or map in a field Go leaves out when empty, or for a zero
    /// number or `false` Go holds by value and leaves out. Other types' values are taken as
    /// they are.
    pub(crate) fn go_value<'v>(&self, name: &str, v: Option<&'v Value>) -> Option<&'v Value> {
        let Some(definition) = self.definition.filter(|_| std::ptr::eq(self.schemas, builtin())) else {
            return v;
        };
        match v {
            None | Some(Value::Null) => self.zero_value(name),
            // An empty list or map Go always writes reads back as null (kube stores protobuf).
            Some(v)
                if is_empty_list_or_map(v, || self.is_plain_map(name))
                    && self.zero_value(name).is_some_and(Value::is_null) =>
            {
                self.zero_value(name)
            }
            Some(Value::Array(a)) if a.is_empty() && !self.is_required(name) && self.is_list(name) => None,
            Some(Value::Object(m)) if m.is_empty() && !self.is_required(name) && self.is_plain_map(name) => None,
            Some(s) if is_zero_scalar(s) && crate::managed_fields::presence::is_value_scalar(definition, name) => None,
            Some(Value::String(s))
                if s.is_empty()
                    && crate::managed_fields::presence::is_value_string(definition, name, self.is_required(name)) =>
            {
                None
            }
            other => other,
        }
    }

    fn is_required(&self, name: &str) -> bool {
        self.required.is_some_and(|r| r.iter().any(|x| x.as_str() == Some(name)))
    }

    /// Whether field `name` is a list (not a JSON value of any type, such as a RawExtension or a
    /// CRD schema's `default`, which Go holds by pointer).
    fn is_list(&self, name: &str) -> bool {
        self.properties
            .and_then(|p| p.get(name))
            .is_some_and(|p| self.schemas.resolve(p).get("type").and_then(Value::as_str) == Some("array"))
    }

    /// Whether field `name` is a map of values (not a struct).
    fn is_plain_map(&self, name: &str) -> bool {
        self.properties.and_then(|p| p.get(name)).is_some_and(|p| {
            let r = self.schemas.resolve(p);
            r.get("additionalProperties").is_some_and(Value::is_object)
        })
    }

    /// What a `null` in field `name` becomes.
    pub(crate) fn null_field(&self, name: &str) -> NullField {
        if self.object_root && name == "metadata" {
            return NullField::Drop;
        }
        let Some(props) = self.properties else {
            // Go's maps of strings (labels, annotations, a ConfigMap's data) hold a null as "".
            return match self.elements {
                Some(e) if std::ptr::eq(self.schemas, builtin()) && e.is_plain_string() => {
                    NullField::Zero(&EMPTY_STRING)
                }
                _ => NullField::Keep,
            };
        };
        if self.definition.is_some() && std::ptr::eq(self.schemas, builtin()) {
            return match self.zero_value(name) {
                Some(z) => NullField::Zero(z),
                None => NullField::Drop,
            };
        }
        match props.get(name) {
            Some(p) if p.get("nullable").and_then(Value::as_bool) == Some(true) => NullField::Keep,
            Some(_) => NullField::Drop,
            None => NullField::Keep,
        }
    }

    /// Whether keys the struct does not declare are refused (it has neither a value type for
    /// other keys nor keeps unknown fields).
    pub(crate) fn closed(&self) -> bool {
        self.elements.is_none()
    }

    /// The value Go's struct holds for field `name` when a request leaves it out, when Go
    /// always serializes the field (see [`crate::managed_fields::presence`]); None for fields
    /// that are absent when unset, and for every field of a type without built-in schema.
    pub(crate) fn zero_value(&self, name: &str) -> Option<&'static Value> {
        let def = self.definition?;
        if !std::ptr::eq(self.schemas, builtin()) {
            return None;
        }
        crate::managed_fields::presence::builtin_zero_value(def, name, || self.is_required(name))
    }
}

static EMPTY_STRING: Value = Value::String(String::new());

/// Whether `v` is an empty list, or an empty object that `is_map` says is a map (not a struct).
fn is_empty_list_or_map(v: &Value, is_map: impl FnOnce() -> bool) -> bool {
    match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty() && is_map(),
        _ => false,
    }
}

/// Whether `v` is a zero number or `false`.
pub(crate) fn is_zero_scalar(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

static STRING_SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| serde_json::json!({"type": "string"}));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_built_in_types_and_their_merge_keys() {
        let s = builtin();
        assert_eq!(s.name_of("apps", "v1", "Deployment"), Some("io.k8s.api.apps.v1.Deployment"));
        assert_eq!(s.name_of("", "v1", "Pod"), Some("io.k8s.api.core.v1.Pod"));
        let pod_spec =
            s.root("apps", "v1", "Deployment").unwrap().field("spec").node.field("template").node.field("spec");
        let containers = pod_spec.node.field("containers");
        assert_eq!(containers.patch_strategy, Some("merge"));
        assert_eq!(containers.merge_key, Some("name"));
        let ports = containers.node.field("ports");
        assert_eq!(ports.merge_key, Some("containerPort"));
        let tolerations = pod_spec.node.field("tolerations");
        assert_eq!(tolerations.patch_strategy, None);
        let finalizers = s.root("", "v1", "ConfigMap").unwrap().field("metadata").node.field("finalizers");
        assert_eq!(finalizers.patch_strategy, Some("merge"));
        let data = s.root("", "v1", "ConfigMap").unwrap().field("data");
        assert_eq!(data.node.type_name(), Some("object"));
        assert_eq!(data.node.field("any-key").node.type_name(), Some("string"));
        assert!(s.root("example.com", "v1", "Widget").is_none());
        assert!(containers.node.field("noSuchField").node.schema().is_none());
    }

    #[test]
    fn a_custom_resource_schema_drives_structured_merge() {
        let schemas = Schemas::from_root(serde_json::json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "mode": {"type": "string"},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"}},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}
            }
        }));
        let ty = schemas.root_type();
        let Atom::Map(root) = ty.atom(None) else { panic!("an object") };
        let Atom::Map(spec) = root.field("spec").unwrap().atom(None) else { panic!("a struct") };
        assert!(root.is_named_field("spec") && root.is_named_field("metadata"));
        assert!(matches!(spec.field("mode").unwrap().atom(None), Atom::Scalar(Scalar::String)));
        let Atom::Map(selector) = spec.field("selector").unwrap().atom(None) else { panic!("a map") };
        assert!(selector.atomic);
        let Atom::List(ports) = spec.field("ports").unwrap().atom(None) else { panic!("a list") };
        assert_eq!(ports.kind, ListKind::Map(&[serde_json::json!("name")]));
        let Atom::Map(extra) = spec.field("extra").unwrap().atom(None) else { panic!("a map") };
        assert!(!extra.closed(), "unknown fields are kept");
        assert!(spec.field("bogus").is_none() && spec.closed());
        // metadata is ObjectMeta: finalizers are a set.
        let Atom::Map(meta) = root.field("metadata").unwrap().atom(None) else { panic!("ObjectMeta") };
        let Atom::List(finalizers) = meta.field("finalizers").unwrap().atom(None) else { panic!("a list") };
        assert_eq!(finalizers.kind, ListKind::Set);
    }

    #[test]
    fn built_in_list_and_map_types_survive_the_conversion() {
        let pod = builtin().type_of("", "v1", "Pod").unwrap();
        let field = |t: TypeRef<'static>, name: &str| match t.atom(None) {
            Atom::Map(m) => m.field(name).unwrap(),
            _ => panic!("{name}: not in a struct"),
        };
        let pod_spec = field(pod, "spec");
        let Atom::List(containers) = field(pod_spec, "containers").atom(None) else { panic!() };
        assert_eq!(containers.kind, ListKind::Map(&[serde_json::json!("name")]));
        let Atom::List(ports) = field(containers.items, "ports").atom(None) else { panic!() };
        let keys = [serde_json::json!("containerPort"), serde_json::json!("protocol")];
        assert_eq!(ports.kind, ListKind::Map(&keys));
        assert_eq!(ports.key_default("protocol"), Some(&serde_json::json!("TCP")));
        let Atom::List(args) = field(containers.items, "args").atom(None) else { panic!() };
        assert_eq!(args.kind, ListKind::Atomic);
        let Atom::List(tolerations) = field(pod_spec, "tolerations").atom(None) else { panic!() };
        assert_eq!(tolerations.kind, ListKind::Atomic);
        // x-kubernetes-map-type on a field, and on a referenced type.
        let Atom::Map(node_selector) = field(pod_spec, "nodeSelector").atom(None) else { panic!() };
        assert!(node_selector.atomic);
        let deployment = builtin().type_of("apps", "v1", "Deployment").unwrap();
        let Atom::Map(selector) = field(field(deployment, "spec"), "selector").atom(None) else { panic!() };
        assert!(selector.atomic);
        let Atom::Map(labels) = field(field(pod, "metadata"), "labels").atom(None) else { panic!() };
        assert!(!labels.atomic && !labels.closed());
        let Atom::List(finalizers) = field(field(pod, "metadata"), "finalizers").atom(None) else { panic!() };
        assert_eq!(finalizers.kind, ListKind::Set);
        // IntOrString and Quantity are scalars of any kind.
        let Atom::Map(resources) = field(containers.items, "resources").atom(None) else { panic!() };
        let Atom::Map(limits) = resources.field("limits").unwrap().atom(None) else { panic!() };
        assert!(matches!(
            limits.field("cpu").unwrap().atom(Some(&serde_json::json!("1"))),
            Atom::Scalar(Scalar::Untyped)
        ));
    }
}
