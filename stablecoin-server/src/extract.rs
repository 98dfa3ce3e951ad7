//! Request extractors that turn every client mistake into a 4xx with a clear code, never a
//! 500 or a panic: malformed JSON, unknown fields, wrong types, oversize bodies, bad
//! query strings and path parameters.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// A JSON request body. Every request type says `#[serde(deny_unknown_fields)]`, so an
/// unknown field is `UNKNOWN_FIELD` on every endpoint (API-CONVENTIONS; a typo must never
/// silently drop a parameter; `tests/request_bodies.rs` checks each body).
pub struct ApiJson<T>(pub T);

/// JSON types, plus the generic types tools send by default (`curl -d` says
/// `application/x-www-form-urlencoded`): the body must still be a JSON object. Anything
/// else (multipart forms, XML, ...) is 415.
fn is_json_content_type(v: &str) -> bool {
    let mime = mime_essence(v);
    matches!(
        mime.as_str(),
        "application/json" | "text/json" | "text/plain" | "application/x-www-form-urlencoded"
    ) || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// A Content-Type's type and subtype, lowercased, without its parameters
/// (`application/json; charset=utf-8` -> `application/json`).
pub(crate) fn mime_essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if let Some(ct) = req.headers().get(axum::http::header::CONTENT_TYPE) {
            let ok = ct.to_str().map(is_json_content_type).unwrap_or(false);
            if !ok {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "UNSUPPORTED_MEDIA_TYPE",
                    "the request body must be JSON (Content-Type: application/json)",
                ));
            }
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| body_error(e.status()))?;
        decode_json(&bytes).map(ApiJson)
    }
}

/// The error for a body that could not be read (too large, broken stream).
pub fn body_error(status: StatusCode) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            "the request body is larger than this server accepts",
        )
    } else {
        ApiError::bad_request("MALFORMED_JSON", "the request body could not be read")
    }
}

fn backticked<'a>(msg: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = msg.strip_prefix(prefix)?;
    let rest = rest.strip_prefix('`')?;
    rest.split('`').next()
}

/// Decodes a JSON object into `T`, classifying failures.
pub fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        None => {
            return Err(ApiError::bad_request(
                "MALFORMED_JSON",
                "the request body is empty; expected a JSON object",
            ));
        }
        Some(b'{') => {}
        Some(_) => {
            return Err(ApiError::bad_request(
                "MALFORMED_JSON",
                "the request body must be a JSON object",
            ));
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.to_string();
        let root = path == "." || path.is_empty();
        let join = |field: &str| {
            if root {
                field.to_string()
            } else {
                format!("{path}.{field}")
            }
        };
        match inner.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                ApiError::bad_request("MALFORMED_JSON", format!("malformed JSON: {msg}"))
            }
            serde_json::error::Category::Io => {
                ApiError::bad_request("MALFORMED_JSON", "the request body could not be read")
            }
            serde_json::error::Category::Data => {
                if let Some(f) = backticked(&msg, "unknown field ") {
                    ApiError::bad_request(
                        "UNKNOWN_FIELD",
                        format!("unknown field {f:?}: this endpoint does not accept it"),
                    )
                    .with_param(if root {
                        f.to_string()
                    } else {
                        path.clone()
                    })
                } else if let Some(f) = backticked(&msg, "missing field ") {
                    ApiError::bad_request("MISSING_FIELD", format!("field {f:?} is required"))
                        .with_param(join(f))
                } else if let Some(f) = backticked(&msg, "duplicate field ") {
                    ApiError::bad_request(
                        "MALFORMED_JSON",
                        format!("field {f:?} appears more than once"),
                    )
                    .with_param(join(f))
                } else {
                    let a = ApiError::bad_request("INVALID_TYPE", msg);
                    if root { a } else { a.with_param(path) }
                }
            }
        }
    })?;
    de.end().map_err(|_| {
        ApiError::bad_request(
            "MALFORMED_JSON",
            "unexpected characters after the JSON object",
        )
    })?;
    Ok(value)
}

/// A query string decoded into `T`; `T` should use `deny_unknown_fields` so a typo in a
/// parameter name is reported rather than ignored.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match Query::<T>::try_from_uri(&parts.uri) {
            Ok(Query(v)) => Ok(ApiQuery(v)),
            Err(e) => {
                let text = e.body_text();
                let detail = text
                    .strip_prefix("Failed to deserialize query string: ")
                    .unwrap_or(&text)
                    .to_string();
                let mut err = ApiError::bad_request(
                    "INVALID_QUERY",
                    format!("invalid query string: {detail}"),
                );
                let find = |what: &str| {
                    detail
                        .find(what)
                        .and_then(|i| backticked(&detail[i..], what))
                };
                if let Some(f) = find("unknown field ")
                    .or_else(|| find("missing field "))
                    .or_else(|| find("duplicate field "))
                {
                    err = err.with_param(f);
                }
                Err(err)
            }
        }
    }
}

/// One path parameter as a string (ids are checked by the handlers: an id that cannot
/// exist is simply not found).
pub struct ApiPath(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ApiPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<String>::from_request_parts(parts, state)
            .await
            .map(|Path(s)| ApiPath(s))
            .map_err(|_| ApiError::bad_request("INVALID_PATH", "malformed path parameter"))
    }
}

/// The `Idempotency-Key` header, already validated by the idempotency middleware.
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match parts.headers.get(crate::in_flight::HEADER) {
            None => Ok(IdempotencyKey(None)),
            Some(v) => v
                .to_str()
                .map(|s| IdempotencyKey(Some(s.to_string())))
                .map_err(|_| {
                    ApiError::bad_request(
                        "INVALID_IDEMPOTENCY_KEY",
                        "Idempotency-Key must be 1 to 255 printable ASCII characters",
                    )
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Strict {
        phone_number: String,
        amount: String,
    }

    fn code(r: Result<Strict, ApiError>) -> (&'static str, Option<String>) {
        let e = r.unwrap_err();
        (e.code, e.param)
    }

    #[test]
    fn classifies_bad_bodies() {
        assert_eq!(code(decode_json(b"")).0, "MALFORMED_JSON");
        assert_eq!(code(decode_json(b"[1]")).0, "MALFORMED_JSON");
        assert_eq!(code(decode_json(b"{\"phone_number\":")).0, "MALFORMED_JSON");
        assert_eq!(
            code(decode_json(b"{\"phone_number\":\"+1\",\"amount\":\"1\"} x")).0,
            "MALFORMED_JSON"
        );
        assert_eq!(
            code(decode_json(
                b"{\"phone_number\":\"+1\",\"amount\":\"1\",\"amout\":\"2\"}"
            )),
            ("UNKNOWN_FIELD", Some("amout".into()))
        );
        assert_eq!(
            code(decode_json(b"{\"phone_number\":\"+1\"}")),
            ("MISSING_FIELD", Some("amount".into()))
        );
        assert_eq!(
            code(decode_json(b"{\"phone_number\":\"+1\",\"amount\":5}")),
            ("INVALID_TYPE", Some("amount".into()))
        );
        let ok: Strict = decode_json(b" {\"phone_number\":\"+1\",\"amount\":\"5\"} ").unwrap();
        assert_eq!(ok.amount, "5");
    }
}
