//! [`TronRail`]: the native TRON USDT rail (spec 1.4, 8.4).
//!
//! - Addresses: the [`Signer`]'s secp256k1 key of the purpose, Keccak-256, `0x41`,
//!   Base58Check. Offline; the same purpose always gives the same `T...`.
//! - Receiving and balance reads need nothing on chain: a TRC-20 balance is contract
//!   storage, so a customer with zero TRX (even an account that does not exist yet) can
//!   receive USDT and read it.
//! - Sends are sponsored. For each payment the sponsor account ([`KeyPurpose::Sponsor`]):
//!   1. activates the customer's account if it does not exist, with an
//!      `AccountCreateContract` (the sponsor pays the creation fee; the customer keeps
//!      zero TRX);
//!   2. delegates Energy and Bandwidth (Stake 2.0 `DelegateResourceContract`, no lock)
//!      sized from [`TronConfig::energy_per_transfer`] / [`TronConfig::bandwidth_per_transfer`];
//!
//!   each sponsor transaction is waited for until it is in a block, so the customer's
//!   transfer can never reach a block producer before its resources. Then the customer's
//!   key signs the TRC-20 `transfer` (fee limit [`TronConfig::fee_limit_sun`]) and it is
//!   broadcast. Once the transfer is in a block (success or failure) `status` reclaims the
//!   delegations (`UnDelegateResourceContract`). No TRX is charged to the customer and
//!   no fee leg is accepted (spec 8.4: no TRON business fee).
//! - Readiness: `DEGRADED` when the node or the read checks (sponsor account read, USDT
//!   `balanceOf`) fail; `INBOUND_READY` when reads pass but the sponsor lacks the TRX or
//!   the delegatable stake for one sponsored send (then `submit` answers `Unavailable`:
//!   the server's 503); `READY` when sponsored sends may be called. Readiness never
//!   certifies the deposit scanner.
//! - A payment's deadline (`RailPayment::valid_until`) caps the transfer's expiration
//!   (never later than the deadline, never later than [`TronConfig::expiration_ms`] after
//!   the head block): no node includes it after that, and a payment already past its
//!   deadline at the head block is refused before any sponsorship is spent.
//! - `status(payment_id)` reads the transaction by its txID. The payment id -> txID
//!   record (with the expiry and the delegations still to reclaim) is written to the
//!   [`RailJournal`] before the broadcast (the txID depends on the reference block, so it
//!   cannot be derived from the payment id): with a durable journal
//!   ([`TronRail::with_journal`]) a restarted rail reconciles by txID. Hosts without one
//!   can re-seed a record with [`TronRail::restore_submission`].
//! - `scan` reads blocks with `/wallet/gettransactioninfobyblocknum` and returns the
//!   USDT `Transfer` events of successful transactions; the cursor is the next block
//!   number and only passes blocks at the confirmation depth (19 by default).
//!
//! - A transfer that runs out of Energy (`OUT_OF_ENERGY` in its receipt: the Energy lent
//!   for it was consumed by another of the customer's transactions first, or it cost
//!   more than was lent) moved nothing. Once it is at the confirmation depth (so it can
//!   never be replaced by a version of it that pays), `status` re-sponsors and sends it
//!   again under the same payment id, up to [`TronConfig::out_of_energy_retries`] times,
//!   then answers `Failed` (the engine returns the money) with the reason (`energy`).
//!
//! Split by concern: `config` (settings), `record` (what the rail remembers of each
//! payment, written through to its journal), `sponsor` (the sponsor's resources and
//! transactions, and the reclaiming of delegations) and `send` (a customer's sponsored
//! transfer); this file holds the rail, its constructors and its [`Rail`]
//! implementation.

use super::address::TronAddress;
use super::client::{self, ApiError, TronApi};
use super::tx::{self, TxHeader};
use async_trait::async_trait;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    ChainAddress, Curve, Inbound, KeyPurpose, MemoryJournal, Rail, RailError, RailId, RailJournal,
    RailPayment, Readiness, ReadinessStatus, ScanBatch, Signer, SignerError, SponsorCost,
    Submission, SubmissionStatus,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

mod config;
mod energy;
mod record;
mod send;
mod sponsor;

pub use config::{MAINNET_USDT, TronConfig};
use record::{PaymentRecord, SponsorSpend};

/// The TRON rail. See the module documentation.
pub struct TronRail {
    api: Arc<dyn TronApi>,
    signer: Arc<dyn Signer>,
    config: TronConfig,
    sponsor: TronAddress,
    /// Read-through cache of `journal`.
    payments: Mutex<HashMap<String, PaymentRecord>>,
    journal: Arc<dyn RailJournal>,
    /// One submit at a time: the sponsor's transactions are sequential.
    submit_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for TronRail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TronRail")
            .field("config", &self.config)
            .field("sponsor", &self.sponsor)
            .finish_non_exhaustive()
    }
}

fn unavailable(reason: impl Into<String>) -> RailError {
    RailError::Unavailable {
        reason: reason.into(),
    }
}

fn rejected(reason: impl Into<String>) -> RailError {
    RailError::Rejected {
        reason: reason.into(),
    }
}

fn read_error(what: &str, e: ApiError) -> RailError {
    unavailable(format!("{what}: {e}"))
}

fn signer_error(e: SignerError) -> RailError {
    match e {
        SignerError::Unavailable(r) => unavailable(format!("signer: {r}")),
        other => rejected(format!("signer: {other}")),
    }
}

fn unsupported_token(token: Token) -> RailError {
    RailError::Unsupported {
        what: format!(
            "{token} on TRON (this rail moves USDT TRC-20 and no {token} contract is configured)"
        ),
    }
}

fn tx_error(e: tx::TxError) -> RailError {
    match e {
        tx::TxError::Signer(s) => signer_error(s),
        other => rejected(format!("{}: {other}", other.code())),
    }
}

/// What a landed, sponsored transfer cost the service: the TRX its sponsor's
/// transactions for the payment burnt (`spent`: the activation's account-creation fee
/// and any Bandwidth paid by burning, for every attempt), the Energy the transfer
/// consumed (`receipt.energy_usage_total`: lent stake, or burnt) plus what the payment's
/// earlier transfers consumed before they ran out of Energy, and the Bandwidth bytes of
/// those transfers and of the sponsor's transactions taken from stake or the free
/// allowance (`receipt.net_usage`). The same sum is the cost of a payment that ends
/// `Failed` in a block (`transfer` is then its last, failed transfer). The transfer's own `fee` (`energy_fee + net_fee`) is
/// not the service's: the customer signs it and any TRX it burns is the customer's
/// (a sponsored customer holds none, so it is zero unless the lent resources fell
/// short and the customer had TRX of its own). The undelegations sent after the
/// transfer lands are not counted (broadcast, not awaited; with the staked Bandwidth a
/// sponsor needs to lend Bandwidth they burn nothing).
fn cost_of(transfer: &client::TxInfo, spent: SponsorSpend) -> SponsorCost {
    SponsorCost {
        native: u128::from(spent.fee_sun),
        energy: transfer.energy_usage_total.saturating_add(spent.energy),
        bandwidth: transfer.net_usage.saturating_add(spent.net_usage),
    }
}

/// What a payment whose transfer never reached a block cost the service: what the
/// sponsor's transactions for it burnt and consumed (and its earlier transfers that ran
/// out of Energy). `None` when nothing is known to have been spent (nothing recorded, or
/// a re-seeded record).
fn cost_unlanded(spent: SponsorSpend) -> Option<SponsorCost> {
    (spent != SponsorSpend::default()).then(|| SponsorCost {
        native: u128::from(spent.fee_sun),
        energy: spent.energy,
        bandwidth: spent.net_usage,
    })
}

/// Parses a `T...` (or `41...` hex) address into the rail's typed error.
pub fn parse_address(address: &ChainAddress) -> Result<TronAddress, RailError> {
    TronAddress::parse(&address.0).map_err(|e| RailError::InvalidAddress {
        address: address.0.chars().take(64).collect(),
        reason: format!("{}: {e}", e.code()),
    })
}

impl TronRail {
    /// Builds the rail; derives the sponsor address from the signer.
    pub async fn new(
        api: Arc<dyn TronApi>,
        signer: Arc<dyn Signer>,
        config: TronConfig,
    ) -> Result<Self, RailError> {
        let sponsor = derive(signer.as_ref(), &KeyPurpose::Sponsor).await?;
        Ok(TronRail {
            api,
            signer,
            config,
            sponsor,
            payments: Mutex::new(HashMap::new()),
            journal: Arc::new(MemoryJournal::new()),
            submit_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// Keeps the payment records in `journal` (a deployment passes a durable one, such
    /// as `StoreJournal` over its database) instead of in memory.
    pub fn with_journal(mut self, journal: Arc<dyn RailJournal>) -> Self {
        self.journal = journal;
        self
    }

    /// The settings the rail was built with.
    pub fn config(&self) -> &TronConfig {
        &self.config
    }

    /// The sponsor account that activates accounts and lends Energy/Bandwidth.
    pub fn sponsor_address(&self) -> TronAddress {
        self.sponsor
    }

    async fn header(&self) -> Result<TxHeader, RailError> {
        self.header_until(None).await
    }

    /// A header on the head block whose expiration is at most `deadline` (Unix ms): a
    /// payment's `valid_until` maps to the transfer's expiration, which every node
    /// enforces. `Rejected` when the head block is already at or past the deadline
    /// (nothing may be sent).
    async fn header_until(
        &self,
        deadline: Option<stablecoin_core::domain::time::Timestamp>,
    ) -> Result<TxHeader, RailError> {
        let head = self
            .api
            .now_block()
            .await
            .map_err(|e| read_error("getnowblock", e))?;
        let mut validity = self.config.expiration_ms;
        if let Some(d) = deadline {
            let left = d.millis().saturating_sub(head.timestamp_ms);
            if left <= 0 {
                return Err(rejected(
                    "the payment's deadline (valid_until) has passed at the head block",
                ));
            }
            validity = validity.min(left);
        }
        Ok(TxHeader::from_block_id(
            &head.id,
            head.timestamp_ms,
            validity,
        ))
    }
}

async fn derive(signer: &dyn Signer, purpose: &KeyPurpose) -> Result<TronAddress, RailError> {
    let key = signer
        .public_key(purpose, Curve::Secp256k1)
        .await
        .map_err(signer_error)?;
    TronAddress::from_public_key(&key.bytes)
        .map_err(|e| rejected(format!("signer public key: {e}")))
}

fn word_address(topic: &[u8; 32]) -> TronAddress {
    let mut evm = [0u8; 20];
    evm.copy_from_slice(&topic[12..]);
    TronAddress::from_evm_bytes(&evm)
}

#[async_trait]
impl Rail for TronRail {
    fn id(&self) -> RailId {
        RailId::Tron
    }

    /// USDT only (spec 1.1: TRON is a native USDT rail). A configured `usdc_contract` is
    /// read and sent back (deposits made by mistake), never carried for customers.
    fn tokens(&self) -> Vec<Token> {
        vec![Token::Usdt]
    }

    fn rpc_endpoints(&self) -> Vec<stablecoin_core::ports::RpcEndpointHealth> {
        self.api.endpoints()
    }

    async fn readiness(&self) -> Readiness {
        let mut degraded = Vec::new();
        if let Err(e) = self.api.now_block().await {
            degraded.push(format!("read-side RPC failed: getnowblock: {e}"));
        }
        let state = if degraded.is_empty() {
            match self.sponsor_state().await {
                Ok(s) => Some(s),
                Err(e) => {
                    degraded.push(format!("reader-account check failed: {e}"));
                    None
                }
            }
        } else {
            None
        };
        if degraded.is_empty()
            && let Err(e) = self
                .api
                .trc20_balance(&self.config.usdt_contract, &self.sponsor, &self.sponsor)
                .await
        {
            degraded.push(format!(
                "USDT contract {} read failed: {e}",
                self.config.usdt_contract
            ));
        }
        if !degraded.is_empty() {
            return Readiness {
                status: ReadinessStatus::Degraded,
                reasons: degraded,
            };
        }
        let Some((account, resources)) = state else {
            unreachable!("state is read whenever nothing is degraded")
        };
        let reasons = self.sponsor_shortfalls(account.as_ref(), &resources);
        Readiness {
            status: if reasons.is_empty() {
                ReadinessStatus::Ready
            } else {
                ReadinessStatus::InboundReady
            },
            reasons,
        }
    }

    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        Ok(ChainAddress(
            derive(self.signer.as_ref(), purpose).await?.to_base58(),
        ))
    }

    /// Nothing to prepare: receiving TRC-20 needs no account; activation happens on the
    /// first sponsored send.
    async fn prepare_wallet(&self, _purpose: &KeyPurpose) -> Result<(), RailError> {
        Ok(())
    }

    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError> {
        let address = parse_address(address)?;
        let contract = self
            .config
            .contract_of(token)
            .ok_or_else(|| unsupported_token(token))?;
        let units = self
            .api
            .trc20_balance(&contract, &address, &self.sponsor)
            .await
            .map_err(|e| read_error("balanceOf", e))?;
        u64::try_from(units)
            .map(Micros)
            .map_err(|_| unavailable(format!("balance {units} exceeds the micro-unit range")))
    }

    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        let _guard = self.submit_lock.lock().await;
        self.submit_locked(payment).await
    }

    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        let Some(record) = self.record(payment_id).await? else {
            return Ok(SubmissionStatus::NotFound);
        };
        let tx_hash = hex::encode(record.txid);
        let info = self
            .api
            .transaction_info(&record.txid)
            .await
            .map_err(|e| read_error("gettransactioninfobyid", e))?;
        let head = self
            .api
            .now_block()
            .await
            .map_err(|e| read_error("getnowblock", e))?;
        let Some(info) = info else {
            if head.timestamp_ms > record.expiration_ms {
                // Past its expiration and in no block: no node will ever include it.
                self.reclaim_payment(payment_id).await;
                return Ok(SubmissionStatus::Failed {
                    reason: "TRANSACTION_EXPIRED: expired before it was included in a block".into(),
                    tx_hash: Some(tx_hash),
                    cost: cost_unlanded(record.spent),
                });
            }
            return Ok(SubmissionStatus::Pending {
                tx_hash: Some(tx_hash),
            });
        };
        // In a block, whatever its result: the resources can go back.
        self.reclaim_payment(payment_id).await;
        let confirmations = (head.number + 1).saturating_sub(info.block_number);
        if confirmations < self.config.confirmations {
            return Ok(SubmissionStatus::Pending {
                tx_hash: Some(tx_hash),
            });
        }
        if info.succeeded() {
            Ok(SubmissionStatus::Confirmed {
                tx_hash,
                block: info.block_number,
                created_recipient_account: false,
                cost: Some(cost_of(&info, record.spent)),
            })
        } else if info.receipt_result.as_deref() == Some("OUT_OF_ENERGY") {
            self.after_out_of_energy(payment_id, &record, &info).await
        } else {
            Ok(SubmissionStatus::Failed {
                reason: info.failure_reason(),
                tx_hash: Some(tx_hash),
                cost: Some(cost_of(&info, record.spent)),
            })
        }
    }

    /// `cursor` is the next block number to read (`""` = [`TronConfig::scan_start_block`]).
    /// Deposits below the confirmation depth are returned with `confirmed: false` and
    /// come back in later scans (dedupe by `(tx_hash, index)`); the returned cursor
    /// passes only blocks at the depth.
    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        let start = crate::cursor::block_cursor(cursor, self.config.scan_start_block)?;
        let watched = watched
            .iter()
            .map(parse_address)
            .collect::<Result<BTreeSet<_>, _>>()?;
        let head = self
            .api
            .now_block()
            .await
            .map_err(|e| read_error("getnowblock", e))?
            .number;
        let topic = tx::transfer_event_topic();
        let tokens: Vec<([u8; 20], Token)> = [Token::Usdt, Token::Usdc]
            .into_iter()
            .filter_map(|t| Some((self.config.contract_of(t)?.evm_bytes(), t)))
            .collect();
        let mut inbound = Vec::new();
        let mut next = start;
        let mut passing = true;
        let last = head.min(start.saturating_add(self.config.max_scan_blocks.max(1) - 1));
        let mut n = start;
        while n <= last {
            let infos = self
                .api
                .block_transaction_infos(n)
                .await
                .map_err(|e| read_error("gettransactioninfobyblocknum", e))?;
            let confirmations = head + 1 - n;
            let confirmed = confirmations >= self.config.confirmations;
            for info in infos.iter().filter(|i| i.succeeded()) {
                for (index, log) in info.logs.iter().enumerate() {
                    let Some(&(_, token)) = tokens.iter().find(|(a, _)| *a == log.address) else {
                        continue;
                    };
                    if log.topics.len() != 3 || log.topics[0] != topic {
                        continue;
                    }
                    let to = word_address(&log.topics[2]);
                    if !watched.is_empty() && !watched.contains(&to) {
                        continue;
                    }
                    let Ok(amount) = tx::parse_uint256(&log.data) else {
                        continue;
                    };
                    let Ok(amount) = u64::try_from(amount) else {
                        continue;
                    };
                    inbound.push(Inbound {
                        tx_hash: hex::encode(info.txid),
                        index: index as u32,
                        from: ChainAddress(word_address(&log.topics[1]).to_base58()),
                        to: ChainAddress(to.to_base58()),
                        token,
                        amount: Micros(amount),
                        block: n,
                        confirmations,
                        confirmed,
                    });
                }
            }
            passing &= confirmed;
            if passing {
                next = n + 1;
            }
            n += 1;
            if inbound.len() >= limit.max(1) {
                break;
            }
        }
        Ok(ScanBatch {
            inbound,
            cursor: next.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    fn object_safe(rail: TronRail, api: super::super::client::HttpTronApi) {
        let _: Arc<dyn Rail> = Arc::new(rail);
        let _: Arc<dyn TronApi> = Arc::new(api);
    }

    #[test]
    fn mainnet_config_defaults() {
        let c = TronConfig::mainnet();
        assert_eq!(c.usdt_contract.to_base58(), MAINNET_USDT);
        assert_eq!(c.confirmations, 19);
        assert_eq!(c.fee_limit_sun, 100_000_000);
    }

    #[test]
    fn bad_addresses_map_to_invalid_address() {
        let err =
            parse_address(&ChainAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u".into())).unwrap_err();
        assert_eq!(err.code(), "INVALID_ADDRESS");
        assert!(err.to_string().contains("TRON_ADDRESS_BAD_CHECKSUM"));
    }
}
