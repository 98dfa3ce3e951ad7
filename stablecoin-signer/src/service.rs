//! The signing service: an axum router over [`LocalSigner`], the only place the master
//! seed lives. Every request is authenticated with the shared token (see
//! [`AuthKey`]); payloads, purposes and keys are never logged.

use crate::Error;
use crate::protocol::{
    AuthKey, DERIVABLE_LABELS, DERIVE_KEY_PATH, DeriveKeyRequest, DeriveKeyResponse, ErrorBody,
    ErrorDetail, MAX_BODY_BYTES, MAX_SKEW_SECS, PUBLIC_KEY_PATH, PublicKeyRequest,
    PublicKeyResponse, SIGN_PATH, SIGNATURE_HEADER, SignRequest, SignResponse, TIMESTAMP_HEADER,
    curve_name, from_hex, parse_curve, parse_purpose, to_hex,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Signer, SignerError};
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The service's state: the local signer over the seed, the allow-listed symmetric keys
/// (derived once; the seed itself is not kept outside the signer) and the auth key.
#[derive(Clone)]
pub struct SignerService {
    inner: Arc<Inner>,
}

struct Inner {
    signer: LocalSigner,
    derived: BTreeMap<&'static str, [u8; 32]>,
    auth: AuthKey,
}

impl fmt::Debug for SignerService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SignerService { seed: <redacted>, token: <redacted> }")
    }
}

impl SignerService {
    /// A service over `seed`, answering requests authenticated with `token` (at least
    /// [`MIN_TOKEN_LEN`](crate::protocol::MIN_TOKEN_LEN) characters).
    pub fn new(seed: [u8; 32], token: &str) -> Result<SignerService, Error> {
        let auth = AuthKey::from_token(token)?;
        let derived = DERIVABLE_LABELS
            .iter()
            .map(|label| (*label, derive_symmetric(&seed, label)))
            .collect();
        Ok(SignerService {
            inner: Arc::new(Inner {
                signer: LocalSigner::from_seed(seed),
                derived,
                auth,
            }),
        })
    }

    /// The HTTP router: `POST /v1/public-key`, `/v1/sign`, `/v1/derive-key`.
    pub fn router(&self) -> Router {
        Router::new()
            .route(PUBLIC_KEY_PATH, post(public_key))
            .route(SIGN_PATH, post(sign))
            .route(DERIVE_KEY_PATH, post(derive_key))
            .fallback(not_found)
            .method_not_allowed_fallback(not_found)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(self.clone())
    }
}

/// `HMAC-SHA256(seed, label)`: what `CodeKey::from_master_seed` and
/// `SecretKey::from_master_seed` compute in a process holding the seed.
fn derive_symmetric(seed: &[u8; 32], label: &str) -> [u8; 32] {
    let mut mac = match <Hmac<Sha256> as Mac>::new_from_slice(seed) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    };
    mac.update(label.as_bytes());
    mac.finalize().into_bytes().into()
}

/// Refuses a listen address that is neither loopback nor private (RFC 1918, CGNAT
/// 100.64/10, IPv4 link-local, IPv6 unique-local or link-local), including the
/// unspecified address, unless `allow_public`.
pub fn check_listen_addr(addr: SocketAddr, allow_public: bool) -> Result<(), Error> {
    let private = match addr.ip() {
        IpAddr::V4(ip) => {
            let o = ip.octets();
            ip.is_loopback()
                || ip.is_private()
                || ip.is_link_local()
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
        }
        IpAddr::V6(ip) => {
            let s0 = ip.segments()[0];
            ip.is_loopback() || (s0 & 0xfe00) == 0xfc00 || (s0 & 0xffc0) == 0xfe80
        }
    };
    if private || allow_public {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{addr} is not a loopback or private address; the signing service holds every \
             key and must not be reachable from the internet (pass --allow-public-listen to \
             override)"
        )))
    }
}

/// Binds the service's listener after [`check_listen_addr`].
pub async fn bind(addr: SocketAddr, allow_public: bool) -> Result<tokio::net::TcpListener, Error> {
    check_listen_addr(addr, allow_public)?;
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Config(format!("listen on {addr}: {e}")))
}

/// Serves `service` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: &SignerService,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, service.router())
        .with_graceful_shutdown(shutdown)
        .await
}

/// A service serving on a loopback port in the background (tests, embedders running the
/// signer in-process next to a test server); it stops when dropped.
#[derive(Debug)]
pub struct Running {
    /// `http://127.0.0.1:<port>`, the URL to give [`RemoteSigner`](crate::RemoteSigner).
    pub url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Serves `service` on `127.0.0.1:<a free port>` in a background task.
pub async fn spawn_on_loopback(service: SignerService) -> Result<Running, Error> {
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0)), false).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Config(format!("listen: {e}")))?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = serve(listener, &service, async {
            let _ = rx.await;
        })
        .await;
    });
    Ok(Running {
        url: format!("http://{addr}"),
        _stop: tx,
    })
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Checks the timestamp and signature headers; the request signature on success.
fn authenticate(
    auth: &AuthKey,
    headers: &HeaderMap,
    path: &str,
    body: &[u8],
) -> Result<String, Error> {
    let refused = |why: &str| {
        tracing::warn!(path, why, "refused an unauthenticated request");
        Error::Unauthorized(why.to_string())
    };
    let ts: u64 = header(headers, TIMESTAMP_HEADER)
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| refused("missing or malformed timestamp"))?;
    let given = header(headers, SIGNATURE_HEADER).ok_or_else(|| refused("missing signature"))?;
    if now_secs().abs_diff(ts) > MAX_SKEW_SECS {
        return Err(refused("timestamp outside the allowed clock skew"));
    }
    let expected = auth.sign_request(ts, path, body);
    if !AuthKey::signatures_match(&expected, given) {
        return Err(refused("bad signature"));
    }
    Ok(expected)
}

fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| {
        // serde's message names the field or position, never the value.
        Error::InvalidRequest(format!("body: {}", e.classify_message()))
    })
}

trait ClassifyMessage {
    fn classify_message(&self) -> &'static str;
}

impl ClassifyMessage for serde_json::Error {
    fn classify_message(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "unreadable",
            serde_json::error::Category::Syntax => "not valid JSON",
            serde_json::error::Category::Data => "missing, unknown or mistyped field",
            serde_json::error::Category::Eof => "truncated JSON",
        }
    }
}

fn signer_error(e: SignerError) -> Error {
    match e {
        SignerError::InvalidInput(m) => Error::InvalidInput(m),
        other => Error::Unavailable(other.to_string()),
    }
}

/// An answer: JSON of `result`, signed for the request when it was authenticated.
fn respond<T: Serialize>(
    auth: &AuthKey,
    request_signature: Option<&str>,
    result: Result<T, Error>,
) -> Response {
    let (status, body) = match result {
        Ok(v) => (StatusCode::OK, serde_json::to_vec(&v)),
        Err(e) => (
            StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            serde_json::to_vec(&ErrorBody {
                error: ErrorDetail {
                    code: e.code().into(),
                    message: e.to_string(),
                },
            }),
        ),
    };
    let body = body.unwrap_or_default();
    let mut resp = (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.clone(),
    )
        .into_response();
    if let Some(sig) = request_signature {
        let mac = auth.sign_response(sig, status.as_u16(), &body);
        if let Ok(v) = HeaderValue::from_str(&mac) {
            resp.headers_mut().insert(SIGNATURE_HEADER, v);
        }
    }
    resp
}

/// Authenticates, parses and runs `f`, then signs the answer.
async fn handle<Req, Res, F, Fut>(
    service: &SignerService,
    path: &str,
    headers: &HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
    f: F,
) -> Response
where
    Req: DeserializeOwned,
    Res: Serialize,
    F: FnOnce(Req, String) -> Fut,
    Fut: Future<Output = Result<Res, Error>>,
{
    let auth = &service.inner.auth;
    let body = match body {
        Ok(b) => b,
        Err(_) => return respond::<()>(auth, None, Err(Error::TooLarge(MAX_BODY_BYTES))),
    };
    let sig = match authenticate(auth, headers, path, &body) {
        Ok(s) => s,
        Err(e) => return respond::<()>(auth, None, Err(e)),
    };
    let result = match parse_body::<Req>(&body) {
        Ok(req) => f(req, sig.clone()).await,
        Err(e) => Err(e),
    };
    respond(auth, Some(&sig), result)
}

async fn public_key(
    State(s): State<SignerService>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let svc = s.clone();
    handle(
        &s,
        PUBLIC_KEY_PATH,
        &headers,
        body,
        |req: PublicKeyRequest, _| async move {
            let purpose = parse_purpose(&req.purpose)?;
            let curve = parse_curve(&req.curve)?;
            let key = svc
                .inner
                .signer
                .public_key(&purpose, curve)
                .await
                .map_err(signer_error)?;
            Ok(PublicKeyResponse {
                curve: curve_name(curve).into(),
                public_key_hex: to_hex(&key.bytes),
            })
        },
    )
    .await
}

async fn sign(
    State(s): State<SignerService>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let svc = s.clone();
    handle(
        &s,
        SIGN_PATH,
        &headers,
        body,
        |req: SignRequest, _| async move {
            let purpose = parse_purpose(&req.purpose)?;
            let curve = parse_curve(&req.curve)?;
            let payload = from_hex(&req.payload_hex)?;
            let sig = svc
                .inner
                .signer
                .sign(&purpose, curve, &payload)
                .await
                .map_err(signer_error)?;
            Ok(SignResponse {
                signature_hex: to_hex(&sig.0),
            })
        },
    )
    .await
}

async fn derive_key(
    State(s): State<SignerService>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let svc = s.clone();
    handle(
        &s,
        DERIVE_KEY_PATH,
        &headers,
        body,
        |req: DeriveKeyRequest, sig| async move {
            let key = svc
                .inner
                .derived
                .get(req.label.as_str())
                .ok_or_else(|| Error::UnknownLabel("not in the allow-list".into()))?;
            Ok(DeriveKeyResponse {
                wrapped_key_hex: to_hex(&svc.inner.auth.wrap(&sig, *key)),
                label: req.label,
            })
        },
    )
    .await
}

async fn not_found(State(s): State<SignerService>) -> Response {
    respond::<()>(&s.inner.auth, None, Err(Error::NotFound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_and_private_addresses_are_accepted_by_default() {
        for ok in [
            "127.0.0.1:1",
            "10.1.2.3:1",
            "172.16.0.1:1",
            "192.168.1.1:1",
            "100.64.0.1:1",
            "[::1]:1",
            "[fd00::1]:1",
        ] {
            assert!(
                check_listen_addr(ok.parse().unwrap(), false).is_ok(),
                "{ok}"
            );
        }
        for refused in [
            "0.0.0.0:1",
            "8.8.8.8:1",
            "100.128.0.1:1",
            "[::]:1",
            "[2001:db8::1]:1",
        ] {
            let addr = refused.parse().unwrap();
            assert!(
                matches!(check_listen_addr(addr, false), Err(Error::Config(_))),
                "{refused}"
            );
            assert!(check_listen_addr(addr, true).is_ok(), "{refused}");
        }
    }

    #[test]
    fn derived_keys_match_the_in_process_derivations() {
        use stablecoin_core::domain::otp::CodeKey;
        let seed = [9u8; 32];
        assert_eq!(
            CodeKey::new(derive_symmetric(&seed, crate::protocol::OTP_CODE_KEY_LABEL)),
            CodeKey::from_master_seed(&seed)
        );
    }
}
