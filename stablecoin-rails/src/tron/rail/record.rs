//! What the rail remembers of each payment ([`PaymentRecord`]: its txID, expiry and the
//! delegations still to reclaim), in memory and written through to the journal before
//! the broadcast, so a restarted rail reconciles by txID.

use super::{parse_address, rejected};
use crate::tron::client::TxInfo;
use crate::tron::{Resource, TronAddress, TronRail};
use stablecoin_core::ports::{ChainAddress, RailError, RailPayment};
use std::collections::HashMap;
use std::sync::MutexGuard;

/// What the sponsor's own transactions for a payment cost it (the activation of the
/// customer's account and the delegations of every attempt), read from their
/// `gettransactioninfobyid` as each lands: part of the payment's
/// [`SponsorCost`](stablecoin_core::ports::SponsorCost).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SponsorSpend {
    /// TRX burnt (`fee`: the account-creation fee, Bandwidth paid by burning), in sun.
    pub(super) fee_sun: u64,
    /// Bandwidth consumed from the sponsor's stake or free allowance (`net_usage`), and
    /// by the payment's earlier transfers that ran out of Energy (from what was lent).
    pub(super) net_usage: u64,
    /// Energy the payment's earlier transfers consumed before they ran out
    /// (`OUT_OF_ENERGY`: the lent Energy is gone all the same).
    pub(super) energy: u64,
}

impl SponsorSpend {
    pub(super) fn add(&mut self, info: &TxInfo) {
        self.fee_sun = self.fee_sun.saturating_add(info.fee_sun);
        self.net_usage = self.net_usage.saturating_add(info.net_usage);
    }

    /// Counts a transfer of the payment that ran out of Energy before a retry: the
    /// Energy and Bandwidth it consumed (the customer's `fee`, if any, is not the
    /// service's).
    pub(super) fn add_failed_transfer(&mut self, info: &TxInfo) {
        self.energy = self.energy.saturating_add(info.energy_usage_total);
        self.net_usage = self.net_usage.saturating_add(info.net_usage);
    }
}

/// The journal entry of a payment.
#[derive(Clone, Debug)]
pub(super) struct PaymentRecord {
    pub(super) txid: [u8; 32],
    pub(super) expiration_ms: i64,
    pub(super) customer: TronAddress,
    /// Delegations still to reclaim once the transfer is in a block.
    pub(super) delegations: Vec<(Resource, u64)>,
    /// The payment, kept so a transfer that ran out of Energy can be re-sponsored and
    /// signed again under the same id (`None` for records written before retries
    /// existed or re-seeded by [`TronRail::restore_submission`]: those are not retried).
    pub(super) payment: Option<RailPayment>,
    /// Transfers broadcast for this payment so far (1, then one more per re-sponsored
    /// retry after `OUT_OF_ENERGY`).
    pub(super) attempts: u32,
    /// What the sponsor's transactions for this payment cost so far (zero for records
    /// written before costs were kept, or re-seeded).
    pub(super) spent: SponsorSpend,
}

impl PaymentRecord {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "txid": hex::encode(self.txid),
            "expiration_ms": self.expiration_ms,
            "customer": self.customer.to_base58(),
            "delegations": self
                .delegations
                .iter()
                .map(|(r, sun)| serde_json::json!({"resource": r.name(), "sun": sun}))
                .collect::<Vec<_>>(),
            "payment": self.payment,
            "attempts": self.attempts,
            "sponsor_fee_sun": self.spent.fee_sun,
            "sponsor_net_usage": self.spent.net_usage,
            "failed_energy": self.spent.energy,
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<PaymentRecord> {
        let txid = hex::decode(v.get("txid")?.as_str()?)
            .ok()?
            .try_into()
            .ok()?;
        let delegations = v
            .get("delegations")?
            .as_array()?
            .iter()
            .map(|d| {
                let resource = match d.get("resource")?.as_str()? {
                    "ENERGY" => Resource::Energy,
                    "BANDWIDTH" => Resource::Bandwidth,
                    _ => return None,
                };
                Some((resource, d.get("sun")?.as_u64()?))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PaymentRecord {
            txid,
            expiration_ms: v.get("expiration_ms")?.as_i64()?,
            customer: TronAddress::parse(v.get("customer")?.as_str()?).ok()?,
            delegations,
            // Entries written before retries existed have neither.
            payment: v
                .get("payment")
                .and_then(|p| serde_json::from_value(p.clone()).ok()),
            attempts: v
                .get("attempts")
                .and_then(serde_json::Value::as_u64)
                .map_or(1, |a| u32::try_from(a).unwrap_or(u32::MAX)),
            // Entries written before costs were kept: nothing known, zero.
            spent: SponsorSpend {
                fee_sun: v
                    .get("sponsor_fee_sun")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0),
                net_usage: v
                    .get("sponsor_net_usage")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0),
                energy: v
                    .get("failed_energy")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0),
            },
        })
    }
}

impl TronRail {
    /// The record of a payment, from memory or else from the journal.
    pub(super) async fn record(
        &self,
        payment_id: &str,
    ) -> Result<Option<PaymentRecord>, RailError> {
        if let Some(r) = self.lock().get(payment_id).cloned() {
            return Ok(Some(r));
        }
        let Some(r) = crate::journal::load_entry(
            &*self.journal,
            "tron",
            payment_id,
            PaymentRecord::from_json,
        )
        .await?
        else {
            return Ok(None);
        };
        self.lock()
            .entry(payment_id.to_string())
            .or_insert_with(|| r.clone());
        Ok(Some(r))
    }

    /// Writes the record of `payment_id` (`None`: nothing in flight) to the journal.
    pub(super) async fn persist(
        &self,
        payment_id: &str,
        record: Option<&PaymentRecord>,
    ) -> Result<(), RailError> {
        let entry = record.map_or(serde_json::Value::Null, PaymentRecord::to_json);
        self.journal.save("tron", payment_id, &entry).await
    }

    /// Re-seeds the payment id -> txID map after a restart from the `tx_hash` the engine
    /// persisted. Without `expiration_ms` a never-included transaction stays `Pending`
    /// (it cannot be declared dead without knowing its expiry).
    pub fn restore_submission(
        &self,
        payment_id: &str,
        tx_hash: &str,
        customer: &ChainAddress,
        expiration_ms: Option<i64>,
    ) -> Result<(), RailError> {
        let txid = hex::decode(tx_hash)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
            .ok_or_else(|| rejected(format!("invalid TRON txID {tx_hash:?}")))?;
        let customer = parse_address(customer)?;
        self.lock()
            .entry(payment_id.to_string())
            .or_insert(PaymentRecord {
                txid,
                expiration_ms: expiration_ms.unwrap_or(i64::MAX),
                customer,
                delegations: vec![],
                payment: None,
                attempts: 1,
                spent: SponsorSpend::default(),
            });
        Ok(())
    }

    /// The txID recorded for a payment id, if any.
    pub fn tx_hash_of(&self, payment_id: &str) -> Option<String> {
        self.lock().get(payment_id).map(|r| hex::encode(r.txid))
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, PaymentRecord>> {
        // Records stay consistent between statements: a poisoned lock is safe to reuse.
        self.payments.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sponsors_spend_survives_the_journal_and_old_entries_read_as_zero() {
        let record = PaymentRecord {
            txid: [7; 32],
            expiration_ms: 1_000,
            customer: TronAddress::parse("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t").unwrap(),
            delegations: vec![(Resource::Energy, 5_000_000)],
            payment: None,
            attempts: 2,
            spent: SponsorSpend {
                fee_sun: 1_100_000,
                net_usage: 612,
                energy: 64_285,
            },
        };
        let mut json = record.to_json();
        let back = PaymentRecord::from_json(&json).unwrap();
        assert_eq!(back.spent, record.spent);
        assert_eq!(back.attempts, 2);
        // An entry journaled before costs were kept.
        let old = json.as_object_mut().unwrap();
        old.remove("sponsor_fee_sun");
        old.remove("sponsor_net_usage");
        old.remove("failed_energy");
        let back = PaymentRecord::from_json(&json).unwrap();
        assert_eq!(back.spent, SponsorSpend::default());
    }
}
