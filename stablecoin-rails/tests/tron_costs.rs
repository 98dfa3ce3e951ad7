//! What a confirmed, sponsored TRON transfer cost the service
//! (`SubmissionStatus::Confirmed::cost`, metered by sponsorship budgets), against the local
//! TRON node (`stablecoin-tron-node`) over HTTP: `native` is exactly the TRX the sponsor
//! account lost to send it (activation fee, Bandwidth burnt), `energy` the transfer's
//! `energy_usage_total` and `bandwidth` the bytes the transfer and the sponsor's
//! transactions took from stake or the free allowance, as the node reports them. The
//! first flow runs on the native ledger and on the token's EVM bytecode under Anvil
//! (skipped without an anvil binary unless `TRON_REQUIRE_ANVIL` is set).
#![cfg(feature = "tron-test")]

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailPayment, SponsorCost, SubmissionStatus,
};
use stablecoin_rails::tron::client::{HttpTronApi, TronApi};
use stablecoin_rails::tron::{TronAddress, TronConfig, TronRail};
use stablecoin_tron_node::{self as tron_node, NodeConfig, TokenBackend, TronNode};
use std::sync::Arc;
use std::time::Duration;

const TRX: u64 = 1_000_000;
const ENERGY: i32 = 1;
const BANDWIDTH: i32 = 0;

struct Env {
    node: TronNode,
    rail: TronRail,
    api: Arc<HttpTronApi>,
    sponsor: [u8; 21],
}

/// A node, the rail over it, and a sponsor with 1,000 TRX and an Energy stake; with
/// `bandwidth_stake` a Bandwidth stake too (the rail then lends Bandwidth), else none
/// (the rail lends none, and the sponsor's own transactions use its free allowance, then
/// burn TRX).
async fn env(backend: TokenBackend, bandwidth_stake: bool) -> Env {
    let node = TronNode::start(NodeConfig {
        backend,
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let signer = Arc::new(LocalSigner::from_seed([47; 32]));
    let api = Arc::new(HttpTronApi::new(node.url(), Duration::from_secs(5)).unwrap());
    let mut config = TronConfig::new(usdt);
    config.poll_interval = Duration::from_millis(5);
    config.inclusion_timeout = Duration::from_secs(3);
    if !bandwidth_stake {
        config.bandwidth_per_transfer = 0;
    }
    let rail = TronRail::new(api.clone(), signer, config).await.unwrap();
    let sponsor = *rail.sponsor_address().as_bytes();
    node.create_account(&sponsor, 1_000 * TRX).await;
    node.freeze(&sponsor, ENERGY, 100_000 * TRX).await;
    if bandwidth_stake {
        node.freeze(&sponsor, BANDWIDTH, 10_000 * TRX).await;
    }
    Env {
        node,
        rail,
        api,
        sponsor,
    }
}

impl Env {
    async fn address(&self, purpose: &KeyPurpose) -> TronAddress {
        TronAddress::parse(&self.rail.address_for(purpose).await.unwrap().0).unwrap()
    }

    /// The sponsor's TRX and the Bandwidth bytes it has used (stake and free).
    async fn sponsor_state(&self) -> (u64, u64) {
        let a = self.node.account(&self.sponsor).await.unwrap();
        (a.balance, a.net_usage + a.free_net_usage)
    }

    /// Sends 1 USDT from `from` to `to` under `id`, confirms it, and answers its cost,
    /// what the sponsor lost in TRX and in Bandwidth bytes while it was sent, and the
    /// transfer's txID.
    async fn send(
        &self,
        id: &str,
        from: &KeyPurpose,
        to: &TronAddress,
    ) -> (SponsorCost, u64, u64, String) {
        let from_addr = self.address(from).await;
        let payment = RailPayment {
            id: id.into(),
            from: from.clone(),
            from_address: ChainAddress(from_addr.to_base58()),
            token: Token::Usdt,
            legs: vec![PaymentLeg {
                to: ChainAddress(to.to_base58()),
                amount: Micros(1_000_000),
                role: LegRole::Recipient,
            }],
            valid_until: None,
        };
        let (trx_before, bytes_before) = self.sponsor_state().await;
        let sub = self.rail.submit(&payment).await.unwrap();
        // Measured before any status call: those send the undelegations, which are not
        // part of the cost.
        let (trx_after, bytes_after) = self.sponsor_state().await;
        self.node.mine(19).await;
        let cost = match self.rail.status(id).await.unwrap() {
            SubmissionStatus::Confirmed { cost, .. } => cost.expect("a confirmed cost"),
            other => panic!("expected Confirmed, got {other:?}"),
        };
        (
            cost,
            trx_before - trx_after,
            bytes_after - bytes_before,
            sub.tx_hash.unwrap(),
        )
    }

    /// The node's `gettransactioninfobyid` of a transfer.
    async fn info(&self, txid: &str) -> stablecoin_rails::tron::client::TxInfo {
        let id: [u8; 32] = hex::decode(txid).unwrap().try_into().unwrap();
        self.api.transaction_info(&id).await.unwrap().unwrap()
    }
}

async fn activation_then_plain_send(backend: TokenBackend) {
    let e = env(backend, true).await;
    let p = KeyPurpose::Wallet("wal_cost".into());
    let customer = e.address(&p).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_cost_to".into())).await;
    e.node.mint_usdt(customer.as_bytes(), 10_000_000).await;

    // First send: the sponsor activates the customer's account (1 TRX) and lends it
    // Energy and Bandwidth, with its staked Bandwidth (no TRX burnt for it).
    let (cost, trx_lost, bytes_used, txid) = e.send("op-cost-1", &p, &recipient).await;
    assert_eq!(trx_lost, TRX, "the activation fee");
    assert_eq!(cost.native, u128::from(trx_lost));
    let info = e.info(&txid).await;
    assert!(info.energy_usage_total > 0, "{info:?}");
    assert_eq!(cost.energy, info.energy_usage_total);
    assert!(info.net_usage > 0 && bytes_used > 0);
    assert_eq!(cost.bandwidth, info.net_usage + bytes_used);
    // The customer burnt nothing (it holds no TRX): the transfer's own fee is zero.
    assert_eq!(info.fee_sun, 0);
    assert_eq!(e.node.trx_balance(customer.as_bytes()).await, 0);

    // Second send from the activated account: no TRX leaves the sponsor.
    let (cost2, trx_lost2, bytes_used2, txid2) = e.send("op-cost-2", &p, &recipient).await;
    assert_eq!(trx_lost2, 0);
    assert_eq!(cost2.native, 0);
    let info2 = e.info(&txid2).await;
    assert_eq!(cost2.energy, info2.energy_usage_total);
    assert!(cost2.energy > 0);
    assert_eq!(cost2.bandwidth, info2.net_usage + bytes_used2);
    // Polled again, a confirmed payment reports the same cost.
    match e.rail.status("op-cost-1").await.unwrap() {
        SubmissionStatus::Confirmed { cost: again, .. } => assert_eq!(again, Some(cost)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_confirmed_transfer_reports_the_activation_and_its_energy_and_bandwidth() {
    activation_then_plain_send(TokenBackend::Native).await;
}

#[tokio::test]
async fn a_confirmed_transfer_reports_the_activation_and_its_energy_and_bandwidth_on_anvil() {
    if tron_node::find_anvil().is_none() {
        assert!(
            std::env::var_os("TRON_REQUIRE_ANVIL").is_none(),
            "TRON_REQUIRE_ANVIL is set but no anvil binary was found"
        );
        eprintln!("SKIPPED: no anvil binary (set ANVIL or run scripts/tron/install_tools.sh)");
        return;
    }
    activation_then_plain_send(TokenBackend::Anvil).await;
}

#[tokio::test]
async fn bandwidth_the_sponsor_burns_is_in_the_cost() {
    // No Bandwidth stake: the activation burns 0.1 TRX for its Bandwidth besides the
    // 1 TRX fee, and the Energy delegations use the sponsor's 600 free bytes, then burn
    // TRX per byte.
    let e = env(TokenBackend::Native, false).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_burn_to".into())).await;
    let mut burnt_bandwidth = false;
    for i in 0..4 {
        let p = KeyPurpose::Wallet(format!("wal_burn_{i}"));
        let customer = e.address(&p).await;
        e.node.mint_usdt(customer.as_bytes(), 5_000_000).await;
        let (cost, trx_lost, _, _) = e.send(&format!("op-burn-{i}"), &p, &recipient).await;
        assert!(trx_lost >= TRX + 100_000, "payment {i}: {trx_lost}");
        assert_eq!(cost.native, u128::from(trx_lost), "payment {i}");
        burnt_bandwidth |= trx_lost > TRX + 100_000;
    }
    assert!(
        burnt_bandwidth,
        "the free Bandwidth never ran out: no burn was measured"
    );
}
