//! The reference server on the real Solana rail under congestion (issue #49): the rail's
//! node is a loopback proxy in front of the litesvm-backed JSON-RPC server that accepts
//! the payment's first sends and drops them. The engine's status polls rebroadcast the
//! same signed transaction until it lands; it settles once, carrying the compute-unit
//! limit and price `[rails.solana_node.fees]` set, which the runtime charged the sponsor.

use crate::common::{serve, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use stablecoin_rails::fault_proxy::{Fault, FaultProxy};
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::rpc::SolanaRpc;
use stablecoin_rails::solana::testkit::LiteSvmRpc;
use stablecoin_rails::solana::testkit::server::RpcServer;
use stablecoin_rails::solana::{Commitment, Pubkey, Signature};
use stablecoin_server::App;
use stablecoin_server::config::{Secret, SolanaNodeSettings};
use std::str::FromStr;
use std::sync::Arc;

const A: &str = "+2250700000931";
const B: &str = "+2250700000932";
const SOL: u64 = 1_000_000_000;

fn sends(proxy: &FaultProxy) -> usize {
    proxy
        .methods()
        .iter()
        .filter(|m| *m == "sendTransaction")
        .count()
}

#[tokio::test]
async fn a_send_the_node_drops_is_rebroadcast_and_settles_once_at_the_configured_price() {
    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, 6);
    let node = RpcServer::start(kit.clone()).await.unwrap();
    let proxy = FaultProxy::start(&node.url(), Fault::Forward)
        .await
        .unwrap();
    // The development seed of `test_config` is 0x07 repeated: fund its fee payer.
    let sponsor = LocalSigner::from_seed([0x07; 32])
        .public_key(&KeyPurpose::Sponsor, Curve::Ed25519)
        .await
        .unwrap();
    let fee_payer = codec::address_from_public_key(&sponsor.bytes).unwrap();
    kit.airdrop(&fee_payer, 10 * SOL);

    let mut settings = SolanaNodeSettings::new(Secret::new(proxy.url()), 0);
    settings.scan_enabled = true;
    settings.sends_enabled = true;
    settings.poll_interval_ms = 10;
    // A quiet cluster: the price is the configured floor.
    settings.fees.price_floor_micro_lamports = 30_000;
    let mut config = test_config();
    config.rails.solana = true;
    config.rails.solana_node = Some(settings);
    let s = serve(App::build(config).await.expect("app builds")).await;
    let t = s.tenant("Acme", "100").await;

    let pa = s.provision_on(&t.live, "solana", A).await;
    assert_eq!(pa["outcome"], "PROVISIONED", "{pa}");
    let a = Pubkey::from_str(pa["address"].as_str().unwrap()).unwrap();
    kit.mint_to(&a, &MAINNET_USDC_MINT, 25_000_000).unwrap();
    let mut deposits = 0;
    for _ in 0..30 {
        kit.advance_slots(1);
        deposits += s.app.engine().settle_all(100).await.deposits;
        if deposits > 0 {
            break;
        }
    }
    assert_eq!(deposits, 1, "the deposit is credited");

    // From here the node accepts the payment's first two broadcasts and loses them.
    proxy.set(Fault::DropSolanaSends(2));
    let sent_before = sends(&proxy);
    let txs = kit.transaction_count();
    let lamports_before = kit.lamports(&fee_payer);
    let body = json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
        "quote_id": "DIRECT_CRYPTO:USDC:10"})
    .to_string();
    let r = s.post(&t.live, "/v1/solana/transfers/send", &body).await;
    r.expect(202);
    let op_id = r.json()["id"].as_str().unwrap().to_string();
    let loc = r.header("location").unwrap();
    let mut done = Value::Null;
    for _ in 0..40 {
        kit.advance_slots(1);
        let r = s.app.engine().settle_all(100).await;
        assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
        let got = s.get(&t.live, &loc).await;
        got.expect(200);
        done = got.json();
        if done["status"] == "SETTLED" {
            break;
        }
    }
    assert_eq!(done["status"], "SETTLED", "{done}");
    assert!(
        sends(&proxy) - sent_before >= 3,
        "two broadcasts dropped, then the same transaction again"
    );
    assert_eq!(kit.transaction_count(), txs + 1, "one transaction landed");
    let sig = Signature::from_str(done["tx_hash"].as_str().unwrap()).unwrap();
    let landed = kit
        .get_transaction(&sig, Commitment::Finalized)
        .await
        .unwrap()
        .expect("the settled signature is the landed transaction");
    // 15 000 + 40 000 units (the recipient's account is opened) + 5 000 + 100 per byte
    // of the payment-id memo, at 30 000 micro-lamports, on top of two signatures.
    let limit = 60_000 + 100 * op_id.len() as u32;
    let fee = codec::transaction_fee_lamports(2, limit, 30_000);
    assert_eq!(landed.fee, fee);
    assert_eq!(
        fee,
        10_000 + (u64::from(limit) * 30_000).div_ceil(1_000_000)
    );
    // The memo the Memo program ran is the operation's id.
    let logs = kit.logs(&sig).expect("the landed transaction's log");
    assert!(logs.contains(&format!("Program log: {op_id}")), "{logs:#?}");
    let rent = kit
        .get_minimum_balance_for_rent_exemption(codec::TOKEN_ACCOUNT_LEN)
        .await
        .unwrap();
    assert_eq!(lamports_before - kit.lamports(&fee_payer), rent + fee);
    let balance = |phone: &'static str| {
        let (s, key) = (&s, t.live.clone());
        async move {
            let r = s
                .get(
                    &key,
                    &format!("/v1/solana/users/balance?phone_number=%2B{}", &phone[1..]),
                )
                .await;
            r.expect(200);
            r.json()
        }
    };
    assert_eq!(balance(A).await["balance_usdc"], "15.000000");
    let op = s.app.engine().operation(&t.id, &op_id).await.unwrap();
    let b_wallet = s
        .app
        .engine()
        .wallet(op.to_wallet.as_ref().unwrap())
        .await
        .unwrap();
    let b = Pubkey::from_str(&b_wallet.address("solana").unwrap().0).unwrap();
    let b_ata = codec::associated_token_address(&b, &MAINNET_USDC_MINT, &codec::TOKEN_PROGRAM_ID);
    assert_eq!(kit.token_amount(&b_ata), Some(10_000_000), "paid once");
}
