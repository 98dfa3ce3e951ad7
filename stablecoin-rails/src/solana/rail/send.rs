//! Sponsored sends: one transaction per payment (recipient ATAs created when missing,
//! SPL `TransferChecked` per leg, the payment id in a Memo v2 instruction), journaled
//! before its broadcast and idempotent by payment id; after finality, which token
//! accounts it really created.

use super::reconcile::Reconciled;
use super::{
    addr, base_units_to_micros, codec_err, micros_to_base_units, read_err, rejected, unavailable,
};
use crate::solana::codec::TransferLeg;
use crate::solana::{
    Commitment, SendRecord, SendState, SolanaRail, SolanaSend, SolanaSendInfo, SolanaSendResult,
    codec, fees,
};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use solana_signature::Signature;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::ports::{ChainAddress, LegRole, RailError, RailPayment, Submission};
use std::collections::BTreeSet;
use std::str::FromStr;
use std::sync::Arc;

/// The preflight error of a blockhash the node does not know (yet).
const BLOCKHASH_NOT_FOUND: &str = "BlockhashNotFound";

impl SolanaRail {
    /// Sends by asset name or mint ([`token_for_asset`](Self::token_for_asset) refuses
    /// native SOL and unknown mints), then as [`submit_with_info`](Self::submit_with_info).
    pub async fn send(&self, request: &SolanaSend) -> Result<SolanaSendResult, RailError> {
        let token = self.token_for_asset(&request.asset)?;
        let from_address = addr(&self.key_of(&request.from).await?);
        let payment = RailPayment {
            id: request.id.clone(),
            from: request.from.clone(),
            from_address,
            token,
            legs: request.legs.clone(),
            valid_until: None,
        };
        self.submit_with_info(&payment).await
    }

    /// What the rail recorded for a payment id: signature, fee payer,
    /// `created_recipient_ata`, rent paid. `None` for an unknown id.
    pub async fn send_info(&self, payment_id: &str) -> Result<Option<SolanaSendInfo>, RailError> {
        Ok(self.send_record(payment_id).await?.map(|r| r.info))
    }

    pub(super) fn payment_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.payment_locks.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, l| Arc::strong_count(l) > 1);
        map.entry(id.to_string()).or_default().clone()
    }

    fn digest(payment: &RailPayment) -> String {
        let bytes = serde_json::to_vec(payment).unwrap_or_default();
        let d = Sha256::digest(&bytes);
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether sponsored sends may be called now (config switch, monitoring, funded
    /// fee payer): the cheap gate `submit` applies; `readiness` reports the same.
    async fn send_gate(&self) -> Result<(), RailError> {
        if !self.config.sends_enabled {
            return Err(unavailable("solana sends are disabled by configuration"));
        }
        if !self.config.scan_enabled {
            return Err(unavailable(
                "solana receipt monitoring is disabled (SOLANA_SCAN_ENABLED): sends unavailable",
            ));
        }
        let fee_payer = self.fee_payer().await?;
        let lamports = self
            .rpc
            .get_balance(&fee_payer, Commitment::Confirmed)
            .await
            .map_err(read_err)?;
        if lamports < self.config.min_fee_payer_lamports_for_sends {
            return Err(unavailable(format!(
                "fee payer {fee_payer} holds {lamports} lamports, below the {} needed for sends",
                self.config.min_fee_payer_lamports_for_sends
            )));
        }
        Ok(())
    }

    /// [`Rail::submit`](stablecoin_core::ports::Rail::submit) returning the send details
    /// too (`created_recipient_ata`).
    pub async fn submit_with_info(
        &self,
        payment: &RailPayment,
    ) -> Result<SolanaSendResult, RailError> {
        if payment.id.is_empty() {
            return Err(rejected("payment id is empty"));
        }
        let lock = self.payment_lock(&payment.id);
        let _guard = lock.lock().await;
        let digest = Self::digest(payment);
        let mut superseded = Vec::new();
        let mut attempts = 0;
        // The price of an attempt that expired unseen: the next one is priced above it.
        let mut expired_price = None;
        if let Some(mut rec) = self.send_record(&payment.id).await? {
            if rec.request_digest != digest {
                return Err(rejected(format!(
                    "payment id {} was already used for a different payment",
                    payment.id
                )));
            }
            superseded = rec.superseded.clone();
            attempts = rec.info.attempts;
            let sig = Signature::from_str(&rec.info.signature)
                .map_err(|_| unavailable("journal holds an unreadable signature"))?;
            match &rec.state {
                SendState::Finalized { .. } => return Ok(Self::result(&rec)),
                SendState::Sent => match self
                    .reconcile(&sig, rec.info.last_valid_block_height)
                    .await?
                {
                    Reconciled::Landed(_) => return Ok(Self::result(&rec)),
                    Reconciled::InFlight => {
                        let wire = base64::engine::general_purpose::STANDARD
                            .decode(&rec.wire_base64)
                            .map_err(|_| unavailable("journal holds unreadable wire bytes"))?;
                        // Same signed bytes: harmless if it already arrived.
                        let _ = self.rpc.send_transaction(&wire).await;
                        return Ok(Self::result(&rec));
                    }
                    Reconciled::Expired => {
                        rec.state = SendState::Expired;
                        self.journal_save(&rec).await?;
                        superseded.push(rec.info.signature.clone());
                        expired_price = Some(rec.info.compute_unit_price_micro_lamports);
                    }
                },
                SendState::Expired => {
                    superseded.push(rec.info.signature.clone());
                    expired_price = Some(rec.info.compute_unit_price_micro_lamports);
                }
                // Never reached the network: building it again cannot pay twice.
                SendState::Rejected { .. } => {}
            }
        }
        self.send_gate().await?;
        self.build_and_send(payment, digest, superseded, attempts + 1, expired_price)
            .await
    }

    fn result(rec: &SendRecord) -> SolanaSendResult {
        SolanaSendResult {
            submission: Submission {
                payment_id: rec.payment_id.clone(),
                tx_hash: Some(rec.info.signature.clone()),
            },
            info: rec.info.clone(),
        }
    }

    async fn build_and_send(
        &self,
        payment: &RailPayment,
        digest: String,
        superseded: Vec<String>,
        attempts: u32,
        expired_price: Option<u64>,
    ) -> Result<SolanaSendResult, RailError> {
        if payment.legs.is_empty() {
            return Err(rejected("payment has no legs"));
        }
        // The payment id rides in a memo: distinct payments are distinct transactions
        // even when sender, recipient, amount, mint and blockhash are all alike (the
        // same bytes would be one signature, landing once for two ledger entries).
        let memo = codec::memo(&payment.id).map_err(|e| {
            rejected(format!(
                "payment id cannot be carried in the transaction's memo: {e}"
            ))
        })?;
        let source = self.key_of(&payment.from).await?;
        let claimed = codec::parse_address(&payment.from_address.0).map_err(codec_err)?;
        if claimed != source {
            return Err(rejected(format!(
                "from_address {} is not the address of key {}",
                payment.from_address, payment.from
            )));
        }
        let fee_payer = self.fee_payer().await?;
        if source == fee_payer {
            return Err(rejected("the fee payer key does not send tokens"));
        }
        let mint = self.config.mint(payment.token);
        let tp = self.config.token_program;
        let decimals = self.config.decimals;
        let source_ata = codec::associated_token_address(&source, &mint, &tp);

        // Legs: amounts in base units, recipients as wallets, ATAs created when missing.
        let mut total: u64 = 0;
        let mut legs = Vec::with_capacity(payment.legs.len());
        let mut created = Vec::new();
        let mut created_recipient_ata = false;
        let mut seen_missing = BTreeSet::new();
        let mut recipient_accounts = Vec::new();
        for leg in &payment.legs {
            if leg.amount.is_zero() {
                return Err(rejected("every leg amount must be positive"));
            }
            let amount = micros_to_base_units(leg.amount, decimals)?;
            total = total
                .checked_add(amount)
                .ok_or_else(|| rejected("payment total overflows"))?;
            let recipient = codec::parse_address(&leg.to.0).map_err(codec_err)?;
            codec::check_wallet_address(&recipient).map_err(codec_err)?;
            let ata = codec::associated_token_address(&recipient, &mint, &tp);
            let exists = match self
                .rpc
                .get_account_info(&ata, Commitment::Confirmed)
                .await
                .map_err(read_err)?
            {
                None => false,
                Some(acc) => {
                    let st = codec::parse_token_account(&acc.data).map_err(|e| {
                        rejected(format!("recipient account {ata} is unusable: {e}"))
                    })?;
                    if st.frozen {
                        return Err(rejected(format!("recipient account {ata} is frozen")));
                    }
                    true
                }
            };
            if leg.role == LegRole::Recipient {
                recipient_accounts.push(addr(&ata));
            }
            // Create each missing account once even if two legs pay it.
            let create = !exists && seen_missing.insert(ata);
            if create {
                created.push(addr(&ata));
                if leg.role == LegRole::Recipient {
                    created_recipient_ata = true;
                }
            }
            legs.push(TransferLeg {
                recipient,
                amount,
                create_recipient_ata: create,
            });
        }

        // The sender must hold the tokens: refuse before signing anything.
        let available = self
            .rpc
            .get_token_account_balance(&source_ata, Commitment::Confirmed)
            .await
            .map_err(read_err)?
            .unwrap_or(0);
        if available < total {
            return Err(rejected(format!(
                "insufficient {} balance: {} available, {} needed",
                payment.token,
                base_units_to_micros(available, decimals).unwrap_or(Micros::ZERO),
                payment.total().unwrap_or(Micros::ZERO)
            )));
        }
        let rent_each = if created.is_empty() {
            0
        } else {
            self.rpc
                .get_minimum_balance_for_rent_exemption(codec::TOKEN_ACCOUNT_LEN)
                .await
                .map_err(read_err)?
        };
        let transfer =
            codec::transfer_instructions(&fee_payer, &source, &mint, &tp, decimals, &legs)
                .map_err(codec_err)?;
        // The compute budget goes first: a limit sized to the transfers and accounts
        // created, a price from what recently landed writing the same accounts.
        let limit =
            self.config
                .fees
                .compute_unit_limit(legs.len(), created.len(), payment.id.len());
        let mut writable = vec![fee_payer, source_ata];
        for leg in &legs {
            let ata = codec::associated_token_address(&leg.recipient, &mint, &tp);
            if !writable.contains(&ata) {
                writable.push(ata);
            }
        }
        let recent = self
            .rpc
            .get_recent_prioritization_fees(&writable)
            .await
            .ok();
        let price = self.config.fees.price(recent.as_deref(), expired_price);
        let mut ixs = fees::compute_budget_instructions(limit, price).to_vec();
        ixs.extend(transfer);
        // Last, so instruction indices in errors keep naming the transfers.
        ixs.push(memo);
        let keys = [
            (fee_payer, self.config.fee_payer.clone()),
            (source, payment.from.clone()),
        ];
        let mut attempts = attempts;
        loop {
            let signed = self.build_and_sign(&ixs, &fee_payer, &keys).await?;
            let info = SolanaSendInfo {
                payment_id: payment.id.clone(),
                signature: signed.signature.to_string(),
                fee_payer: addr(&fee_payer),
                source_token_account: addr(&source_ata),
                created_recipient_ata,
                rent_paid_lamports: rent_each.saturating_mul(created.len() as u64),
                created_token_accounts: created.clone(),
                verified_on_chain: false,
                last_valid_block_height: signed.last_valid_block_height,
                attempts,
                compute_unit_limit: limit,
                compute_unit_price_micro_lamports: price,
                fee_payer_spent_lamports: None,
            };
            let mut record = SendRecord {
                payment_id: payment.id.clone(),
                request_digest: digest.clone(),
                wire_base64: base64::engine::general_purpose::STANDARD.encode(&signed.wire),
                state: SendState::Sent,
                superseded: superseded.clone(),
                recipient_token_accounts: recipient_accounts.clone(),
                info,
            };
            // Journaled before the broadcast: whatever happens next is reconciled by
            // this signature.
            self.journal_save(&record).await?;
            match self.broadcast(&signed.wire, &signed.signature).await {
                Ok(()) => return Ok(Self::result(&record)),
                Err(RailError::Rejected { reason }) => {
                    record.state = SendState::Rejected {
                        reason: reason.clone(),
                    };
                    self.journal_save(&record).await?;
                    // A node behind the cluster does not know the blockhash yet; the
                    // refused transaction was never forwarded, so a fresh one is safe.
                    if reason.contains(BLOCKHASH_NOT_FOUND) && attempts < 3 {
                        attempts += 1;
                        continue;
                    }
                    return Err(RailError::Rejected { reason });
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// After finalization: reads the transaction once, to check which created accounts
    /// really were created by it (zero lamports before, rent after) and what it cost the
    /// fee payer, and records both. A transaction that failed on chain created none (its
    /// instructions were rolled back) and cost its fee. Does nothing when both are known
    /// already; a failed read leaves them for the next call.
    pub(super) async fn read_landed(&self, rec: &mut SendRecord, sig: &Signature) {
        if rec.info.created_token_accounts.is_empty() {
            rec.info.verified_on_chain = true;
        }
        if rec.info.verified_on_chain && rec.info.fee_payer_spent_lamports.is_some() {
            return;
        }
        let Ok(Some(tx)) = self.rpc.get_transaction(sig, Commitment::Finalized).await else {
            return;
        };
        rec.info.fee_payer_spent_lamports = fee_payer_spent(&tx, &rec.info.fee_payer);
        if rec.info.verified_on_chain {
            return;
        }
        let mut really = Vec::new();
        let mut rent = 0u64;
        for a in &rec.info.created_token_accounts {
            let Ok(key) = codec::parse_address(&a.0) else {
                continue;
            };
            if let Some(i) = tx.account_keys.iter().position(|k| *k == key) {
                let pre = tx.pre_balances.get(i).copied().unwrap_or(0);
                let post = tx.post_balances.get(i).copied().unwrap_or(0);
                if pre == 0 && post > 0 {
                    really.push(a.clone());
                    rent = rent.saturating_add(post);
                }
            }
        }
        rec.info.created_recipient_ata = really
            .iter()
            .any(|a| rec.recipient_token_accounts.contains(a));
        rec.info.created_token_accounts = really;
        rec.info.rent_paid_lamports = rent;
        rec.info.verified_on_chain = true;
    }
}

/// What the fee payer lost to a landed transaction: its `meta.preBalances` minus its
/// `meta.postBalances`. Why the balance difference rather than `meta.fee` plus the
/// rent-exempt minimum: it is the money that actually left the service's account, fee
/// (signatures and priority) and the rent of every token account it created (recipient
/// and fee legs) together, whatever the instructions did. `None` when the fee payer is
/// not among the transaction's accounts (not this rail's transaction); a gain (which no
/// transaction of this rail makes) reads as zero.
fn fee_payer_spent(
    tx: &crate::solana::rpc::TransactionDetails,
    fee_payer: &ChainAddress,
) -> Option<u64> {
    let key = codec::parse_address(&fee_payer.0).ok()?;
    let i = tx.account_keys.iter().position(|k| *k == key)?;
    let pre = tx.pre_balances.get(i)?;
    let post = tx.post_balances.get(i)?;
    Some(pre.saturating_sub(*post))
}
