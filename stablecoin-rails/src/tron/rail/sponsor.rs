//! The sponsor's side of a send: what it must delegate and whether it can, its own
//! transactions (signed, broadcast and waited for until they are in a block), and the
//! reclaiming of the delegations once the transfer is in a block.

use super::{read_error, tx_error};
use crate::tron::client::{AccountInfo, AccountResources, BroadcastOutcome, TxInfo};
use crate::tron::{Resource, SignedTx, TronAddress, TronRail, UnsignedTx, tx};
use stablecoin_core::ports::{KeyPurpose, RailError};

impl TronRail {
    /// Stake (sun) to delegate per resource for one transfer.
    pub(super) fn delegation_plan(
        &self,
        res: &AccountResources,
    ) -> Result<Vec<(Resource, u64)>, String> {
        let mut plan = Vec::new();
        if self.config.energy_per_transfer > 0 {
            let sun = res
                .sun_for_energy(self.config.energy_per_transfer)
                .ok_or("the node reports no total Energy weight")?;
            plan.push((Resource::Energy, sun));
        }
        if self.config.bandwidth_per_transfer > 0 {
            let sun = res
                .sun_for_bandwidth(self.config.bandwidth_per_transfer)
                .ok_or("the node reports no total Bandwidth weight")?;
            plan.push((Resource::Bandwidth, sun));
        }
        Ok(plan)
    }

    /// Why the sponsor cannot pay for one sponsored send (empty: it can).
    pub(super) fn sponsor_shortfalls(
        &self,
        account: Option<&AccountInfo>,
        res: &AccountResources,
    ) -> Vec<String> {
        let Some(account) = account else {
            return vec![format!(
                "sponsor account {} does not exist on chain: sends disabled",
                self.sponsor
            )];
        };
        let mut out = Vec::new();
        if account.balance_sun < self.config.activation_reserve_sun {
            out.push(format!(
                "sponsor holds {} sun of TRX, below the activation reserve of {} sun: sends disabled",
                account.balance_sun, self.config.activation_reserve_sun
            ));
        }
        match self.delegation_plan(res) {
            Err(e) => out.push(format!("{e}: sends disabled")),
            Ok(plan) => {
                for (resource, sun) in plan {
                    let available = match resource {
                        Resource::Energy => account.delegatable_energy_sun(),
                        Resource::Bandwidth => account.delegatable_bandwidth_sun(),
                    };
                    if available < sun {
                        out.push(format!(
                            "sponsor has {available} sun of delegatable {} stake, {sun} needed per transfer: sends disabled",
                            resource.name()
                        ));
                    }
                }
            }
        }
        out
    }

    pub(super) async fn sponsor_state(
        &self,
    ) -> Result<(Option<AccountInfo>, AccountResources), RailError> {
        let account = self
            .api
            .account(&self.sponsor)
            .await
            .map_err(|e| read_error("getaccount(sponsor)", e))?;
        let res = self
            .api
            .account_resources(&self.sponsor)
            .await
            .map_err(|e| read_error("getaccountresource(sponsor)", e))?;
        Ok((account, res))
    }

    /// Polls until the transaction is in a block.
    async fn wait_included(&self, txid: &[u8; 32]) -> Result<TxInfo, String> {
        let deadline = tokio::time::Instant::now() + self.config.inclusion_timeout;
        loop {
            match self.api.transaction_info(txid).await {
                Ok(Some(info)) => return Ok(info),
                Ok(None) => {}
                Err(e) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(format!("gettransactioninfobyid: {e}"));
                    }
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "transaction {} not in a block after {:?}",
                    hex::encode(txid),
                    self.config.inclusion_timeout
                ));
            }
            tokio::time::sleep(self.config.poll_interval).await;
        }
    }

    pub(super) async fn sign(
        &self,
        purpose: &KeyPurpose,
        owner: &TronAddress,
        unsigned: UnsignedTx,
    ) -> Result<SignedTx, RailError> {
        tx::sign_tx(self.signer.as_ref(), purpose, owner, unsigned)
            .await
            .map_err(tx_error)
    }

    /// Signs with the sponsor key, broadcasts and waits until it executed successfully;
    /// answers its transaction info (what it cost the sponsor).
    pub(super) async fn sponsor_tx(
        &self,
        what: &str,
        unsigned: UnsignedTx,
    ) -> Result<TxInfo, String> {
        let signed = self
            .sign(&KeyPurpose::Sponsor, &self.sponsor, unsigned)
            .await
            .map_err(|e| format!("{what}: {e}"))?;
        match self.api.broadcast(&signed).await {
            Ok(BroadcastOutcome::Accepted) => {}
            Ok(BroadcastOutcome::Rejected { code, .. }) if code == "DUP_TRANSACTION_ERROR" => {}
            Ok(BroadcastOutcome::Rejected { code, message }) => {
                return Err(format!("{what} rejected: {code}: {message}"));
            }
            // Unknown outcome: waiting for the txID settles it either way.
            Err(_) => {}
        }
        let info = self
            .wait_included(&signed.txid())
            .await
            .map_err(|e| format!("{what}: {e}"))?;
        if info.succeeded() {
            Ok(info)
        } else {
            Err(format!("{what} failed: {}", info.failure_reason()))
        }
    }

    /// Broadcasts the undelegations still owed for a payment; keeps those that fail for
    /// the next call.
    pub(super) async fn reclaim(
        &self,
        customer: &TronAddress,
        delegations: Vec<(Resource, u64)>,
    ) -> Vec<(Resource, u64)> {
        let mut left = Vec::new();
        for (resource, sun) in delegations {
            let done = async {
                let header = self.header().await.ok()?;
                let unsigned =
                    tx::build_undelegate_resource(&header, &self.sponsor, customer, resource, sun)
                        .ok()?;
                let signed = self
                    .sign(&KeyPurpose::Sponsor, &self.sponsor, unsigned)
                    .await
                    .ok()?;
                match self.api.broadcast(&signed).await {
                    Ok(BroadcastOutcome::Accepted) => Some(()),
                    Ok(BroadcastOutcome::Rejected { code, .. })
                        if code == "DUP_TRANSACTION_ERROR" =>
                    {
                        Some(())
                    }
                    _ => None,
                }
            }
            .await;
            if done.is_none() {
                left.push((resource, sun));
            }
        }
        left
    }

    pub(super) async fn reclaim_payment(&self, payment_id: &str) {
        let owed = {
            let mut payments = self.lock();
            match payments.get_mut(payment_id) {
                Some(r) if !r.delegations.is_empty() => {
                    Some((r.customer, std::mem::take(&mut r.delegations)))
                }
                _ => None,
            }
        };
        if let Some((customer, delegations)) = owed {
            let left = self.reclaim(&customer, delegations).await;
            let updated = {
                let mut payments = self.lock();
                payments.get_mut(payment_id).map(|r| {
                    r.delegations.extend(left);
                    r.clone()
                })
            };
            // Best effort: a stale entry only makes a restarted rail try to reclaim
            // again, which the node refuses harmlessly.
            if let Some(r) = updated {
                let _ = self.persist(payment_id, Some(&r)).await;
            }
        }
    }
}
