//! The payments-family wallet facts (spec 6.2), built in their wire shape: the
//! `wallet.deposit.*` envelopes of deposits into monitored addresses (customer wallets,
//! checkout sessions) and `wallet.transfer.*` of tenant-initiated wallet transfers.
//!
//! One builder serves every engine that reports them (the core's deposit scanner and
//! settlement, the checkout), so the field rules live in one place:
//! - `customer_id` is the only guaranteed field; `deposit_id` is an integer and the
//!   idempotency key; `amount` and `gas_fee` are decimal strings with 6 places, never
//!   numbers; `block_number` is an integer;
//! - while the real hash is unknown, `tx_hash` is the placeholder
//!   `pending_<unix seconds>_<first 10 characters of the address>` and `hash_pending`
//!   is true on `detected`;
//! - `hash_resolved` carries the hash only: no amount, no currency.
//!
//! The webhooks crate parses each payload strictly before signing it (its
//! `PaymentsPayload`), so a drift fails visibly; its golden files pin the bytes.

use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use serde_json::{Map, Value, json};

/// `wallet.deposit.detected`.
pub const DEPOSIT_DETECTED: &str = "wallet.deposit.detected";
/// `wallet.deposit.confirmed`.
pub const DEPOSIT_CONFIRMED: &str = "wallet.deposit.confirmed";
/// `wallet.deposit.hash_resolved`.
pub const DEPOSIT_HASH_RESOLVED: &str = "wallet.deposit.hash_resolved";
/// `wallet.transfer.confirmed`.
pub const WALLET_TRANSFER_CONFIRMED: &str = "wallet.transfer.confirmed";
/// `wallet.transfer.failed`.
pub const WALLET_TRANSFER_FAILED: &str = "wallet.transfer.failed";

/// A JSON-safe integer (`1 ..< 2^53`) from SHA-256 of `parts`: deterministic, so every
/// process and every rescan gives a deposit the same `deposit_id`.
pub fn integer_id(parts: &[&str]) -> u64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    (u64::from_be_bytes(b) & ((1u64 << 53) - 1)).max(1)
}

/// The placeholder hash of a deposit whose real hash is not known yet (spec 6.2 rule 4).
pub fn placeholder_hash(detected_at: Timestamp, address: &str) -> String {
    let prefix: String = address.chars().take(10).collect();
    format!("pending_{}_{prefix}", detected_at.unix_secs())
}

/// Which deposit event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepositEventKind {
    /// Seen; credits nothing.
    Detected,
    /// Confirmations reached; the crediting event when `safe_to_credit`.
    Confirmed {
        /// Whether the deposit was credited by this event.
        safe_to_credit: bool,
    },
    /// The real hash of a deposit first reported without one.
    HashResolved,
}

/// What a deposit event says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepositFields {
    /// The tenant's own customer id.
    pub customer_id: String,
    /// The integer idempotency key.
    pub deposit_id: u64,
    /// The monitored address that received it.
    pub address: String,
    /// The network (`polygon`, `tron`, ...).
    pub network: String,
    /// Which stablecoin.
    pub token: Token,
    /// Micro-units.
    pub amount: Micros,
    /// The real hash, when known; else the placeholder is sent.
    pub tx_hash: Option<String>,
    /// The placeholder of [`placeholder_hash`].
    pub placeholder: String,
    /// Confirmations seen.
    pub confirmations: u64,
    /// When first seen (links detected, confirmed and hash_resolved).
    pub detected_at: Timestamp,
    /// When confirmed.
    pub confirmed_at: Option<Timestamp>,
    /// Who saw it.
    pub detected_by: String,
}

/// The `(event name, payload)` of a deposit event.
pub fn deposit_payload(kind: DepositEventKind, f: &DepositFields) -> (&'static str, Value) {
    let hash = f.tx_hash.clone().unwrap_or_else(|| f.placeholder.clone());
    let mut d = Map::new();
    d.insert("customer_id".into(), json!(f.customer_id));
    d.insert("deposit_id".into(), json!(f.deposit_id));
    let common = |d: &mut Map<String, Value>| {
        d.insert("address".into(), json!(f.address));
        d.insert("network".into(), json!(f.network));
        d.insert("currency".into(), json!(f.token.as_str()));
        d.insert("amount".into(), json!(f.amount.to_decimal_string()));
        d.insert("tx_hash".into(), json!(hash));
    };
    let confirmations = json!(f.confirmations.min(u32::MAX as u64));
    let event = match kind {
        DepositEventKind::HashResolved => {
            d.insert("tx_hash".into(), json!(hash));
            d.insert("detected_at".into(), json!(f.detected_at.to_rfc3339()));
            DEPOSIT_HASH_RESOLVED
        }
        DepositEventKind::Detected => {
            common(&mut d);
            d.insert("hash_pending".into(), json!(f.tx_hash.is_none()));
            d.insert("confirmations".into(), confirmations);
            d.insert("status".into(), json!("detected"));
            d.insert("detected_at".into(), json!(f.detected_at.to_rfc3339()));
            d.insert("detected_by".into(), json!(f.detected_by));
            DEPOSIT_DETECTED
        }
        DepositEventKind::Confirmed { safe_to_credit } => {
            common(&mut d);
            d.insert("confirmations".into(), confirmations);
            d.insert("status".into(), json!("confirmed"));
            d.insert("safe_to_credit".into(), json!(safe_to_credit));
            d.insert("detected_at".into(), json!(f.detected_at.to_rfc3339()));
            if let Some(t) = f.confirmed_at {
                d.insert("confirmed_at".into(), json!(t.to_rfc3339()));
            }
            DEPOSIT_CONFIRMED
        }
    };
    (event, json!({"event": event, "data": Value::Object(d)}))
}

/// What a `wallet.transfer.*` event says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalletTransferFields {
    /// `true`: `wallet.transfer.confirmed`; `false`: `wallet.transfer.failed`.
    pub confirmed: bool,
    /// The transaction, when one was broadcast.
    pub tx_hash: Option<String>,
    /// The initiating tenant's customer id of the sending wallet.
    pub customer_id: String,
    /// The network.
    pub network: String,
    /// Which stablecoin.
    pub token: Token,
    /// The sending wallet's address.
    pub from_address: String,
    /// The recipient's address.
    pub to_address: String,
    /// What the sender was debited, micro-units.
    pub amount: Micros,
    /// The network fee charged to the customer: zero, the service sponsors it.
    pub gas_fee: Micros,
    /// When it was confirmed.
    pub confirmed_at: Option<Timestamp>,
    /// The including block, when known.
    pub block_number: Option<u64>,
}

/// The `(event name, payload)` of a wallet transfer event.
pub fn wallet_transfer_payload(f: &WalletTransferFields) -> (&'static str, Value) {
    let (event, status) = if f.confirmed {
        (WALLET_TRANSFER_CONFIRMED, "confirmed")
    } else {
        (WALLET_TRANSFER_FAILED, "failed")
    };
    let mut d = Map::new();
    if let Some(h) = &f.tx_hash {
        d.insert("tx_hash".into(), json!(h));
    }
    d.insert("customer_id".into(), json!(f.customer_id));
    d.insert("network".into(), json!(f.network));
    d.insert("currency".into(), json!(f.token.as_str()));
    d.insert("from_address".into(), json!(f.from_address));
    d.insert("to_address".into(), json!(f.to_address));
    d.insert("amount".into(), json!(f.amount.to_decimal_string()));
    d.insert("gas_fee".into(), json!(f.gas_fee.to_decimal_string()));
    d.insert("status".into(), json!(status));
    if let Some(t) = f.confirmed_at {
        d.insert("confirmed_at".into(), json!(t.to_rfc3339()));
    }
    if let Some(b) = f.block_number {
        d.insert("block_number".into(), json!(b));
    }
    (event, json!({"event": event, "data": Value::Object(d)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ids_are_stable_json_safe_and_spread() {
        let a = integer_id(&["polygon", "0xabc", "0"]);
        assert_eq!(a, integer_id(&["polygon", "0xabc", "0"]));
        assert!(a < (1 << 53) && a > 0);
        assert_ne!(a, integer_id(&["polygon", "0xabc", "1"]));
        assert_ne!(integer_id(&["ab", "c"]), integer_id(&["a", "bc"]));
    }

    #[test]
    fn the_placeholder_has_the_spec_form() {
        let p = placeholder_hash(Timestamp::from_secs(1_700_000_000), "0x1234567890abcdef");
        assert_eq!(p, "pending_1700000000_0x12345678");
    }

    fn fields() -> DepositFields {
        DepositFields {
            customer_id: "cus_1".into(),
            deposit_id: 42,
            address: "0xabc".into(),
            network: "polygon".into(),
            token: Token::Usdc,
            amount: Micros::new(1_500_000),
            tx_hash: None,
            placeholder: "pending_1_0xabc".into(),
            confirmations: 0,
            detected_at: Timestamp::from_secs(1),
            confirmed_at: None,
            detected_by: "scanner".into(),
        }
    }

    #[test]
    fn deposit_payloads_follow_the_field_rules() {
        let (name, v) = deposit_payload(DepositEventKind::Detected, &fields());
        assert_eq!(name, DEPOSIT_DETECTED);
        let d = &v["data"];
        assert_eq!(d["tx_hash"], "pending_1_0xabc");
        assert_eq!(d["hash_pending"], true);
        assert_eq!(d["amount"], "1.500000");
        assert!(d["deposit_id"].is_u64());
        let (_, v) = deposit_payload(
            DepositEventKind::HashResolved,
            &DepositFields {
                tx_hash: Some("0xreal".into()),
                ..fields()
            },
        );
        let d = v["data"].as_object().unwrap();
        let mut keys: Vec<_> = d.keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["customer_id", "deposit_id", "detected_at", "tx_hash"]
        );
    }

    #[test]
    fn wallet_transfer_payloads_carry_strings_and_an_integer_block() {
        let (name, v) = wallet_transfer_payload(&WalletTransferFields {
            confirmed: true,
            tx_hash: Some("0xt".into()),
            customer_id: "cus_1".into(),
            network: "polygon".into(),
            token: Token::Usdt,
            from_address: "0xa".into(),
            to_address: "0xb".into(),
            amount: Micros::new(2_000_000),
            gas_fee: Micros::ZERO,
            confirmed_at: Some(Timestamp::from_secs(5)),
            block_number: Some(9),
        });
        assert_eq!(name, WALLET_TRANSFER_CONFIRMED);
        assert_eq!(v["data"]["amount"], "2.000000");
        assert_eq!(v["data"]["gas_fee"], "0.000000");
        assert_eq!(v["data"]["block_number"], 9);
        assert_eq!(v["data"]["status"], "confirmed");
    }
}
