//! The wire protocol shared by the service and [`RemoteSigner`](crate::RemoteSigner):
//! paths, JSON bodies, the request and response authentication, and the allow-list of
//! symmetric key labels. `docs/signer-protocol.md` describes the same for other
//! implementations.

use crate::Error;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use stablecoin_core::ports::{Curve, KeyPurpose};
use std::fmt;
use subtle::ConstantTimeEq;

/// `POST`: the public key of a purpose on a curve.
pub const PUBLIC_KEY_PATH: &str = "/v1/public-key";
/// `POST`: a signature by the key of a purpose on a curve.
pub const SIGN_PATH: &str = "/v1/sign";
/// `POST`: a symmetric key derived from the seed under an allow-listed label.
pub const DERIVE_KEY_PATH: &str = "/v1/derive-key";
/// Request header: the request time, Unix seconds.
pub const TIMESTAMP_HEADER: &str = "x-signer-timestamp";
/// Request and response header: the lowercase hex HMAC-SHA256 authenticating it.
pub const SIGNATURE_HEADER: &str = "x-signer-signature";
/// How far a request's timestamp may be from the service's clock, in seconds.
pub const MAX_SKEW_SECS: u64 = 60;
/// The shortest shared token accepted (characters).
pub const MIN_TOKEN_LEN: usize = 32;
/// The largest request body the service reads (bytes).
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// The label of the key one-time codes are hashed with (`CodeKey::from_master_seed`).
pub const OTP_CODE_KEY_LABEL: &str = "stablecoin/otp-code-key/v1";
/// The label of the key webhook secrets are sealed with (`SecretKey::from_master_seed`).
pub const WEBHOOK_SECRET_KEY_LABEL: &str = "stablecoin/webhook-secret-key/v1";
/// The label of the key the web consoles' session cookies and CSRF tokens are signed
/// with: every API process of a deployment derives the same one, so a session signed by
/// one is honoured by the others.
pub const CONSOLE_SESSION_KEY_LABEL: &str = "stablecoin/console-session-key/v1";
/// The only labels `derive-key` answers: the symmetric keys of the API process.
pub const DERIVABLE_LABELS: &[&str] = &[
    OTP_CODE_KEY_LABEL,
    WEBHOOK_SECRET_KEY_LABEL,
    CONSOLE_SESSION_KEY_LABEL,
];

/// `POST /v1/public-key` body.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicKeyRequest {
    /// The derivation path of the purpose (`KeyPurpose::path`, e.g. `wallet/wal_1`).
    pub purpose: String,
    /// `secp256k1` or `ed25519`.
    pub curve: String,
}

/// `POST /v1/public-key` answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PublicKeyResponse {
    /// The curve asked for.
    pub curve: String,
    /// SEC1 compressed (33 bytes) or ed25519 (32 bytes), lowercase hex.
    pub public_key_hex: String,
}

/// `POST /v1/sign` body.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignRequest {
    /// The derivation path of the purpose.
    pub purpose: String,
    /// `secp256k1` or `ed25519`.
    pub curve: String,
    /// secp256k1: the 32-byte digest; ed25519: the message. Hex.
    pub payload_hex: String,
}

/// `POST /v1/sign` answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SignResponse {
    /// secp256k1: r||s||v (65 bytes, v = 0/1); ed25519: 64 bytes. Lowercase hex.
    pub signature_hex: String,
}

/// `POST /v1/derive-key` body.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeriveKeyRequest {
    /// One of [`DERIVABLE_LABELS`].
    pub label: String,
}

/// `POST /v1/derive-key` answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeriveKeyResponse {
    /// The label asked for.
    pub label: String,
    /// `HMAC-SHA256(seed, label)` XOR the wrapping pad ([`AuthKey::wrap`]), hex: the key
    /// never crosses the wire in clear.
    pub wrapped_key_hex: String,
}

/// An error answer: `{"error": {"code", "message"}}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The code and its explanation.
    pub error: ErrorDetail,
}

/// The inside of [`ErrorBody`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// A stable code (see [`Error::code`]).
    pub code: String,
    /// A human-readable explanation (never a payload or a key).
    pub message: String,
}

/// The shared secret both sides authenticate with (HMAC-SHA256 key). It never travels:
/// requests and answers carry MACs made with it.
#[derive(Clone)]
pub struct AuthKey(Vec<u8>);

impl fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthKey(<redacted>)")
    }
}

impl AuthKey {
    /// The key of a shared token (at least [`MIN_TOKEN_LEN`] characters).
    pub fn from_token(token: &str) -> Result<AuthKey, Error> {
        if token.len() < MIN_TOKEN_LEN {
            return Err(Error::Config(format!(
                "the signer token must be at least {MIN_TOKEN_LEN} characters"
            )));
        }
        Ok(AuthKey(token.as_bytes().to_vec()))
    }

    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = match <Hmac<Sha256> as Mac>::new_from_slice(&self.0) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        };
        for p in parts {
            mac.update(p);
        }
        mac.finalize().into_bytes().into()
    }

    /// The request signature: `HMAC-SHA256(token, "v1\n<timestamp>\n<path>\n" || body)`,
    /// lowercase hex.
    pub fn sign_request(&self, timestamp: u64, path: &str, body: &[u8]) -> String {
        to_hex(&self.mac(&[format!("v1\n{timestamp}\n{path}\n").as_bytes(), body]))
    }

    /// The response signature: `HMAC-SHA256(token, "v1-response\n<request
    /// signature>\n<status>\n" || body)`, lowercase hex. Binds the answer to its request.
    pub fn sign_response(&self, request_signature: &str, status: u16, body: &[u8]) -> String {
        to_hex(&self.mac(&[
            format!("v1-response\n{request_signature}\n{status}\n").as_bytes(),
            body,
        ]))
    }

    /// True when `given` (hex) equals `expected` (hex); constant time in the content.
    pub fn signatures_match(expected: &str, given: &str) -> bool {
        expected.len() == given.len() && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
    }

    /// XORs `key` with `HMAC-SHA256(token, "v1-wrap\n<request signature>")`: wraps a
    /// derived key for the answer, and unwraps it (the same operation).
    pub fn wrap(&self, request_signature: &str, key: [u8; 32]) -> [u8; 32] {
        let pad = self.mac(&[format!("v1-wrap\n{request_signature}").as_bytes()]);
        let mut out = key;
        for (o, p) in out.iter_mut().zip(pad) {
            *o ^= p;
        }
        out
    }
}

/// The wire name of a curve.
pub fn curve_name(curve: Curve) -> &'static str {
    match curve {
        Curve::Secp256k1 => "secp256k1",
        Curve::Ed25519 => "ed25519",
    }
}

/// Parses a wire curve name.
pub fn parse_curve(s: &str) -> Result<Curve, Error> {
    match s {
        "secp256k1" => Ok(Curve::Secp256k1),
        "ed25519" => Ok(Curve::Ed25519),
        other => Err(Error::InvalidRequest(format!(
            "curve must be secp256k1 or ed25519, not {other:?}"
        ))),
    }
}

/// Parses a derivation path back into its purpose: `KeyPurpose::path` of the result is
/// `path` again, so the key derived is the one the path names.
pub fn parse_purpose(path: &str) -> Result<KeyPurpose, Error> {
    let bad = || Error::InvalidRequest("purpose is not a known derivation path".into());
    let (kind, id) = path.split_once('/').ok_or_else(bad)?;
    if id.is_empty() {
        return Err(bad());
    }
    let purpose = match (kind, id) {
        ("wallet", id) => KeyPurpose::Wallet(id.into()),
        ("phone", p) => KeyPurpose::PhoneWallet(p.into()),
        ("escrow", id) => KeyPurpose::EscrowDeal(id.into()),
        ("checkout", id) => KeyPurpose::CheckoutSession(id.into()),
        ("service", "treasury") => KeyPurpose::Treasury,
        ("service", "sponsor") => KeyPurpose::Sponsor,
        ("service", "fees") => KeyPurpose::ServiceFees,
        _ => return Err(bad()),
    };
    debug_assert_eq!(purpose.path(), path);
    Ok(purpose)
}

/// Lowercase hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Parses hex (either case, even length).
pub fn from_hex(s: &str) -> Result<Vec<u8>, Error> {
    let bad = || Error::InvalidRequest("not an even-length hexadecimal string".into());
    if !s.len().is_multiple_of(2) {
        return Err(bad());
    }
    s.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |c: u8| (c as char).to_digit(16).ok_or_else(bad);
            Ok((digit(pair[0])? * 16 + digit(pair[1])?) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_purpose_path_parses_back_to_itself() {
        for p in [
            KeyPurpose::Wallet("wal_1".into()),
            KeyPurpose::PhoneWallet("+254700000001".into()),
            KeyPurpose::EscrowDeal("esc_9/x".into()),
            KeyPurpose::CheckoutSession("cs_1".into()),
            KeyPurpose::Treasury,
            KeyPurpose::Sponsor,
            KeyPurpose::ServiceFees,
        ] {
            assert_eq!(parse_purpose(&p.path()).unwrap(), p);
        }
        for bad in ["", "wallet", "wallet/", "service/other", "nope/x"] {
            assert!(parse_purpose(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hex_round_trips_and_refuses_junk() {
        assert_eq!(
            from_hex(&to_hex(&[0, 1, 0xab, 0xff])).unwrap(),
            [0, 1, 0xab, 0xff]
        );
        assert_eq!(from_hex("ABcd").unwrap(), [0xab, 0xcd]);
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
        assert!(from_hex("+1").is_err());
    }

    #[test]
    fn wrapping_twice_gives_the_key_back_and_depends_on_the_request() {
        let k = AuthKey::from_token(&"t".repeat(32)).unwrap();
        let w = k.wrap("sig-a", [7; 32]);
        assert_ne!(w, [7; 32]);
        assert_eq!(k.wrap("sig-a", w), [7; 32]);
        assert_ne!(k.wrap("sig-b", [7; 32]), w);
        assert!(AuthKey::from_token("short").is_err());
    }
}
