//! A customer's sponsored TRC-20 transfer: validation, activation and delegation by the
//! sponsor, the signed `transfer`, and its record written before the broadcast.

use super::record::{PaymentRecord, SponsorSpend};
use super::{derive, parse_address, read_error, rejected, unavailable, unsupported_token};
use crate::tron::client::{AccountResources, BroadcastOutcome};
use crate::tron::{TronAddress, TronRail, tx};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::ports::{LegRole, RailError, RailPayment, Submission};

impl TronRail {
    fn validate(
        &self,
        payment: &RailPayment,
    ) -> Result<(TronAddress, TronAddress, u64, TronAddress), RailError> {
        if payment.id.is_empty() {
            return Err(rejected("payment id is empty"));
        }
        let contract = self
            .config
            .contract_of(payment.token)
            .ok_or_else(|| unsupported_token(payment.token))?;
        let [leg] = payment.legs.as_slice() else {
            return Err(RailError::Unsupported {
                what: format!(
                    "{} legs on TRON: a TRON payment is one recipient leg (no fee legs, spec 8.4)",
                    payment.legs.len()
                ),
            });
        };
        if leg.role != LegRole::Recipient {
            return Err(RailError::Unsupported {
                what: "fee legs on TRON: native TRON sponsorship deducts no fee (spec 8.4)".into(),
            });
        }
        if leg.amount.is_zero() {
            return Err(rejected("amount must be positive"));
        }
        let from = parse_address(&payment.from_address)?;
        let to = parse_address(&leg.to)?;
        if from == to {
            return Err(rejected("sender and recipient are the same address"));
        }
        Ok((from, to, leg.amount.get(), contract))
    }

    pub(super) async fn submit_locked(
        &self,
        payment: &RailPayment,
    ) -> Result<Submission, RailError> {
        if let Some(r) = self.record(&payment.id).await? {
            return Ok(submission(&payment.id, hex::encode(r.txid)));
        }
        let (from, _to, amount, contract) = self.validate(payment)?;
        // Past its deadline already: refused before any sponsorship is spent.
        self.header_until(payment.valid_until).await?;
        if derive(self.signer.as_ref(), &payment.from).await? != from {
            return Err(rejected(format!(
                "from_address {} is not the address of key {}",
                payment.from_address, payment.from
            )));
        }
        if from == self.sponsor {
            return Err(rejected("the sponsor account does not send USDT"));
        }
        let (sponsor_account, resources) = self.sponsor_state().await?;
        let shortfalls = self.sponsor_shortfalls(sponsor_account.as_ref(), &resources);
        if !shortfalls.is_empty() {
            return Err(unavailable(format!(
                "TRON sends disabled (readiness INBOUND_READY): {}",
                shortfalls.join("; ")
            )));
        }
        let balance = self
            .api
            .trc20_balance(&contract, &from, &self.sponsor)
            .await
            .map_err(|e| read_error("balanceOf", e))?;
        if balance < amount as u128 {
            return Err(rejected(format!(
                "insufficient balance: {} available, {} needed",
                Micros(u64::try_from(balance).unwrap_or(u64::MAX)),
                Micros(amount)
            )));
        }

        // 1. Activation.
        let customer_account = self
            .api
            .account(&from)
            .await
            .map_err(|e| read_error("getaccount(customer)", e))?;
        let mut spent = SponsorSpend::default();
        if customer_account.is_none() {
            let unsigned = tx::build_account_create(&self.header().await?, &self.sponsor, &from);
            let info = self
                .sponsor_tx("account activation", unsigned)
                .await
                .map_err(|e| rejected(format!("sponsorship failed, nothing sent: {e}")))?;
            spent.add(&info);
        }

        self.sponsor_and_send(payment, &resources, None, spent)
            .await
    }

    /// Steps 2 and 3 of a send: lends the Energy and Bandwidth of one transfer, then
    /// signs and broadcasts the customer's transfer, recorded under the payment id
    /// before the broadcast. `previous` is the record of an earlier transfer of the same
    /// payment that ran out of Energy (a retry): it is counted in the new record's
    /// `attempts`, and kept if the new transfer is refused, so the payment still reads
    /// as that failure. `spent` is what the sponsor's transactions for this payment cost
    /// before this attempt; the delegations' cost is added, and the sum recorded.
    pub(super) async fn sponsor_and_send(
        &self,
        payment: &RailPayment,
        resources: &AccountResources,
        previous: Option<PaymentRecord>,
        mut spent: SponsorSpend,
    ) -> Result<Submission, RailError> {
        let (from, to, amount, contract) = self.validate(payment)?;
        let plan = self
            .delegation_plan(resources)
            .map_err(|e| unavailable(format!("sends disabled: {e}")))?;
        let mut delegated = Vec::new();
        for (resource, sun) in &plan {
            let step = async {
                let unsigned = tx::build_delegate_resource(
                    &self.header().await.map_err(|e| e.to_string())?,
                    &self.sponsor,
                    &from,
                    *resource,
                    *sun,
                )
                .map_err(|e| e.to_string())?;
                self.sponsor_tx(&format!("{} delegation", resource.name()), unsigned)
                    .await
            }
            .await;
            match step {
                Ok(info) => {
                    spent.add(&info);
                    delegated.push((*resource, *sun));
                }
                Err(e) => {
                    let left = self.reclaim(&from, delegated).await;
                    let note = if left.is_empty() {
                        String::new()
                    } else {
                        format!(" (could not reclaim {left:?} from {from})")
                    };
                    return Err(rejected(format!(
                        "sponsorship failed, nothing sent: {e}{note}"
                    )));
                }
            }
        }

        // 3. The transfer, signed by the customer's key, expiring by the deadline.
        let header = match self.header_until(payment.valid_until).await {
            Ok(h) => h,
            Err(e) => {
                self.reclaim(&from, delegated).await;
                return Err(e);
            }
        };
        let unsigned = tx::build_trc20_transfer(
            &header,
            &from,
            &contract,
            &to,
            amount as u128,
            self.config.fee_limit_sun,
        );
        let signed = match self.sign(&payment.from, &from, unsigned).await {
            Ok(s) => s,
            Err(e) => {
                self.reclaim(&from, delegated).await;
                return Err(e);
            }
        };
        // Recorded before the broadcast, so a lost answer (or a restart) is reconciled by
        // txID. If the journal cannot take it, nothing is sent.
        let record = PaymentRecord {
            txid: signed.txid(),
            expiration_ms: signed.expiration_ms(),
            customer: from,
            delegations: delegated,
            payment: Some(payment.clone()),
            attempts: previous
                .as_ref()
                .map_or(1, |p| p.attempts.saturating_add(1)),
            spent,
        };
        if let Err(e) = self.persist(&payment.id, Some(&record)).await {
            self.reclaim(&from, record.delegations).await;
            return Err(e);
        }
        self.lock().insert(payment.id.clone(), record);
        match self.api.broadcast(&signed).await {
            Ok(BroadcastOutcome::Accepted) => Ok(submission(&payment.id, signed.txid_hex())),
            Ok(BroadcastOutcome::Rejected { code, .. }) if code == "DUP_TRANSACTION_ERROR" => {
                Ok(submission(&payment.id, signed.txid_hex()))
            }
            Ok(BroadcastOutcome::Rejected { code, message }) => {
                // Definitely not submitted: give the resources back, and forget it (a
                // retry falls back to the failed transfer it replaced).
                let record = match &previous {
                    Some(p) => self.lock().insert(payment.id.clone(), p.clone()),
                    None => self.lock().remove(&payment.id),
                };
                let _ = self.persist(&payment.id, previous.as_ref()).await;
                if let Some(r) = record {
                    self.reclaim(&from, r.delegations).await;
                }
                Err(rejected(format!(
                    "node rejected the transfer: {code}: {message}"
                )))
            }
            Err(e) => Err(RailError::Unknown {
                reason: format!(
                    "broadcast of {} unanswered ({e}); reconcile with status",
                    signed.txid_hex()
                ),
            }),
        }
    }
}

fn submission(payment_id: &str, tx_hash: String) -> Submission {
    Submission {
        payment_id: payment_id.to_string(),
        tx_hash: Some(tx_hash),
    }
}
