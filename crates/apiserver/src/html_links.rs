//! The rewriting of a proxied HTML answer's links, as kube-apiserver's proxy transport rewrites
//! them (`rewriteResponse`): the URL-valued attributes of kube's list of elements (`a[href]`,
//! `img[src]`, `form[action]`…) are passed to a rewriter, which brings those pointing at the
//! backend under the proxy's path ([`crate::upgrade_aware_proxy`]).
//!
//! Invariants: only the attributes of kube's list change, each to what the rewriter returns
//! (its value is read and written as it stands in the markup, entities undecoded); everything
//! else is passed on byte for byte; a body encoded with `gzip` or `deflate` (raw DEFLATE, as Go's
//! `flate` reads it) is decoded, rewritten and encoded again the same way, and one of any other
//! encoding is not rewritten ([`ENCODINGS`]).

use std::io::{Read, Write};

use lol_html::{ElementContentHandlers, HtmlRewriter, Selector, Settings};

/// The elements whose attributes hold URLs, and those attributes (kube's `atomsToAttrs`).
const URL_ATTRIBUTES: [(&str, &[&str]); 25] = [
    ("a", &["href"]),
    ("applet", &["codebase"]),
    ("area", &["href"]),
    ("audio", &["src"]),
    ("base", &["href"]),
    ("blockquote", &["cite"]),
    ("body", &["background"]),
    ("button", &["formaction"]),
    ("command", &["icon"]),
    ("del", &["cite"]),
    ("embed", &["src"]),
    ("form", &["action"]),
    ("frame", &["longdesc", "src"]),
    ("head", &["profile"]),
    ("html", &["manifest"]),
    ("iframe", &["longdesc", "src"]),
    ("img", &["longdesc", "src", "usemap"]),
    ("input", &["src", "usemap", "formaction"]),
    ("ins", &["cite"]),
    ("link", &["href"]),
    ("object", &["classid", "codebase", "data", "usemap"]),
    ("q", &["cite"]),
    ("script", &["src"]),
    ("source", &["src"]),
    ("video", &["poster", "src"]),
];

/// The `Content-Encoding`s of the pages rewritten ("" for none); pages of any other are not.
pub(crate) const ENCODINGS: [&str; 3] = ["", "gzip", "deflate"];

/// `html` with each URL-valued attribute of [`URL_ATTRIBUTES`] replaced by what `rewrite_url`
/// makes of it.
pub(crate) fn rewrite(html: &[u8], rewrite_url: &dyn Fn(&str) -> String) -> Result<Vec<u8>, String> {
    let selectors: Vec<(Selector, &'static str)> = URL_ATTRIBUTES
        .iter()
        .flat_map(|(element, attributes)| attributes.iter().map(move |a| (format!("{element}[{a}]"), *a)))
        .map(|(selector, attribute)| selector.parse().map(|s| (s, attribute)).map_err(|e| format!("{e}")))
        .collect::<Result<_, _>>()?;
    // Not strict: markup the parser finds ambiguous is passed on, not refused.
    let mut settings = Settings::new().with_strict(false);
    for (selector, attribute) in &selectors {
        let attribute = *attribute;
        let handler = ElementContentHandlers::default().element(move |el: &mut lol_html::html_content::Element| {
            if let Some(value) = el.get_attribute(attribute) {
                let rewritten = rewrite_url(&value);
                if rewritten != value {
                    el.set_attribute(attribute, &rewritten)?;
                }
            }
            Ok(())
        });
        settings = settings.append_element_content_handler((std::borrow::Cow::Borrowed(selector), handler));
    }
    let mut out = Vec::with_capacity(html.len() + html.len() / 8);
    let mut rewriter = HtmlRewriter::new(settings, |chunk: &[u8]| out.extend_from_slice(chunk));
    rewriter.write(html).map_err(|e| e.to_string())?;
    rewriter.end().map_err(|e| e.to_string())?;
    Ok(out)
}

/// [`rewrite`] of a body encoded with `encoding` (`Content-Encoding`, one of [`ENCODINGS`]);
/// an error in Go's words when the body cannot be decoded.
pub(crate) fn rewrite_encoded(
    body: &[u8],
    encoding: &str,
    rewrite_url: &dyn Fn(&str) -> String,
) -> Result<Vec<u8>, String> {
    match encoding {
        "" => rewrite(body, rewrite_url),
        "gzip" => (|| {
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut plain)
                .map_err(|e| format!("errorf making gzip reader: {e}"))?;
            let html = rewrite(&plain, rewrite_url)?;
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(&html).and_then(|()| encoder.finish()).map_err(|e| e.to_string())
        })(),
        "deflate" => (|| {
            let mut plain = Vec::new();
            flate2::read::DeflateDecoder::new(body).read_to_end(&mut plain).map_err(|e| e.to_string())?;
            let html = rewrite(&plain, rewrite_url)?;
            let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
            encoder.write_all(&html).and_then(|()| encoder.finish()).map_err(|e| e.to_string())
        })(),
        other => Err(format!("Proxy encountered encoding {other} for text/html; can't understand this")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn under_proxy(url: &str) -> String {
        if url.starts_with('/') { format!("/proxy{url}") } else { url.to_string() }
    }

    #[test]
    fn url_attributes_of_kube_s_elements_are_rewritten_and_nothing_else() {
        let page = br#"<!DOCTYPE html><HTML manifest="/m"><head><link rel=stylesheet href=/s.css></head>
<body background="/bg.png"><a href="/a?x=1&amp;y=2" title="/not-a-url">a</a><A HREF='/upper'>b</A>
<img src="/i.png" alt="/alt"><form action="/post"><input formaction="/go"></form>
<script src="/app.js">if (a < b) document.write('<a href="/inside-script">')</script>
<div data-href="/kept"><a href="relative/link">r</a><a href="http://elsewhere/x">e</a></div></body></HTML>"#;
        let out = String::from_utf8(rewrite(page, &under_proxy).unwrap()).unwrap();
        for rewritten in [
            r#"manifest="/proxy/m""#,
            "href=\"/proxy/s.css\"",
            r#"background="/proxy/bg.png""#,
            r#"href="/proxy/a?x=1&amp;y=2""#,
            r#"src="/proxy/i.png""#,
            r#"action="/proxy/post""#,
            r#"formaction="/proxy/go""#,
            r#"src="/proxy/app.js""#,
            r#"title="/not-a-url""#,
            r#"alt="/alt""#,
            r#"data-href="/kept""#,
            r#"href="relative/link""#,
            r#"href="http://elsewhere/x""#,
            r#"'<a href="/inside-script">'"#,
        ] {
            assert!(out.contains(rewritten), "{rewritten} not in {out}");
        }
        assert!(out.to_ascii_lowercase().contains(r#"href="/proxy/upper""#), "{out}");
    }

    #[test]
    fn encoded_bodies_are_decoded_rewritten_and_encoded_again() {
        let page = br#"<a href="/x">x</a>"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(page).unwrap();
        let gz = gz.finish().unwrap();
        let out = rewrite_encoded(&gz, "gzip", &under_proxy).unwrap();
        let mut plain = String::new();
        flate2::read::GzDecoder::new(out.as_slice()).read_to_string(&mut plain).unwrap();
        assert_eq!(plain, r#"<a href="/proxy/x">x</a>"#);
        let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        deflate.write_all(page).unwrap();
        let out = rewrite_encoded(&deflate.finish().unwrap(), "deflate", &under_proxy).unwrap();
        let mut plain = String::new();
        flate2::read::DeflateDecoder::new(out.as_slice()).read_to_string(&mut plain).unwrap();
        assert_eq!(plain, r#"<a href="/proxy/x">x</a>"#);
        assert!(!ENCODINGS.contains(&"br") && rewrite_encoded(page, "br", &under_proxy).is_err());
        let broken = rewrite_encoded(b"not gzip", "gzip", &under_proxy).unwrap_err();
        assert!(broken.starts_with("errorf making gzip reader: "), "{broken}");
    }
}
