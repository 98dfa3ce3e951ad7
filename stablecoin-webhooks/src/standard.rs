//! Standard Webhooks signatures (<https://www.standardwebhooks.com>), an opt-in beside
//! each family's own signature header, which stays exactly as the spec defines it.
//!
//! Why: the spec's headers sign the body only, so a captured delivery can be replayed
//! to the receiver later and verifies. Standard Webhooks signs
//! `{webhook-id}.{webhook-timestamp}.{body}` and receivers refuse timestamps outside a
//! tolerance (±5 minutes), so a replay is refused once stale, and `webhook-id` lets a
//! receiver drop duplicates. Any Standard Webhooks library verifies these headers.
//!
//! The key is the endpoint's own secret read the Standard Webhooks way: the part after
//! the prefix (`whsec_`, `svcwh_`), base64-decoded. Our secrets are 64 hex characters
//! there, which is valid base64 of 48 bytes, so the secret shown to the tenant is the one
//! its library takes (with `whsec_` in front for the wallet family's `svcwh_` secrets).

use crate::error::{WebhookError, WebhookResult};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The header carrying the message id (stable across retries and replays).
pub const ID_HEADER: &str = "webhook-id";
/// The header carrying the send time, Unix seconds.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The header carrying `v1,<base64>` signatures, space-separated.
pub const SIGNATURE_HEADER: &str = "webhook-signature";
/// How far a receiver lets the timestamp drift from its clock, either way.
pub const DEFAULT_TOLERANCE_S: i64 = 300;

/// The HMAC key of a secret (`<prefix>_<base64>`), or `None` when it is not base64.
pub fn key_of(secret: &str) -> Option<Vec<u8>> {
    let encoded = secret.split_once('_').map_or(secret, |(_, rest)| rest);
    STANDARD.decode(encoded).ok().filter(|k| !k.is_empty())
}

fn mac(key: &[u8], id: &str, timestamp_s: i64, body: &[u8]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(id.as_bytes());
    m.update(b".");
    m.update(timestamp_s.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m.finalize().into_bytes().into()
}

/// The `webhook-signature` value for a delivery (`v1,<base64>`).
pub fn sign(secret: &str, id: &str, timestamp_s: i64, body: &[u8]) -> WebhookResult<String> {
    let key = key_of(secret).ok_or(WebhookError::SignatureMalformed {
        header: SIGNATURE_HEADER,
        reason: "the secret is not <prefix>_<base64>",
    })?;
    Ok(format!(
        "v1,{}",
        STANDARD.encode(mac(&key, id, timestamp_s, body))
    ))
}

/// Checks Standard Webhooks headers against the raw body, at `now_s` (the receiver's
/// clock, injected), allowing `tolerance_s` of drift either way.
pub fn verify(
    secret: &str,
    body: &[u8],
    id: Option<&str>,
    timestamp: Option<&str>,
    signature: Option<&str>,
    now_s: i64,
    tolerance_s: i64,
) -> WebhookResult<()> {
    let id = id.ok_or(WebhookError::SignatureMissing { header: ID_HEADER })?;
    let ts = timestamp.ok_or(WebhookError::SignatureMissing {
        header: TIMESTAMP_HEADER,
    })?;
    let sigs = signature.ok_or(WebhookError::SignatureMissing {
        header: SIGNATURE_HEADER,
    })?;
    let ts: i64 = ts
        .trim()
        .parse()
        .map_err(|_| WebhookError::SignatureMalformed {
            header: TIMESTAMP_HEADER,
            reason: "expected Unix seconds",
        })?;
    if now_s.abs_diff(ts) > tolerance_s.unsigned_abs() {
        return Err(WebhookError::StaleTimestamp { tolerance_s });
    }
    let key = key_of(secret).ok_or(WebhookError::SignatureMalformed {
        header: SIGNATURE_HEADER,
        reason: "the secret is not <prefix>_<base64>",
    })?;
    let expected = mac(&key, id, ts, body);
    let matches = sigs.split(' ').any(|s| {
        s.strip_prefix("v1,")
            .and_then(|b| STANDARD.decode(b).ok())
            .is_some_and(|got| bool::from(got.as_slice().ct_eq(&expected)))
    });
    if matches {
        Ok(())
    } else {
        Err(WebhookError::SignatureMismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn the_standard_webhooks_reference_vector() {
        // From the Standard Webhooks specification's examples (and its libraries' tests).
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).unwrap();
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn verification_checks_the_signature_the_content_and_the_time() {
        let body = b"{\"a\":1}";
        let sig = sign(SECRET, "evt_1", 1_000_000, body).unwrap();
        let v = |body: &[u8], id: &str, ts: &str, sig: &str, now: i64| {
            verify(SECRET, body, Some(id), Some(ts), Some(sig), now, 300)
        };
        assert_eq!(v(body, "evt_1", "1000000", &sig, 1_000_000), Ok(()));
        assert_eq!(v(body, "evt_1", "1000000", &sig, 1_000_300), Ok(()));
        let stale = Err(WebhookError::StaleTimestamp { tolerance_s: 300 });
        assert_eq!(v(body, "evt_1", "1000000", &sig, 1_000_301), stale, "stale");
        assert_eq!(v(body, "evt_1", "1000000", &sig, 999_699), stale, "future");
        assert_eq!(v(body, "evt_1", "1000000", &sig, 999_700), Ok(()));
        assert_eq!(
            v(body, "evt_1", &i64::MIN.to_string(), &sig, i64::MAX),
            stale,
            "no overflow"
        );
        assert_eq!(
            v(b"{\"a\":2}", "evt_1", "1000000", &sig, 1_000_000),
            Err(WebhookError::SignatureMismatch)
        );
        assert_eq!(
            v(body, "evt_2", "1000000", &sig, 1_000_000),
            Err(WebhookError::SignatureMismatch),
            "the id is signed"
        );
        let both = format!("v1,AAAA {sig}");
        assert_eq!(v(body, "evt_1", "1000000", &both, 1_000_000), Ok(()));
        assert!(verify(SECRET, body, None, Some("1"), Some(&sig), 1, 300).is_err());
    }

    #[test]
    fn our_hex_secrets_are_valid_standard_keys() {
        let secret = format!("svcwh_{}", "ab".repeat(32));
        assert_eq!(key_of(&secret).map(|k| k.len()), Some(48));
        assert!(sign(&secret, "evt", 1, b"").is_ok());
        assert!(key_of("whsec_***").is_none());
    }
}
