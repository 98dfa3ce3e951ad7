//! A transfer that ran out of Energy (`OUT_OF_ENERGY` in its receipt).
//!
//! Why it happens: the sponsor lends Energy to the customer's account just before the
//! transfer, but any transaction of that account executed in between (another send from
//! the same wallet, by this or another process) draws on the same lent Energy, and a
//! token whose cost rose (TRON's dynamic Energy factor) needs more than
//! [`TronConfig::energy_per_transfer`](super::TronConfig::energy_per_transfer). The
//! customer holds no TRX to burn instead, so the call stops, reverted: nothing moved.
//!
//! What the rail does: once the failed transfer is at the confirmation depth (it can
//! then never be replaced in a fork by a version of it that pays), `status` lends the
//! resources again and signs a new transfer of the same payment under the same payment
//! id, up to [`TronConfig::out_of_energy_retries`](super::TronConfig::out_of_energy_retries)
//! times. A payment has at most one live transfer at a time (a retry is sent only after
//! the previous one failed irreversibly), so it can never pay twice. Past the retries,
//! or when the new transfer cannot be sent (the deadline passed, the node refused it),
//! the payment is `Failed` with the reason, and the engine returns its money.

use super::record::{PaymentRecord, SponsorSpend};
use super::{TronRail, cost_of, unavailable};
use crate::tron::client::TxInfo;
use stablecoin_core::ports::{RailError, SubmissionStatus};

impl TronRail {
    /// The status of a payment whose current transfer is at the confirmation depth with
    /// `OUT_OF_ENERGY` (`record` and `info` describe it): `Pending` with a new transfer,
    /// or `Failed`.
    pub(super) async fn after_out_of_energy(
        &self,
        payment_id: &str,
        record: &PaymentRecord,
        info: &TxInfo,
    ) -> Result<SubmissionStatus, RailError> {
        // The failed transfer consumed Energy and Bandwidth the service lent: a final
        // failure reports it with every earlier attempt's, a retry carries it forward.
        let failed =
            |txid: &[u8; 32], spent: SponsorSpend, note: String| SubmissionStatus::Failed {
                reason: format!("{}{note}", info.failure_reason()),
                tx_hash: Some(hex::encode(txid)),
                cost: Some(cost_of(info, spent)),
            };
        // One re-sponsorship at a time (the sponsor's transactions are sequential), and
        // never two for the same failed transfer: another poll may have sent the retry
        // while this one waited.
        let _guard = self.submit_lock.lock().await;
        let current = match self.record(payment_id).await? {
            Some(r) if r.txid == record.txid => r,
            Some(r) => {
                return Ok(SubmissionStatus::Pending {
                    tx_hash: Some(hex::encode(r.txid)),
                });
            }
            None => return Ok(failed(&record.txid, record.spent, String::new())),
        };
        let Some(payment) = current.payment.clone() else {
            // Re-seeded without its payment: nothing to sign again.
            return Ok(failed(&current.txid, current.spent, String::new()));
        };
        if self.config.energy_per_transfer == 0 {
            // Nothing is lent: a retry would run out the same way.
            return Ok(failed(
                &current.txid,
                current.spent,
                " (not re-sponsored: energy_per_transfer = 0 lends no Energy)".into(),
            ));
        }
        let retried = current.attempts.saturating_sub(1);
        if retried >= self.config.out_of_energy_retries {
            return Ok(failed(
                &current.txid,
                current.spent,
                format!(
                    " (ran out of Energy after {retried} re-sponsored retr{}; out_of_energy_retries = {})",
                    if retried == 1 { "y" } else { "ies" },
                    self.config.out_of_energy_retries
                ),
            ));
        }
        // Past its deadline: no new transfer may be signed.
        if let Err(e) = self.header_until(payment.valid_until).await {
            return match e {
                RailError::Rejected { reason } => Ok(failed(
                    &current.txid,
                    current.spent,
                    format!(" (not re-sponsored: {reason})"),
                )),
                other => Err(other),
            };
        }
        let (account, resources) = self.sponsor_state().await?;
        let shortfalls = self.sponsor_shortfalls(account.as_ref(), &resources);
        if !shortfalls.is_empty() {
            // Poll again: the sponsor may be topped up before the deadline.
            return Err(unavailable(format!(
                "the transfer ran out of Energy and the sponsor cannot lend it again yet: {}",
                shortfalls.join("; ")
            )));
        }
        let txid = current.txid;
        let before = current.spent;
        let mut spent = before;
        spent.add_failed_transfer(info);
        match self
            .sponsor_and_send(&payment, &resources, Some(current), spent)
            .await
        {
            Ok(sub) => Ok(SubmissionStatus::Pending {
                tx_hash: sub.tx_hash,
            }),
            // Recorded before the broadcast: reconciled by its txID on the next poll.
            Err(RailError::Unknown { .. }) => Ok(SubmissionStatus::Pending {
                tx_hash: self.tx_hash_of(payment_id),
            }),
            Err(e @ RailError::Unavailable { .. }) => Err(e),
            Err(e) => Ok(failed(
                &txid,
                before,
                format!(" (re-sponsoring it failed: {e})"),
            )),
        }
    }
}
