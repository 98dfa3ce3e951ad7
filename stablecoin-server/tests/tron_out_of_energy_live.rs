//! The reference server on the real TRON rail (the local TRON node) when the Energy the
//! sponsor lends for a send is consumed by another transaction of the same account first
//! (issue 49): the transfer runs out of Energy; the payment is re-sponsored and settles
//! once under the same operation, or, when the retry runs out too, fails and its money
//! stays with the customer. The other transaction is a real transfer signed by the
//! customer's key, which the node processes just before the rail's
//! (`Controls::run_before_next_trigger`).

use crate::common;

use crate::common::{serve, temp_dir, test_config};
use serde_json::json;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use stablecoin_rails::tron::TronAddress;
use stablecoin_rails::tron::client::{HttpTronApi, TronApi};
use stablecoin_rails::tron::tx::{self, TxHeader};
use stablecoin_server::config::{Secret, StorageConfig};
use stablecoin_tron_node::{NodeConfig, TokenBackend, TronNode};
use std::time::Duration;

const SEED: u8 = 0x4e;
const A: &str = "+2250700000901";
const B: &str = "+2250700000902";
const TRX: u64 = 1_000_000;
const BANDWIDTH: i32 = 0;
const ENERGY: i32 = 1;

async fn address_of(signer: &LocalSigner, purpose: &KeyPurpose) -> TronAddress {
    let key = signer.public_key(purpose, Curve::Secp256k1).await.unwrap();
    TronAddress::from_public_key(&key.bytes).unwrap()
}

/// A transfer of 1 USDT from `from` (key `p`) to a fresh address, valid for an hour,
/// queued to reach the node just before the rail's next transfer.
async fn other_transaction(
    node: &TronNode,
    signer: &LocalSigner,
    p: &KeyPurpose,
    from: &TronAddress,
    usdt: &TronAddress,
    n: u32,
) {
    let api = HttpTronApi::new(node.url(), Duration::from_secs(5)).unwrap();
    let head = api.now_block().await.unwrap();
    let header = TxHeader::from_block_id(&head.id, head.timestamp_ms, 3_600_000);
    let to = address_of(signer, &KeyPurpose::Wallet(format!("elsewhere_{n}"))).await;
    let unsigned = tx::build_trc20_transfer(&header, from, usdt, &to, 1_000_000, 100_000_000);
    let signed = tx::sign_tx(signer, p, from, unsigned).await.unwrap();
    node.controls().run_before_next_trigger(signed.to_bytes());
}

#[tokio::test]
async fn a_send_whose_lent_energy_is_consumed_first_settles_once_or_fails_with_its_money_kept() {
    let node = TronNode::start(NodeConfig {
        backend: TokenBackend::Native,
        block_per_head_read: true,
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let signer = LocalSigner::from_seed([SEED; 32]);
    let dir = temp_dir("tron-out-of-energy");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    let mut settings = common::production::tron_node(node.url(), &usdt);
    // Enough for one transfer to a new holder (29 650 on the native ledger), not two;
    // Bandwidth for both.
    settings.energy_per_transfer = 40_000;
    settings.bandwidth_per_transfer = 1_000;
    assert_eq!(settings.out_of_energy_retries, 1, "the default");
    config.rails.tron_node = Some(settings);
    let (app, clock) = common::build_shifted(config).await;
    let sponsor = address_of(&signer, &KeyPurpose::Sponsor).await;
    node.create_account(sponsor.as_bytes(), 1_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), ENERGY, 100_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), BANDWIDTH, 10_000 * TRX)
        .await;
    clock.advance_ms(2_100);
    let s = serve(app).await;
    let t = s.tenant("Acme", "100").await;
    let pa = s.provision_on(&t.live, "tron", A).await;
    let pb = s.provision_on(&t.live, "tron", B).await;
    let pa_key = KeyPurpose::Wallet(pa["wallet_id"].as_str().unwrap().into());
    let addr_a = address_of(&signer, &pa_key).await;
    let addr_b = TronAddress::parse(pb["address"].as_str().unwrap()).unwrap();
    node.mint_usdt(addr_a.as_bytes(), 25_000_000).await;
    s.settle().await;
    let send = |amount: &str| {
        json!({"from_phone_number": A, "to_phone_number": B, "token": "USDT",
            "quote_id": format!("DIRECT_CRYPTO:USDT:{amount}")})
        .to_string()
    };
    let final_state = |loc: String| {
        let (s, key) = (&s, t.live.clone());
        async move {
            for _ in 0..20 {
                s.settle().await;
                let r = s.get(&key, &loc).await;
                r.expect(200);
                let v = r.json();
                if ["SETTLED", "FAILED"].contains(&v["status"].as_str().unwrap_or("")) {
                    return v;
                }
            }
            panic!("{loc} never finished");
        }
    };

    // 1. Both the transfer and its retry find their Energy spent: FAILED, and the 10 USDT
    // never left A (only A's own two other transfers did).
    other_transaction(&node, &signer, &pa_key, &addr_a, &usdt, 1).await;
    other_transaction(&node, &signer, &pa_key, &addr_a, &usdt, 2).await;
    let triggers = node.controls().triggers_accepted();
    let r = s
        .post(&t.live, "/v1/tron/transfers/send", &send("10"))
        .await;
    r.expect(202);
    let failed = final_state(r.header("location").unwrap()).await;
    assert_eq!(failed["status"], "FAILED", "{failed}");
    assert_eq!(
        node.controls().triggers_accepted() - triggers,
        4,
        "two other transfers, the rail's transfer and its one retry"
    );
    if let Some(tx) = failed["tx_hash"].as_str() {
        assert_eq!(
            node.contract_ret(tx).await.as_deref(),
            Some("OUT_OF_ENERGY")
        );
    }
    assert_eq!(node.usdt_balance(addr_b.as_bytes()).await, 0);
    assert_eq!(node.usdt_balance(addr_a.as_bytes()).await, 23_000_000);
    assert_eq!(node.trx_balance(addr_a.as_bytes()).await, 0);
    let bal = s
        .get(
            &t.live,
            &format!("/v1/tron/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await;
    bal.expect(200);
    // The wallet's balance (a live read) still holds the payment's 10 USDT.
    assert_eq!(bal.json()["balance_usdt"], "23.000000", "{}", bal.text());

    // 2. Only the first transfer's Energy is taken: re-sponsored, SETTLED once.
    other_transaction(&node, &signer, &pa_key, &addr_a, &usdt, 3).await;
    let triggers = node.controls().triggers_accepted();
    let r = s
        .post(&t.live, "/v1/tron/transfers/send", &send("10"))
        .await;
    r.expect(202);
    let done = final_state(r.header("location").unwrap()).await;
    assert_eq!(done["status"], "SETTLED", "{done}");
    let tx = done["tx_hash"].as_str().unwrap();
    assert_eq!(node.contract_ret(tx).await.as_deref(), Some("SUCCESS"));
    assert_eq!(
        node.controls().triggers_accepted() - triggers,
        3,
        "the other transfer, the rail's transfer that ran out, its retry"
    );
    assert_eq!(node.usdt_balance(addr_b.as_bytes()).await, 10_000_000);
    assert_eq!(node.usdt_balance(addr_a.as_bytes()).await, 12_000_000);
    let a = node.account(addr_a.as_bytes()).await.expect("activated");
    assert_eq!(a.balance, 0, "the customer holds zero TRX");
    assert_eq!((a.acquired_energy, a.acquired_bandwidth), (0, 0));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
