//! Per-payout callback URLs: each payout's callback URL ends in `/{payout_id}/{token}`,
//! the token an HMAC-SHA256 of the payout id under a server secret.
//!
//! Why: Daraja and MTN sign nothing they POST back, and a payout id is no secret (it is
//! our withdrawal id, and Daraja echoes it). A URL only the provider was given, over
//! TLS, for this one payout is the authentication they support: a body at it came from
//! the provider (or from whoever it leaked to) and concerns this payout only. Being an
//! HMAC, any node holding the secret verifies it without a lookup, and rotating the
//! secret invalidates every URL handed out under the old one (results then come back
//! through the status query, which does not depend on callbacks).

use crate::ProviderError;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Shortest accepted callback secret, in bytes.
pub const MIN_SECRET_LEN: usize = 32;

/// The server secret callback tokens are derived under. `Debug` hides it.
#[derive(Clone)]
pub struct CallbackKey(Vec<u8>);

impl std::fmt::Debug for CallbackKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallbackKey(<redacted>)")
    }
}

impl CallbackKey {
    /// A key from `secret` (at least [`MIN_SECRET_LEN`] bytes).
    pub fn new(secret: &str) -> Result<Self, ProviderError> {
        if secret.len() < MIN_SECRET_LEN {
            return Err(ProviderError::Config(format!(
                "the callback secret must be at least {MIN_SECRET_LEN} characters"
            )));
        }
        Ok(CallbackKey(secret.as_bytes().to_vec()))
    }

    fn mac(&self, payout_id: &str) -> Hmac<Sha256> {
        // `new_from_slice` takes a key of any length.
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        m.update(b"stablecoin payout callback\0");
        m.update(payout_id.as_bytes());
        m
    }

    /// The token of `payout_id`: 32 lowercase hex characters (128 bits).
    pub fn token(&self, payout_id: &str) -> String {
        let out = self.mac(payout_id).finalize().into_bytes();
        out[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether `token` is `payout_id`'s, compared in constant time.
    pub fn verify(&self, payout_id: &str, token: &str) -> bool {
        use subtle::ConstantTimeEq;
        let want = self.token(payout_id);
        want.len() == token.len() && bool::from(want.as_bytes().ct_eq(token.as_bytes()))
    }

    /// `{base}/{payout_id}/{token}` (`base` without its trailing `/`). A payout id that
    /// is not URL-safe (letters, digits, `_`, `-`) is refused: ours always are.
    pub fn url(&self, base: &str, payout_id: &str) -> Result<String, ProviderError> {
        if payout_id.is_empty()
            || !payout_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(ProviderError::Config(
                "a payout id must be URL-safe to name it in a callback URL".into(),
            ));
        }
        Ok(format!(
            "{}/{payout_id}/{}",
            base.trim_end_matches('/'),
            self.token(payout_id)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_per_payout_and_per_secret_and_verify() {
        let k = CallbackKey::new(&"s".repeat(32)).unwrap();
        let t = k.token("wd_1");
        assert_eq!(t.len(), 32);
        assert_eq!(t, k.token("wd_1"));
        assert_ne!(t, k.token("wd_2"));
        assert!(k.verify("wd_1", &t));
        assert!(!k.verify("wd_2", &t));
        assert!(!k.verify("wd_1", &t[..31]));
        let other = CallbackKey::new(&"t".repeat(32)).unwrap();
        assert!(!other.verify("wd_1", &t));
        assert_eq!(
            k.url("https://h/cb/", "wd_1").unwrap(),
            format!("https://h/cb/wd_1/{t}")
        );
        assert!(k.url("https://h", "wd/1").is_err());
        assert!(CallbackKey::new("short").is_err());
        assert!(!format!("{k:?}").contains("sss"));
    }
}
