//! The off-ramp end to end on real chains (issue #48, item 1): a withdrawal's sweep from
//! the customer's wallet to the treasury mined on Anvil (the EVM rail with its deployed
//! ERC-4337 contracts) and on the TRON node, its payout priced by the HTTP rate feed and
//! paid through the M-Pesa fake (separate HTTP servers on loopback, whose callbacks come
//! back to this server), COMPLETED with the provider's reference; and a payout the fake
//! refuses, whose tokens go back to the wallet on chain: REFUNDED, balances exact on
//! chain and in the ledger.
//!
//! Without an anvil binary the EVM test prints SKIPPED and passes, unless
//! `EVM_REQUIRE_ANVIL` is set; the TRON node runs its native token ledger then, unless
//! `TRON_REQUIRE_ANVIL` is set (as for `tron_live.rs`).

use crate::common::{self, Server, m, temp_dir, test_config};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, LedgerError, Signer};
use stablecoin_providers::rate_feed::fake::{FakeRateFeed, now_secs};
use stablecoin_providers::testkit::FakeMpesa;
use stablecoin_rails::evm::testkit::{World, anvil_or_skip, shared_anvil};
use stablecoin_rails::evm::{EvmAddress, JsonRpc};
use stablecoin_rails::tron::TronAddress;
use stablecoin_server::config::{PayoutSettings, RatesSettings, Secret, StorageConfig};
use stablecoin_server::{App, Config};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// A number the M-Pesa fake pays.
const PAID: &str = "+254708374149";
/// A number the M-Pesa fake refuses (result 2040, "The receiver is not registered").
const REFUSED: &str = "+254711000001";
const CB_SECRET: &str = "callback-secret-withdrawals-live-0123456";
const TEN: u128 = 10_000_000;
const FIFTY: u128 = 50_000_000;

/// The providers a withdrawal talks to: M-Pesa (KES) and the rate feed.
struct Providers {
    mpesa: FakeMpesa,
    _feed: FakeRateFeed,
}

/// Points `config` at the M-Pesa fake (its callbacks to `base`, this server's URL) and
/// at the HTTP rate feed: 129.37 KES per USDC and per USDT, with a 1% spread.
async fn providers(config: &mut Config, base: &str) -> Providers {
    let mpesa = FakeMpesa::start("ck", "cs", "testapi", "ENC==")
        .await
        .unwrap();
    mpesa.fail_party(&REFUSED[1..], "2040", "The receiver is not registered");
    config.payouts = PayoutSettings::Mpesa {
        base_url: mpesa.base_url().into(),
        consumer_key: "ck".into(),
        consumer_secret: Secret::new("cs"),
        initiator_name: "testapi".into(),
        security_credential: Secret::new("ENC=="),
        shortcode: "600000".into(),
        command_id: "BusinessPayment".into(),
        callback_base_url: format!("{base}/"),
        callback_secret: Secret::new(CB_SECRET),
        timeout_ms: 2_000,
        result_wait_ms: 1_000,
    };
    let feed = FakeRateFeed::start().await.unwrap();
    for token in ["USDC", "USDT"] {
        feed.set_rate("KES", token, "129.37", now_secs());
    }
    config.rates = RatesSettings::Http {
        url: Secret::new(feed.pair_url()),
        auth_header: None,
        auth_value: None,
        rate_pointer: "/data/rate".into(),
        timestamp_pointer: Some("/data/timestamp".into()),
        max_age_ms: 600_000,
        spread_bps: 100,
        max_move_bps: 1_000,
        timeout_ms: 5_000,
        decimals: Default::default(),
    };
    Providers { mpesa, _feed: feed }
}

/// The feed's 129.37 with the 1% spread, in the service's favour and to KES's two
/// decimals: a customer buying tokens pays 130.67 (129.37 × 1.01 = 130.6637, up); one
/// selling them is paid 128.07 (129.37 × 0.99 = 128.0763, down).
const BUY_RATE: &str = "130.67";
/// 10 tokens at 128.07 are 1280.70 KES; M-Pesa pays whole shillings, so 1280.
const PAYOUT_KES: u32 = 1280;

/// An `fx_` quote from the feed (what the customer is shown): its rate is the feed's
/// buy side; the withdrawal then pays at the sell side of the same feed.
async fn quote_from_the_feed(s: &Server, key: &str, token: &str) {
    let r = s
        .post(
            key,
            "/api/v1/fx/quote",
            &json!({"fiat_amount": "1306.70", "local_currency": "KES", "target_token": token})
                .to_string(),
        )
        .await;
    r.expect(200);
    assert!(
        r.json()["quote_id"].as_str().unwrap().starts_with("fx_"),
        "{}",
        r.text()
    );
    assert_eq!(
        Decimal::from_str(r.json()["rate"].as_str().unwrap()).unwrap(),
        Decimal::from_str(BUY_RATE).unwrap(),
        "{}",
        r.text()
    );
}

/// `POST path` of 10 `token` from `phone` in KES; the withdrawal's id.
async fn withdraw(s: &Server, key: &str, path: &str, phone: &str, token: &str) -> String {
    let body = json!({"phone_number": phone, "token": token, "amount": "10",
        "payout_currency": "KES"});
    let r = s.post(key, path, &body.to_string()).await;
    r.expect(202);
    let w = r.json();
    assert_eq!(w["status"], "PENDING", "{w}");
    assert_eq!(
        r.header("location").unwrap(),
        format!("/v1/withdrawals/{}", w["id"].as_str().unwrap())
    );
    // Priced by the feed's sell side, down to what M-Pesa pays.
    assert_eq!(w["payout_currency"], "KES", "{w}");
    assert_eq!(
        Decimal::from_str(w["payout_amount"].as_str().unwrap()).unwrap(),
        Decimal::from(PAYOUT_KES),
        "{w}"
    );
    w["id"].as_str().unwrap().to_string()
}

async fn read(s: &Server, key: &str, id: &str) -> Value {
    let r = s.get(key, &format!("/v1/withdrawals/{id}")).await;
    r.expect(200);
    r.json()
}

/// Runs the workers until every withdrawal of `ids` is final (at most ~20 s: the chain
/// and the provider answer on their own time); the withdrawals as read then.
async fn drive(s: &Server, key: &str, ids: &[&str]) -> Vec<Value> {
    for _ in 0..400 {
        s.app.engine().tick().await;
        let mut all = Vec::new();
        for id in ids {
            all.push(read(s, key, id).await);
        }
        if all
            .iter()
            .all(|w| ["COMPLETED", "REFUNDED", "FAILED"].contains(&w["status"].as_str().unwrap()))
        {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never final: {ids:?}");
}

/// A ledger account's posted balance (zero if never posted to).
async fn ledger(s: &Server, account: &str) -> i128 {
    match s.app.state().storage.ledger.balance(account).await {
        Ok(b) => b.posted(),
        Err(LedgerError::UnknownAccount { .. }) => 0,
        Err(e) => panic!("{account}: {e:?}"),
    }
}

/// What both chains must show once the paid withdrawal `paid` and the refused one
/// `refused` are final: the wallet ledger balances, the withdrawal accounts and the
/// provider's record.
async fn assert_outcomes(
    s: &Server,
    mpesa: &FakeMpesa,
    paid: &Value,
    refused: &Value,
    wallet_accounts: [&str; 2],
    token: &str,
) {
    assert_eq!(paid["status"], "COMPLETED", "{paid}");
    let reference = paid["payout_reference"].as_str().expect("a reference");
    let id = paid["id"].as_str().unwrap();
    assert_eq!(mpesa.paid_count(id), 1, "paid exactly once");
    assert_eq!(
        mpesa.receipt(id).as_deref(),
        Some(reference),
        "the provider's own receipt"
    );
    // Paid to the withdrawing phone, the amount priced by the feed.
    let payments = mpesa.payments();
    let (_, party_b, amount) = payments.iter().find(|(p, _, _)| p == id).unwrap();
    assert_eq!(party_b, &PAID[1..]);
    assert_eq!(
        Decimal::from_str(amount).unwrap(),
        Decimal::from_str(paid["payout_amount"].as_str().unwrap()).unwrap()
    );
    assert!(paid["tx_hash"].as_str().is_some(), "{paid}");

    assert_eq!(refused["status"], "REFUNDED", "{refused}");
    assert!(refused.get("payout_reference").is_none(), "{refused}");
    assert!(refused["refund_tx_hash"].as_str().is_some(), "{refused}");
    assert!(
        refused["error_reason"]
            .as_str()
            .is_some_and(|r| r.contains("not registered")),
        "{refused}"
    );
    assert_eq!(mpesa.paid_count(refused["id"].as_str().unwrap()), 0);

    assert_eq!(
        ledger(s, wallet_accounts[0]).await,
        (FIFTY - TEN) as i128,
        "paid: 10 left the wallet"
    );
    assert_eq!(
        ledger(s, wallet_accounts[1]).await,
        FIFTY as i128,
        "refunded: all back"
    );
    assert_eq!(ledger(s, &format!("withdrawals:{token}")).await, 0);
    assert_eq!(ledger(s, &format!("fiat_out:{token}")).await, TEN as i128);
}

#[tokio::test]
async fn a_withdrawal_on_anvil_is_swept_on_chain_paid_by_mpesa_or_refunded_on_chain() {
    if !anvil_or_skip() {
        return;
    }
    const SEED: u8 = 0x5d;
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer, |_| {}).await;
    let dir = temp_dir("withdrawals-evm");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.rails.evm_chains = vec![137];
    config
        .rails
        .evm
        .insert("137".into(), common::production::evm_chain(&w, &url));
    let p = providers(&mut config, &base).await;
    let s = common::serve_on(App::build(config).await.expect("app builds"), listener).await;
    assert!(
        s.app.state().sim_payouts.is_none(),
        "the real M-Pesa adapter"
    );

    let t = s.tenant("Acme", "200").await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 100_000_000).await;
    let mut wallets = Vec::new();
    for phone in [PAID, REFUSED] {
        let p = s.provision(&t.live, phone).await;
        let f = s.fund_settled(&t.live, phone, "50").await;
        assert_eq!(f["status"], "SETTLED", "{f}");
        let address: EvmAddress = p["address"].as_str().unwrap().parse().unwrap();
        assert_eq!(w.usdc_of(&address).await, FIFTY);
        wallets.push((address, p["wallet_id"].as_str().unwrap().to_string()));
    }
    let treasury_before = w.usdc_of(&treasury).await;
    quote_from_the_feed(&s, &t.live, "USDC").await;

    let paid = withdraw(&s, &t.live, "/v1/users/withdraw", PAID, "USDC").await;
    let refused = withdraw(&s, &t.live, "/v1/users/withdraw", REFUSED, "USDC").await;
    let done = drive(&s, &t.live, &[&paid, &refused]).await;

    // The sweep is a handleOps bundle mined on chain; on chain, the paid withdrawal's
    // 10 USDC stayed in the treasury, the refused one's came back to its wallet.
    let sweep = done[0]["tx_hash"].as_str().unwrap();
    let receipt = w
        .node
        .rpc
        .request("eth_getTransactionReceipt", json!([sweep]))
        .await
        .unwrap();
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(w.usdc_of(&wallets[0].0).await, FIFTY - TEN);
    assert_eq!(w.usdc_of(&wallets[1].0).await, FIFTY);
    assert_eq!(w.usdc_of(&treasury).await, treasury_before + TEN);
    let refund = done[1]["refund_tx_hash"].as_str().unwrap();
    let receipt = w
        .node
        .rpc
        .request("eth_getTransactionReceipt", json!([refund]))
        .await
        .unwrap();
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    let accounts = [
        format!("wallet:{}:USDC", wallets[0].1),
        format!("wallet:{}:USDC", wallets[1].1),
    ];
    assert_outcomes(
        &s,
        &p.mpesa,
        &done[0],
        &done[1],
        [&accounts[0], &accounts[1]],
        "USDC",
    )
    .await;
    // The balance the API reads is the chain's.
    let r = s
        .get(
            &t.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &REFUSED[1..]),
        )
        .await;
    assert_eq!(
        m(r.json()["balance_usdc"].as_str().unwrap()).0 as u128,
        FIFTY
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn tron_address(signer: &LocalSigner, purpose: &KeyPurpose) -> TronAddress {
    let key = signer.public_key(purpose, Curve::Secp256k1).await.unwrap();
    TronAddress::from_public_key(&key.bytes).unwrap()
}

#[tokio::test]
async fn a_withdrawal_on_the_tron_node_is_swept_on_chain_paid_by_mpesa_or_refunded_on_chain() {
    use stablecoin_core::domain::ids::WalletId;
    use stablecoin_core::domain::money::Token;
    use stablecoin_core::ports::RailId;
    use stablecoin_tron_node::{NodeConfig, TronNode, backend_from_env};
    const SEED: u8 = 0x7d;
    const TRX: u64 = 1_000_000;
    let node = TronNode::start(NodeConfig {
        backend: backend_from_env(),
        block_per_head_read: true,
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let signer = LocalSigner::from_seed([SEED; 32]);
    // The operator funds the sponsor: TRX for activations, Stake 2.0 for resources.
    let sponsor = tron_address(&signer, &KeyPurpose::Sponsor).await;
    node.create_account(sponsor.as_bytes(), 1_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), 1, 100_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), 0, 10_000 * TRX).await;

    let dir = temp_dir("withdrawals-tron");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.rails.tron_node = Some(common::production::tron_node(node.url(), &usdt));
    let p = providers(&mut config, &base).await;
    let s = common::serve_on(App::build(config).await.expect("app builds"), listener).await;
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["tron"], "READY", "{}", ready.text());

    let t = s.tenant("Acme", "0").await;
    let mut wallets = Vec::new();
    for phone in [PAID, REFUSED] {
        let p = s.provision_on(&t.live, "tron", phone).await;
        let address = TronAddress::parse(p["address"].as_str().unwrap()).unwrap();
        // 50 USDT arrive from outside; the scanner credits them at depth.
        node.mint_usdt(address.as_bytes(), FIFTY).await;
        wallets.push((address, p["wallet_id"].as_str().unwrap().to_string()));
    }
    s.settle().await;
    let treasury = tron_address(&signer, &KeyPurpose::Treasury).await;
    let treasury_before = node.usdt_balance(treasury.as_bytes()).await;
    quote_from_the_feed(&s, &t.live, "USDT").await;

    // The TRON route names its chain: an EVM `network` is a mistake.
    s.post(
        &t.live,
        "/v1/tron/users/withdraw",
        &json!({"phone_number": PAID, "token": "USDT", "amount": "10",
            "payout_currency": "KES", "network": "polygon"})
        .to_string(),
    )
    .await
    .expect_err(400, "UNKNOWN_FIELD");
    let paid = withdraw(&s, &t.live, "/v1/tron/users/withdraw", PAID, "USDT").await;
    let refused = withdraw(&s, &t.live, "/v1/tron/users/withdraw", REFUSED, "USDT").await;
    let done = drive(&s, &t.live, &[&paid, &refused]).await;
    assert_eq!(done[0]["rail"], "tron", "{}", done[0]);

    // On chain: the sweep and the refund are TRC-20 transfers that succeeded; the paid
    // withdrawal's 10 USDT stayed in the treasury, the refused one's came back.
    let sweep = done[0]["tx_hash"].as_str().unwrap();
    assert_eq!(node.contract_ret(sweep).await.as_deref(), Some("SUCCESS"));
    let refund = done[1]["refund_tx_hash"].as_str().unwrap();
    assert_eq!(node.contract_ret(refund).await.as_deref(), Some("SUCCESS"));
    assert_eq!(
        node.usdt_balance(wallets[0].0.as_bytes()).await,
        FIFTY - TEN
    );
    assert_eq!(node.usdt_balance(wallets[1].0.as_bytes()).await, FIFTY);
    assert_eq!(
        node.usdt_balance(treasury.as_bytes()).await,
        treasury_before + TEN
    );
    let account = |i: usize| {
        s.app
            .engine()
            .wallet_account(&WalletId(wallets[i].1.clone()), RailId::Tron, Token::Usdt)
            .id
    };
    let accounts = [account(0), account(1)];
    assert_outcomes(
        &s,
        &p.mpesa,
        &done[0],
        &done[1],
        [&accounts[0], &accounts[1]],
        "USDT",
    )
    .await;
    // The customers still hold no TRX: the service paid every fee.
    for (address, _) in &wallets {
        let a = node.account(address.as_bytes()).await.expect("activated");
        assert_eq!(a.balance, 0);
    }
    let r = s
        .get(
            &t.live,
            &format!("/v1/tron/users/balance?phone_number=%2B{}", &REFUSED[1..]),
        )
        .await;
    assert_eq!(r.json()["balance_usdt"], "50.000000", "{}", r.text());
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
