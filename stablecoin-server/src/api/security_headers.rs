//! Headers every response carries, whatever produced it: `X-Content-Type-Options:
//! nosniff` on all of them, and on JSON a Content-Security-Policy under which the body
//! can do nothing if a browser is ever made to render it. The JSON API shares its origin
//! with the consoles and the payment page, so a body that echoes a tenant's text must
//! never run as a page. A page's own policy (the consoles', the payment page's) is kept.

use axum::http::{HeaderValue, header};
use axum::response::Response;

/// The Content-Security-Policy of every JSON response.
pub const JSON_CSP: &str = "default-src 'none'; frame-ancestors 'none'";

/// Adds the headers a response lacks (never replaces one a handler set).
pub async fn apply(mut res: Response) -> Response {
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json);
    let headers = res.headers_mut();
    headers
        .entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(HeaderValue::from_static("nosniff"));
    if json {
        headers
            .entry(header::CONTENT_SECURITY_POLICY)
            .or_insert(HeaderValue::from_static(JSON_CSP));
    }
    res
}

/// `application/json`, and the `+json` types (`application/problem+json`).
fn is_json(content_type: &str) -> bool {
    let essence = crate::extract::mime_essence(content_type);
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::is_json;

    #[test]
    fn json_types_are_recognised_by_their_essence() {
        for t in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/problem+json",
        ] {
            assert!(is_json(t), "{t}");
        }
        for t in [
            "text/html; charset=utf-8",
            "text/plain",
            "application/jsonp",
            "image/png",
        ] {
            assert!(!is_json(t), "{t}");
        }
    }
}
