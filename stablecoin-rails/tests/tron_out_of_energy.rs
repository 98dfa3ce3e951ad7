//! A sponsored TRON send whose lent Energy is consumed by another transaction of the same
//! account first (issue 49): the transfer runs out of Energy (`OUT_OF_ENERGY`, nothing
//! moves), the rail sees it in the receipt, and once the failed transfer is at the
//! confirmation depth re-sponsors and sends it again under the same payment id, paying
//! once; past `out_of_energy_retries` the payment fails with the reason and the USDT
//! stays with the customer. On the local TRON node (`stablecoin-tron-node`), both token
//! backends; the other transaction is a real signed TRC-20 transfer of the customer's key
//! that the node processes just before the rail's transfer
//! (`Controls::run_before_next_trigger`).
//!
//! What the payment cost the service (#51 item 4): a failed transfer consumed the Energy
//! lent for it, so the landed retry's `Confirmed` cost and the final `Failed` cost count
//! every attempt's Energy, and `native` is the TRX the sponsor lost over the payment.
#![cfg(feature = "tron-test")]

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::{LocalSigner, MemoryStore, SystemClock};
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailPayment, StoreJournal,
    SubmissionStatus,
};
use stablecoin_rails::tron::client::{HttpTronApi, TronApi};
use stablecoin_rails::tron::tx::{self, TxHeader};
use stablecoin_rails::tron::{TronAddress, TronConfig, TronRail};
use stablecoin_tron_node::{self as tron_node, NodeConfig, TokenBackend, TronNode};
use std::sync::Arc;
use std::time::Duration;

const TRX: u64 = 1_000_000;
const ENERGY: i32 = 1;
const BANDWIDTH: i32 = 0;

struct Env {
    node: TronNode,
    api: Arc<HttpTronApi>,
    signer: Arc<LocalSigner>,
    usdt: TronAddress,
}

fn raw(a: &TronAddress) -> [u8; 21] {
    *a.as_bytes()
}

impl Env {
    async fn start(backend: TokenBackend) -> Env {
        let node = TronNode::start(NodeConfig {
            backend,
            ..NodeConfig::default()
        })
        .await;
        let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
        let api = Arc::new(HttpTronApi::new(node.url(), Duration::from_secs(5)).unwrap());
        let env = Env {
            node,
            api,
            signer: Arc::new(LocalSigner::from_seed([49; 32])),
            usdt,
        };
        let sponsor = env.rail(|_| {}).await.sponsor_address();
        env.node.create_account(&raw(&sponsor), 1_000 * TRX).await;
        env.node.freeze(&raw(&sponsor), ENERGY, 100_000 * TRX).await;
        env.node
            .freeze(&raw(&sponsor), BANDWIDTH, 10_000 * TRX)
            .await;
        env
    }

    async fn rail(&self, edit: impl FnOnce(&mut TronConfig)) -> TronRail {
        let mut config = TronConfig::new(self.usdt);
        config.poll_interval = Duration::from_millis(5);
        config.inclusion_timeout = Duration::from_secs(3);
        // Bandwidth for the rail's transfer and the customer's other one: only Energy runs
        // short here (the node's free Bandwidth never recovers).
        config.bandwidth_per_transfer = 1_000;
        edit(&mut config);
        TronRail::new(self.api.clone(), self.signer.clone(), config)
            .await
            .unwrap()
            .with_journal(Arc::new(StoreJournal::new(
                Arc::new(MemoryStore::new()),
                Arc::new(SystemClock),
            )))
    }

    async fn address(&self, purpose: &KeyPurpose) -> TronAddress {
        let rail = self.rail(|_| {}).await;
        TronAddress::parse(&rail.address_for(purpose).await.unwrap().0).unwrap()
    }

    fn payment(
        id: &str,
        from: &KeyPurpose,
        from_addr: &TronAddress,
        to: &TronAddress,
    ) -> RailPayment {
        RailPayment {
            id: id.into(),
            from: from.clone(),
            from_address: ChainAddress(from_addr.to_base58()),
            token: Token::Usdt,
            legs: vec![PaymentLeg {
                to: ChainAddress(to.to_base58()),
                amount: Micros(4_000_000),
                role: LegRole::Recipient,
            }],
            valid_until: None,
        }
    }

    /// Energy of a sponsored USDT transfer to an address that holds none, measured on this
    /// backend (the Anvil backend's costs follow the EVM's gas schedule).
    async fn transfer_cost(&self) -> u64 {
        let rail = self.rail(|_| {}).await;
        let p = KeyPurpose::Wallet("calibration".into());
        let from = self.address(&p).await;
        let to = self
            .address(&KeyPurpose::Wallet("calibration_to".into()))
            .await;
        self.node.mint_usdt(&raw(&from), 4_000_000).await;
        let sub = rail
            .submit(&Env::payment("op-calibration", &p, &from, &to))
            .await
            .unwrap();
        let txid: [u8; 32] = hex::decode(sub.tx_hash.unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let info = self.api.transaction_info(&txid).await.unwrap().unwrap();
        assert!(info.succeeded(), "{info:?}");
        info.energy_usage_total
    }

    /// A USDT transfer of `amount` from the customer's own key to a fresh address, signed
    /// now, valid for an hour: another transaction of the same account. Queued to reach
    /// the node just before the rail's next transfer; returns its txID.
    async fn arm_other_transaction(
        &self,
        from_p: &KeyPurpose,
        from: &TronAddress,
        to: &TronAddress,
        amount: u128,
    ) -> String {
        let head = self.api.now_block().await.unwrap();
        let header = TxHeader::from_block_id(&head.id, head.timestamp_ms, 3_600_000);
        let unsigned =
            tx::build_trc20_transfer(&header, from, &self.usdt, to, amount, 100 * TRX as i64);
        let signed = tx::sign_tx(self.signer.as_ref(), from_p, from, unsigned)
            .await
            .unwrap();
        self.node
            .controls()
            .run_before_next_trigger(signed.to_bytes());
        signed.txid_hex()
    }

    async fn usdt(&self, a: &TronAddress) -> u128 {
        self.node.usdt_balance(&raw(a)).await
    }

    /// The node's `gettransactioninfobyid` of a transfer.
    async fn info(&self, txid: &str) -> stablecoin_rails::tron::client::TxInfo {
        let id: [u8; 32] = hex::decode(txid).unwrap().try_into().unwrap();
        self.api.transaction_info(&id).await.unwrap().unwrap()
    }

    async fn trx(&self, a: &[u8; 21]) -> u64 {
        self.node.trx_balance(a).await
    }
}

fn pending(s: SubmissionStatus) -> String {
    match s {
        SubmissionStatus::Pending { tx_hash: Some(h) } => h,
        other => panic!("expected Pending, got {other:?}"),
    }
}

macro_rules! on_both_backends {
    ($flow:ident: $native:ident, $anvil:ident) => {
        #[tokio::test]
        async fn $native() {
            $flow(TokenBackend::Native).await
        }
        #[tokio::test]
        async fn $anvil() {
            if tron_node::find_anvil().is_none() {
                assert!(
                    std::env::var_os("TRON_REQUIRE_ANVIL").is_none(),
                    "TRON_REQUIRE_ANVIL is set but no anvil binary was found"
                );
                eprintln!("SKIPPED {}: no anvil binary", stringify!($anvil));
                return;
            }
            $flow(TokenBackend::Anvil).await
        }
    };
}

on_both_backends!(re_sponsored: energy_consumed_in_between_is_re_sponsored_and_pays_once, energy_consumed_in_between_is_re_sponsored_and_pays_once_on_anvil);

async fn re_sponsored(backend: TokenBackend) {
    let e = Env::start(backend).await;
    let cost = e.transfer_cost().await;
    // Enough Energy for one transfer to a new holder, not for two.
    let rail = e.rail(|c| c.energy_per_transfer = cost + cost / 3).await;
    assert_eq!(rail.config().out_of_energy_retries, 1, "the default");
    let sponsor = raw(&rail.sponsor_address());
    let p = KeyPurpose::Wallet("wal_oe".into());
    let customer = e.address(&p).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_oe_to".into())).await;
    let elsewhere = e.address(&KeyPurpose::Wallet("wal_oe_else".into())).await;
    e.node.mint_usdt(&raw(&customer), 10_000_000).await;
    let triggers = e.node.controls().triggers_accepted();
    let sponsor_trx = e.trx(&sponsor).await;

    // Another transaction of the customer's account reaches the node between the
    // delegation and the rail's transfer, and spends most of the lent Energy.
    let other = e
        .arm_other_transaction(&p, &customer, &elsewhere, 1_000_000)
        .await;
    let payment = Env::payment("op-oe-1", &p, &customer, &recipient);
    let first = rail.submit(&payment).await.unwrap().tx_hash.unwrap();
    assert_eq!(
        e.node.contract_ret(&other).await.as_deref(),
        Some("SUCCESS")
    );
    assert_eq!(
        e.node.contract_ret(&first).await.as_deref(),
        Some("OUT_OF_ENERGY")
    );
    assert_eq!(
        e.usdt(&recipient).await,
        0,
        "the failed transfer moved nothing"
    );

    // Below the depth: still that transfer, not yet retried (a fork could replace it).
    assert_eq!(pending(rail.status("op-oe-1").await.unwrap()), first);
    assert_eq!(e.node.controls().triggers_accepted(), triggers + 2);
    e.node.mine(19).await;
    // At the depth: detected, re-sponsored and sent again under the same payment id.
    let second = pending(rail.status("op-oe-1").await.unwrap());
    assert_ne!(second, first);
    assert_eq!(
        e.node.contract_ret(&second).await.as_deref(),
        Some("SUCCESS")
    );
    assert_eq!(rail.tx_hash_of("op-oe-1").as_deref(), Some(second.as_str()));
    // Another poll, and a second submit of the same payment, send nothing new.
    assert_eq!(pending(rail.status("op-oe-1").await.unwrap()), second);
    let again = rail.submit(&payment).await.unwrap();
    assert_eq!(again.tx_hash.as_deref(), Some(second.as_str()));
    assert_eq!(e.node.controls().triggers_accepted(), triggers + 3);

    e.node.mine(19).await;
    match rail.status("op-oe-1").await.unwrap() {
        SubmissionStatus::Confirmed { tx_hash, cost, .. } => {
            assert_eq!(tx_hash, second);
            // The cost's Energy is the landed transfer's and the failed one's: the Energy
            // lent for the first attempt was consumed all the same.
            let cost = cost.expect("a confirmed cost");
            let (landed, failed) = (e.info(&second).await, e.info(&first).await);
            assert!(failed.energy_usage_total > 0);
            assert_eq!(
                cost.energy,
                landed.energy_usage_total + failed.energy_usage_total
            );
            assert!(failed.net_usage > 0);
            assert!(cost.bandwidth > landed.net_usage + failed.net_usage);
            // The TRX the sponsor lost over the payment (the activation; its Bandwidth is
            // staked, so the delegations burn nothing).
            assert_eq!(cost.native, u128::from(sponsor_trx - e.trx(&sponsor).await));
            assert_eq!(cost.native, u128::from(TRX));
        }
        other => panic!("{other:?}"),
    }
    // Paid once: the recipient has the 4 USDT once, the customer lost exactly the payment
    // and its own other transfer, and kept zero TRX; every delegation came back.
    assert_eq!(e.usdt(&recipient).await, 4_000_000);
    assert_eq!(e.usdt(&elsewhere).await, 1_000_000);
    assert_eq!(e.usdt(&customer).await, 5_000_000);
    assert_eq!(e.node.trx_balance(&raw(&customer)).await, 0);
    assert_eq!(e.node.delegated(&sponsor, &raw(&customer), ENERGY).await, 0);
    assert_eq!(
        e.node.delegated(&sponsor, &raw(&customer), BANDWIDTH).await,
        0
    );
}

on_both_backends!(exhausted: out_of_energy_past_the_retries_fails_and_the_usdt_stays, out_of_energy_past_the_retries_fails_and_the_usdt_stays_on_anvil);

async fn exhausted(backend: TokenBackend) {
    let e = Env::start(backend).await;
    let cost = e.transfer_cost().await;
    let rail = e.rail(|c| c.energy_per_transfer = cost + cost / 3).await;
    let sponsor = raw(&rail.sponsor_address());
    let p = KeyPurpose::Wallet("wal_oe2".into());
    let customer = e.address(&p).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_oe2_to".into())).await;
    let elsewhere = e.address(&KeyPurpose::Wallet("wal_oe2_else".into())).await;
    let elsewhere2 = e.address(&KeyPurpose::Wallet("wal_oe2_else2".into())).await;
    e.node.mint_usdt(&raw(&customer), 10_000_000).await;
    let sponsor_trx = e.trx(&sponsor).await;

    e.arm_other_transaction(&p, &customer, &elsewhere, 1_000_000)
        .await;
    let payment = Env::payment("op-oe-2", &p, &customer, &recipient);
    let first = rail.submit(&payment).await.unwrap().tx_hash.unwrap();
    assert_eq!(
        e.node.contract_ret(&first).await.as_deref(),
        Some("OUT_OF_ENERGY")
    );
    e.node.mine(19).await;
    // The retry's Energy is consumed first too.
    e.arm_other_transaction(&p, &customer, &elsewhere2, 1_000_000)
        .await;
    let second = pending(rail.status("op-oe-2").await.unwrap());
    assert_ne!(second, first);
    assert_eq!(
        e.node.contract_ret(&second).await.as_deref(),
        Some("OUT_OF_ENERGY")
    );
    e.node.mine(19).await;
    // One retry (the default) spent: failed, with the reason; the engine returns the money.
    // What it cost: both attempts' Energy, and the TRX the sponsor lost (the activation).
    let (e1, e2) = (e.info(&first).await, e.info(&second).await);
    let failed_cost = match rail.status("op-oe-2").await.unwrap() {
        SubmissionStatus::Failed {
            reason,
            tx_hash,
            cost,
        } => {
            assert!(reason.starts_with("OUT_OF_ENERGY"), "{reason}");
            assert!(reason.contains("out_of_energy_retries = 1"), "{reason}");
            assert_eq!(tx_hash.as_deref(), Some(second.as_str()));
            cost.expect("a failed transfer's cost")
        }
        other => panic!("{other:?}"),
    };
    assert!(e1.energy_usage_total > 0 && e2.energy_usage_total > 0);
    assert_eq!(
        failed_cost.energy,
        e1.energy_usage_total + e2.energy_usage_total
    );
    assert!(failed_cost.bandwidth > e1.net_usage + e2.net_usage);
    assert_eq!(
        failed_cost.native,
        u128::from(sponsor_trx - e.trx(&sponsor).await)
    );
    assert_eq!(failed_cost.native, u128::from(TRX));
    // And stays failed, at the same cost: no third transfer.
    let triggers = e.node.controls().triggers_accepted();
    match rail.status("op-oe-2").await.unwrap() {
        SubmissionStatus::Failed { cost, .. } => assert_eq!(cost, Some(failed_cost)),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.node.controls().triggers_accepted(), triggers);
    // The payment's 4 USDT never left the customer (only its own two transfers did).
    assert_eq!(e.usdt(&recipient).await, 0);
    assert_eq!(e.usdt(&customer).await, 8_000_000);
    assert_eq!(e.node.trx_balance(&raw(&customer)).await, 0);
    assert_eq!(e.node.delegated(&sponsor, &raw(&customer), ENERGY).await, 0);
    assert_eq!(
        e.node.delegated(&sponsor, &raw(&customer), BANDWIDTH).await,
        0
    );

    // Without retries the first OUT_OF_ENERGY is final.
    let strict = e
        .rail(|c| {
            c.energy_per_transfer = cost + cost / 3;
            c.out_of_energy_retries = 0;
        })
        .await;
    let other = e.address(&KeyPurpose::Wallet("wal_oe3_else".into())).await;
    e.arm_other_transaction(&p, &customer, &other, 1_000_000)
        .await;
    let p3 = Env::payment("op-oe-3", &p, &customer, &recipient);
    let only = strict.submit(&p3).await.unwrap().tx_hash.unwrap();
    e.node.mine(19).await;
    match strict.status("op-oe-3").await.unwrap() {
        SubmissionStatus::Failed {
            reason,
            tx_hash,
            cost,
        } => {
            assert!(reason.contains("out_of_energy_retries = 0"), "{reason}");
            assert_eq!(tx_hash.as_deref(), Some(only.as_str()));
            // Its one attempt's Energy; the account was active already: no TRX.
            let cost = cost.expect("a failed transfer's cost");
            assert_eq!(cost.energy, e.info(&only).await.energy_usage_total);
            assert!(cost.energy > 0);
            assert_eq!(cost.native, 0);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(e.usdt(&recipient).await, 0);
}
