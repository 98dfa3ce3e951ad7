//! Signing and verification of both webhook families (spec 6.1, 6.2).
//!
//! | family | header | value |
//! |---|---|---|
//! | wallet-service | `X-Svc-Signature` | `sha256=<64 lowercase hex>` |
//! | payments | `X-Webhook-Signature` | `<64 lowercase hex>` (no prefix) |
//!
//! Both are HMAC-SHA256 of the raw request body, keyed with the UTF-8 bytes of the whole
//! secret string (prefix included, as Stripe does), so a receiver never has to decode the
//! secret. Verification runs over the exact bytes received (never a re-serialised JSON
//! value) and compares in constant time (`hmac`'s `verify_slice`). Hex is accepted in
//! either case on input; anything that is not exactly 64 hex digits (a truncated
//! signature, say) is `SIGNATURE_MALFORMED`, a well-formed one that does not match is
//! `SIGNATURE_MISMATCH`. A rotated secret replaces the previous one: only the current
//! secret verifies.

use crate::error::{WebhookError, WebhookResult};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use stablecoin_core::ports::Entropy;

type HmacSha256 = Hmac<Sha256>;

/// `X-Svc-Signature` (wallet-service family).
pub const WALLET_SIGNATURE_HEADER: &str = "X-Svc-Signature";
/// `User-Agent` of wallet-service deliveries.
pub const WALLET_USER_AGENT: &str = "Svc-CaaS-Webhooks/1.0";
/// `X-Webhook-Signature` (payments family).
pub const PAYMENTS_SIGNATURE_HEADER: &str = "X-Webhook-Signature";
/// `X-Webhook-Event` (payments family): the event name.
pub const PAYMENTS_EVENT_HEADER: &str = "X-Webhook-Event";
/// `X-Webhook-ID` (payments family): the delivery id receivers dedupe on.
pub const PAYMENTS_ID_HEADER: &str = "X-Webhook-ID";

/// Prefix of payments-family secrets (spec 6.2).
pub const PAYMENTS_SECRET_PREFIX: &str = "whsec_";
/// Prefix of wallet-service secrets (the spec names none; ours makes them recognisable
/// in logs and secret scanners).
pub const WALLET_SECRET_PREFIX: &str = "svcwh_";

/// The two webhook families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Wallet-service webhooks (spec 6.1).
    Wallet,
    /// Payments webhooks (spec 6.2).
    Payments,
}

impl Family {
    /// `wallet` or `payments`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Wallet => "wallet",
            Family::Payments => "payments",
        }
    }

    /// The header that carries the signature.
    pub fn signature_header(self) -> &'static str {
        match self {
            Family::Wallet => WALLET_SIGNATURE_HEADER,
            Family::Payments => PAYMENTS_SIGNATURE_HEADER,
        }
    }

    /// The prefix of this family's secrets.
    pub fn secret_prefix(self) -> &'static str {
        match self {
            Family::Wallet => WALLET_SECRET_PREFIX,
            Family::Payments => PAYMENTS_SECRET_PREFIX,
        }
    }

    /// A new secret: the family prefix and 32 random bytes in lowercase hex. Shown to the
    /// tenant once, at registration or rotation.
    pub fn generate_secret(self, entropy: &dyn Entropy) -> String {
        let mut bytes = [0u8; 32];
        entropy.fill(&mut bytes);
        let mut s = String::with_capacity(self.secret_prefix().len() + 64);
        s.push_str(self.secret_prefix());
        push_hex(&mut s, &bytes);
        s
    }

    /// The header value for `body` signed with `secret`.
    pub fn sign(self, secret: &str, body: &[u8]) -> String {
        let digest = mac(secret, body).finalize().into_bytes();
        let mut s = String::with_capacity(7 + 64);
        if self == Family::Wallet {
            s.push_str("sha256=");
        }
        push_hex(&mut s, &digest);
        s
    }

    /// Checks a received signature header against the exact body bytes received.
    pub fn verify(self, secret: &str, body: &[u8], header: Option<&str>) -> WebhookResult<()> {
        let name = self.signature_header();
        let value = header.ok_or(WebhookError::SignatureMissing { header: name })?;
        let hex =
            match self {
                Family::Wallet => value.trim().strip_prefix("sha256=").ok_or(
                    WebhookError::SignatureMalformed {
                        header: name,
                        reason: "expected sha256=<hex>",
                    },
                )?,
                Family::Payments => value.trim(),
            };
        let expected = decode_digest(hex).ok_or(WebhookError::SignatureMalformed {
            header: name,
            reason: "expected 64 hexadecimal digits",
        })?;
        mac(secret, body)
            .verify_slice(&expected)
            .map_err(|_| WebhookError::SignatureMismatch)
    }
}

fn mac(secret: &str, body: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length: this cannot fail.
    let mut m = <HmacSha256 as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    m.update(body);
    m
}

fn push_hex(s: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
}

fn decode_digest(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stablecoin_core::memory::SeededEntropy;

    #[test]
    fn sign_then_verify_round_trips_for_both_families() {
        for f in [Family::Wallet, Family::Payments] {
            let sig = f.sign("s3cret", b"{\"a\":1}");
            assert!(f.verify("s3cret", b"{\"a\":1}", Some(&sig)).is_ok());
            assert!(
                f.verify(
                    "s3cret",
                    b"{\"a\":1}",
                    Some(&sig.to_uppercase().replace("SHA256=", "sha256="))
                )
                .is_ok()
            );
        }
        assert!(Family::Wallet.sign("k", b"").starts_with("sha256="));
        assert_eq!(Family::Payments.sign("k", b"").len(), 64);
    }

    #[test]
    fn secrets_carry_the_family_prefix_and_differ() {
        let e = SeededEntropy::new(1);
        let a = Family::Payments.generate_secret(&e);
        let b = Family::Payments.generate_secret(&e);
        assert!(a.starts_with("whsec_") && a.len() == 6 + 64);
        assert_ne!(a, b);
        assert!(Family::Wallet.generate_secret(&e).starts_with("svcwh_"));
    }
}
