//! The media type of an answer, chosen from the request's `Accept` header as kube-apiserver
//! chooses it, and answers in YAML.
//!
//! The header's media ranges are read and put in goautoneg's order (its insertion sort: a
//! higher `q` first, then a range with a type before `*/…`, a range with a subtype before
//! `…/*`, the client's order otherwise; `q=0` ranges stay, last) and each is matched against
//! the server's media types in their order — JSON, YAML, protobuf — so `*/*` and
//! `application/*` mean JSON. A range is passed over as kube's endpoint restrictions pass it
//! over: a `stream` other than `watch`, or in YAML; a rendering (`as`, `g`, `v`) other than a
//! meta.k8s.io Table (JSON, YAML) or PartialObjectMetadata (JSON, YAML here), or aggregated
//! discovery's; any rendering for a Status error. The first match is the answer's media type
//! and rendering (see `table::Render`); a kind with no protobuf form takes the next one the
//! client accepts. An absent or empty header takes JSON.
//!
//! YAML: kube's YAML serializer writes the JSON it would send through sigs.k8s.io/yaml
//! (`yaml_emit.rs`). Objects, lists, Tables, Status errors and discovery documents are
//! answered in YAML (`Content-Type: application/yaml`) when the client puts YAML before JSON;
//! a watch is a 406 (that serializer has no streaming form), its Status in YAML too; an object
//! go-yaml cannot read back (DEL or C1 controls in a string) is a 500 whose Status carries
//! go-yaml's error, as kube's answer writer turns a failed encoding into one.
//!
//! Invariants: an answer is re-encoded whole or not at all, after everything else about it is
//! decided; documents served as they are (OpenAPI, the index, `/version`, health checks,
//! metrics) are not negotiated here.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::body::Body;
use crate::table::{IncludeObject, Render};

/// The media types answers are written in, in the server's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Media {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// The media types an `Accept` header takes, most preferred first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accept {
    order: [Option<Media>; 3],
    /// The order for answers that take no rendering (Status errors: kube writes them with
    /// `DefaultEndpointRestrictions`, which pass over every range with `as`, `g` or `v`).
    plain: [Option<Media>; 3],
    /// The rendering of a resource's answer: that of the first range the resource can be
    /// answered in, for a kind with a protobuf form (`[0]`) and for one without (`[1]`).
    render: [Render; 2],
    /// The media type aggregated discovery is asked for in, if it is.
    aggregated: Option<Media>,
}

impl Accept {
    /// Reads an `Accept` header: none, or an empty one, takes anything (JSON first); one with
    /// no media range the server writes takes nothing.
    pub(crate) fn parse(header: Option<&str>) -> Accept {
        let header = header.unwrap_or("");
        if header.is_empty() {
            let any = [Some(Media::Json), Some(Media::Yaml), Some(Media::Protobuf)];
            return Accept { order: any, plain: any, render: [Render::Object; 2], aggregated: None };
        }
        let clauses = clauses(header);
        let render =
            |protobuf: bool| match clauses.iter().find(|c| c.taken_for_resource(protobuf)).and_then(|c| c.convert) {
                Some(("Table", _, _)) => Render::Table(IncludeObject::Metadata),
                Some(("PartialObjectMetadata" | "PartialObjectMetadataList", _, _)) => Render::Metadata,
                _ => Render::Object,
            };
        // As kube's discovery wrapper negotiates: ranges without the rendering do not count.
        let aggregated = clauses
            .iter()
            .filter(|c| c.convert == Some(("APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2")))
            .find_map(|c| [Media::Json, Media::Yaml].into_iter().find(|m| c.takes(*m)));
        let order = |taken: &dyn Fn(&Clause, Media) -> bool| {
            let mut order = [None; 3];
            let mut n = 0;
            for c in &clauses {
                for m in [Media::Json, Media::Yaml, Media::Protobuf] {
                    if taken(c, m) && !order.contains(&Some(m)) {
                        order[n] = Some(m);
                        n += 1;
                    }
                }
            }
            order
        };
        Accept {
            order: order(&|c, m| c.takes(m)),
            plain: order(&|c, m| c.takes(m) && c.convert.is_none()),
            render: [render(true), render(false)],
            aggregated,
        }
    }

    /// The rendering of a resource's answer (see `table::Render`), for a kind with a protobuf
    /// form or without (a custom resource: its protobuf ranges are passed over).
    pub(crate) fn render(self, protobuf: bool) -> Render {
        self.render[usize::from(!protobuf)]
    }

    /// The media type aggregated discovery (`apidiscovery.k8s.io/v2`) is asked for in — JSON or
    /// YAML; a protobuf range is passed over — when it is.
    pub(crate) fn aggregated(self) -> Option<Media> {
        self.aggregated
    }

    /// The choice for an answer of status `code`: an error's takes no rendering.
    pub(crate) fn for_status(self, code: http::StatusCode) -> Accept {
        match code.as_u16() >= 400 {
            true => Accept { order: self.plain, ..self },
            false => self,
        }
    }

    /// Whether the client takes anything the server writes.
    pub(crate) fn takes_any(self) -> bool {
        self.order[0].is_some()
    }

    /// The client's first choice.
    pub(crate) fn first(self) -> Option<Media> {
        self.order[0]
    }

    /// The client's first choice but `m` (for an answer that cannot be given in `m`).
    pub(crate) fn first_but(self, m: Media) -> Option<Media> {
        self.order.into_iter().flatten().find(|o| *o != m)
    }

    /// Whether the client takes `a` and puts it before `b`.
    pub(crate) fn prefers(self, a: Media, b: Media) -> bool {
        let at = |m| self.order.iter().position(|o| *o == Some(m));
        match (at(a), at(b)) {
            (Some(a), Some(b)) => a < b,
            (a, _) => a.is_some(),
        }
    }
}

/// One media range of an `Accept` header, as goautoneg reads it.
#[derive(Debug, Clone, PartialEq)]
struct Clause<'a> {
    q: f64,
    ty: &'a str,
    sub: &'a str,
    /// The `as`, `g` and `v` parameters: the rendering asked for (kind, group, version).
    convert: Option<(&'a str, &'a str, &'a str)>,
    /// The `stream` parameter.
    stream: &'a str,
}

/// The media ranges of a non-empty `Accept` header in the order the server tries them
/// (goautoneg's `ParseAccept`).
fn clauses(header: &str) -> Vec<Clause<'_>> {
    let mut clauses: Vec<Clause> = header.split(',').filter_map(Clause::parse).collect();
    // goautoneg sorts with `sort.Sort`, an insertion sort at these lengths, by a "less" that is
    // not an order (`*/*;q=1` and `a/b;q=0.5` are each less than the other): the same sort
    // gives the same answers.
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && clauses[j].before(&clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
    clauses
}

impl<'a> Clause<'a> {
    /// goautoneg's reading of one comma-separated part: `type/subtype` (`*` alone is `*/*`; a
    /// trailing `/` is allowed, a third part is not), then `;`-separated `key=value` parameters
    /// (one without a value, or with a second `=` followed by more, is skipped; `q` is a float,
    /// `0` when it does not parse).
    fn parse(part: &'a str) -> Option<Clause<'a>> {
        let part = part.trim_matches(' ');
        let (range, params) = part.split_once(';').unwrap_or((part, ""));
        let (ty, rest) = range.split_once('/').unwrap_or((range, ""));
        let ty = ty.trim_matches(' ');
        let sub = if rest.is_empty() {
            if ty != "*" {
                return None;
            }
            "*"
        } else {
            let (sub, more) = rest.split_once('/').unwrap_or((rest, ""));
            if !more.is_empty() {
                return None;
            }
            sub.trim_matches(' ')
        };
        let mut clause = Clause { q: 1.0, ty, sub, convert: None, stream: "" };
        let (mut kind, mut group, mut version) = (None, None, None);
        for p in params.split(';') {
            // `k` and `k=` are skipped, `k=v=w` too; `k=v=` is `v` and `k==` empty.
            let Some((k, rest)) = p.split_once('=').filter(|(_, rest)| !rest.is_empty()) else { continue };
            let (v, after) = rest.split_once('=').unwrap_or((rest, ""));
            if !after.is_empty() {
                continue;
            }
            let value = v.trim_matches(' ');
            match k.trim_matches(' ') {
                "q" => clause.q = v.parse::<f32>().map(f64::from).unwrap_or(0.0),
                "as" => kind = Some(value),
                "g" => group = Some(value),
                "v" => version = Some(value),
                "stream" => clause.stream = value,
                _ => {}
            }
        }
        if kind.is_some() || group.is_some() || version.is_some() {
            clause.convert = Some((kind.unwrap_or(""), group.unwrap_or(""), version.unwrap_or("")));
        }
        Some(clause)
    }

    /// goautoneg's "less": a higher weight, or more specific.
    fn before(&self, other: &Clause) -> bool {
        self.q > other.q || (self.ty != "*" && other.ty == "*") || (self.sub != "*" && other.sub == "*")
    }

    /// Whether the server may answer this range in `m`, as kube's negotiation decides it for a
    /// resource: the type matches; a `stream` is `watch`, in a media type with a streaming form
    /// (JSON, protobuf); a rendering is a meta.k8s.io v1 or v1beta1 Table (JSON or YAML) or
    /// PartialObjectMetadata(List) (JSON or YAML here: a protobuf rendering is passed over), or
    /// aggregated discovery's APIGroupDiscoveryList.
    fn takes(&self, m: Media) -> bool {
        let sub = match m {
            Media::Json => "json",
            Media::Yaml => "yaml",
            Media::Protobuf => "vnd.kubernetes.protobuf",
        };
        let typed =
            (self.ty == "*" && self.sub == "*") || (self.ty == "application" && (self.sub == "*" || self.sub == sub));
        if !typed || (!self.stream.is_empty() && (self.stream != "watch" || m == Media::Yaml)) {
            return false;
        }
        match self.convert {
            None => true,
            Some((kind, "meta.k8s.io", "v1" | "v1beta1")) => {
                matches!(kind, "Table" | "PartialObjectMetadata" | "PartialObjectMetadataList") && m != Media::Protobuf
            }
            Some(("APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2" | "v2beta1")) => true,
            Some(_) => false,
        }
    }

    /// Whether the server writes this range for a resource (whose kind has a protobuf form or
    /// not) in some media type: aggregated discovery's rendering is not a resource's.
    fn taken_for_resource(&self, protobuf: bool) -> bool {
        let discovery = self.convert.is_some_and(|(_, group, _)| group == "apidiscovery.k8s.io");
        !discovery
            && [Media::Json, Media::Yaml, Media::Protobuf]
                .into_iter()
                .any(|m| self.takes(m) && (protobuf || m != Media::Protobuf))
    }
}

/// The 406 of a watch whose client puts YAML first (kube's stream media types).
pub(crate) fn yaml_watch_refused() -> crate::status::ApiError {
    crate::status::ApiError::new(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
    )
}

/// The answer in YAML when the client puts YAML before JSON and the answer is a complete JSON
/// document; otherwise as it is.
pub(crate) async fn respond(accept: Accept, r: Response<Body>) -> Response<Body> {
    let accept = accept.for_status(r.status());
    let json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") && !t.contains("stream=watch"));
    // Aggregated discovery (`application/json;g=apidiscovery.k8s.io;…`) is negotiated on its
    // own, as kube's discovery handler does.
    let rendered =
        r.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.contains("as="));
    if !accept.prefers(Media::Yaml, Media::Json) || !json || rendered || matches!(r.body(), Body::Stream(_)) {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let Ok(collected) = body.collect().await else { return Response::from_parts(parts, Body::Full(None)) };
    let bytes = collected.to_bytes();
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::Full(Some(bytes)));
    };
    let text = crate::yaml_emit::encode(&value).unwrap_or_else(|e| {
        // kube's answer writer: a failed encoding of a successful answer makes it a 500; the
        // Status is the encoding error's (500 whatever the answer's code).
        if parts.status.as_u16() < 400 {
            parts.status = StatusCode::INTERNAL_SERVER_ERROR;
        }
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": e, "code": 500});
        crate::yaml_emit::encode(&status).unwrap_or_default()
    });
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/yaml"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::Full(Some(Bytes::from(text))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(header: &str) -> Vec<Media> {
        Accept::parse(Some(header)).order.into_iter().flatten().collect()
    }

    #[test]
    fn accept_headers_choose_as_kube_apiserver_does() {
        use Media::*;
        assert_eq!(order("application/vnd.kubernetes.protobuf,application/json"), [Protobuf, Json]);
        assert_eq!(order("application/json, application/vnd.kubernetes.protobuf"), [Json, Protobuf]);
        assert_eq!(order("application/vnd.kubernetes.protobuf"), [Protobuf]);
        assert_eq!(
            order("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"),
            [Json]
        );
        assert_eq!(order("application/json;q=0.5, application/vnd.kubernetes.protobuf"), [Protobuf, Json]);
        assert_eq!(Accept::parse(None).order, [Some(Json), Some(Yaml), Some(Protobuf)]);
        assert_eq!(order(""), [Json, Yaml, Protobuf]);
        assert_eq!(order("*/*"), [Json, Yaml, Protobuf]);
        assert_eq!(order("application/yaml"), [Yaml]);
        assert_eq!(order("application/yaml;as=Table;v=v1;g=meta.k8s.io"), [Yaml]);
        // A specific range before a wildcard of the same weight, whatever the client's order.
        assert_eq!(order("*/*, application/yaml"), [Yaml, Json, Protobuf]);
        assert_eq!(order("application/*, application/yaml"), [Yaml, Json, Protobuf]);
        // goautoneg's sort puts a specific range before a wildcard even of a higher weight.
        assert_eq!(order("*/*;q=1, application/yaml;q=0.5"), [Yaml, Json, Protobuf]);
        // `q=0` is not a refusal to goautoneg.
        assert_eq!(order("application/json;q=0"), [Json]);
        assert_eq!(order("text/html, json, a/b/c"), []);
        // goautoneg's reading: `*/` is `*/*`, a trailing `/` is allowed, an empty `q` is no `q`.
        assert_eq!(order(","), []);
        assert_eq!(order("*/"), [Json, Yaml, Protobuf]);
        assert_eq!(order("application/json/"), [Json]);
        assert_eq!(order("application/yaml;q=, application/json;q=0.9"), [Yaml, Json]);
        assert_eq!(order("application/yaml;q=x, application/json;q=0.9"), [Json, Yaml]);
        // A stream only in a media type that streams; renderings only those kube serves.
        assert_eq!(order("application/yaml;stream=watch, application/json"), [Json]);
        assert_eq!(order("application/json;stream=other"), []);
        assert_eq!(order("application/json;v=v1"), []);
        assert_eq!(order("application/json;as=Table;g=meta.k8s.io;v=v1"), [Json]);
        assert_eq!(order("application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1"), []);
        assert_eq!(order("application/json;as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2"), [Json]);
        // `q=0.5=` is 0.5, `q==` an empty value (0), `q=0.5=1` no q at all.
        assert_eq!(order("application/yaml;q=0.5=, application/json;q=0.8"), [Json, Yaml]);
        assert_eq!(order("application/yaml;q==, application/json;q=0.5"), [Json, Yaml]);
        assert_eq!(order("application/yaml;q=0.5=1, application/json;q=0.8"), [Yaml, Json]);
        // An error takes no rendering.
        let table_first = Accept::parse(Some("application/yaml;as=Table;g=meta.k8s.io;v=v1, application/json"));
        assert_eq!(table_first.first(), Some(Yaml));
        assert_eq!(table_first.for_status(http::StatusCode::NOT_FOUND).first(), Some(Json));
        assert_eq!(table_first.for_status(http::StatusCode::OK).first(), Some(Yaml));
        assert!(!Accept::parse(Some("text/html")).takes_any());
        let a = Accept::parse(Some("application/yaml, application/json"));
        assert!(a.prefers(Yaml, Json) && !a.prefers(Json, Yaml) && a.first() == Some(Yaml));
        assert!(Accept::parse(Some("application/yaml")).prefers(Yaml, Json));
        assert!(!Accept::parse(Some("application/json")).prefers(Yaml, Json));
    }

    #[test]
    fn the_range_that_wins_decides_the_rendering() {
        let table = Render::Table(IncludeObject::Metadata);
        let kubectl = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(Accept::parse(Some(kubectl)).render(true), table);
        assert_eq!(
            Accept::parse(Some("application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1")).render(true),
            Render::Object
        );
        // A custom resource has no protobuf form: its protobuf range is passed over.
        let pb_first = "application/vnd.kubernetes.protobuf, application/json;as=Table;g=meta.k8s.io;v=v1";
        assert_eq!(Accept::parse(Some(pb_first)).render(false), table);
        assert_eq!(Accept::parse(Some(pb_first)).render(true), Render::Object);
        // Aggregated discovery's rendering is not a resource's.
        let discovery_first = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, application/json;as=Table;g=meta.k8s.io;v=v1";
        assert_eq!(Accept::parse(Some(discovery_first)).render(true), table);
        let metadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(Accept::parse(Some(metadata)).render(true), Render::Metadata);
    }
}
