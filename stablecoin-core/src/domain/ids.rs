//! Prefixed, time-sortable identifiers.
//!
//! Format: `<prefix>_<10 chars time><16 chars random>` in Crockford base32 (ULID
//! layout: 48-bit millisecond time, 80 random bits). Ids sort by creation time, which
//! keeps "newest first" lists cheap in every store, and the prefix tells a human (and a
//! router) what an id names. Prefixes:
//!
//! | prefix | names |
//! |---|---|
//! | `ten_` | tenant |
//! | `key_` | API key record (the secret itself is `svc_sk_live_...` / `svc_sk_test_...`) |
//! | `wal_` | customer wallet |
//! | `fx_`  | FX quote (spec 2.3) |
//! | `otp_` | link / phone-change challenge |
//! | `fd_`, `tr_`, `sw_`, `wd_` | funding, transfer, swap, withdrawal operation |
//! | `evt_` | domain event (webhook `event_id`) |
//! | `esc_` | escrow deal |
//! | `whe_` | webhook endpoint |

use serde::{Deserialize, Serialize};
use std::fmt;

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Builds `<prefix>_<ulid>` from a time and 10 random bytes.
pub fn make_id(prefix: &str, now_ms: i64, random: [u8; 10]) -> String {
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('_');
    let t = (now_ms.max(0) as u64) & 0xFFFF_FFFF_FFFF;
    for i in (0..10).rev() {
        out.push(CROCKFORD[((t >> (i * 5)) & 31) as usize] as char);
    }
    let mut r: u128 = 0;
    for b in random {
        r = (r << 8) | b as u128;
    }
    for i in (0..16).rev() {
        out.push(CROCKFORD[((r >> (i * 5)) & 31) as usize] as char);
    }
    out
}

/// True when `s` is `<prefix>_` followed by 26 Crockford characters.
pub fn is_valid_id(prefix: &str, s: &str) -> bool {
    s.strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('_'))
        .is_some_and(|r| r.len() == 26 && r.bytes().all(|b| CROCKFORD.contains(&b)))
}

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident, $prefix:literal) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The prefix before `_` that every id of this type carries.
            pub const PREFIX: &'static str = $prefix;
            /// A new id created at `now_ms` (Unix milliseconds) with 10 random bytes;
            /// engines take the bytes from their injected `Entropy`, so tests can fix them.
            pub fn generate(now_ms: i64, random: [u8; 10]) -> Self {
                $name(make_id($prefix, now_ms, random))
            }
            /// The full id, prefix included.
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// Accepts only a well-formed id of this type.
            pub fn parse(s: &str) -> Option<Self> {
                is_valid_id($prefix, s).then(|| $name(s.to_string()))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(/** A tenant (fintech). */ TenantId, "ten");
id_type!(/** An API key record. */ ApiKeyId, "key");
id_type!(/** A customer wallet. */ WalletId, "wal");
id_type!(/** An FX quote. */ QuoteId, "fx");
id_type!(/** A one-time-code challenge. */ ChallengeId, "otp");
id_type!(/** A domain event. */ EventId, "evt");
id_type!(/** An escrow deal. */ EscrowId, "esc");
id_type!(/** A webhook endpoint. */ WebhookEndpointId, "whe");

/// An asynchronous operation; its prefix names its kind (`fd_`, `tr_`, `sw_`, `wd_`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OperationId(pub String);

impl OperationId {
    /// The full id, prefix included.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_sortable_and_validated() {
        let a = QuoteId::generate(1_000, [0; 10]);
        let b = QuoteId::generate(2_000, [0xff; 10]);
        assert!(a.as_str().starts_with("fx_"));
        assert_eq!(a.as_str().len(), 3 + 26);
        assert!(a < b);
        assert!(QuoteId::parse(a.as_str()).is_some());
        assert!(QuoteId::parse("fx_short").is_none());
        assert!(QuoteId::parse(&a.as_str().replace("fx_", "tr_")).is_none());
        assert!(TenantId::parse("ten_0000000000000000000000000I").is_none()); // I is not Crockford
    }
}
