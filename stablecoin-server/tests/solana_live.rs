//! The reference server on the real Solana rail: `[rails.solana_node]` pointing at the
//! litesvm-backed JSON-RPC server of `stablecoin_rails::solana::testkit` (the real SPL
//! Token and Associated Token Account programs, the validator's JSON shapes, on
//! 127.0.0.1), in production mode: keys in the signing service, SQLite, a real EVM chain
//! on Anvil, SMS and FX at their providers' fakes, payouts disabled.
//!
//! Production mode needs a real EVM chain: without an anvil binary the test prints
//! SKIPPED and passes, unless `EVM_REQUIRE_ANVIL` or `SOLANA_REQUIRE_ANVIL` is set (as
//! `scripts/test` does), which makes that a failure.

use crate::common;

use crate::common::{serve, temp_dir, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use stablecoin_rails::solana::Pubkey;
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::testkit::LiteSvmRpc;
use stablecoin_rails::solana::testkit::server::RpcServer;
use stablecoin_server::App;
use stablecoin_server::config::{Secret, SolanaNodeSettings};
use std::str::FromStr;
use std::sync::Arc;

const REMOTE_SEED: [u8; 32] = [0x9e; 32];
const TOKEN: &str = "the-signer-token-of-the-solana-live-test";
const A: &str = "+2250700000901";
const B: &str = "+2250700000902";
const SOL: u64 = 1_000_000_000;

fn settings(url: &str) -> SolanaNodeSettings {
    let mut s = SolanaNodeSettings::new(Secret::new(url), 0);
    s.scan_enabled = true;
    s.sends_enabled = true;
    // The emulated cluster makes a slot per status poll: no need to wait between them.
    s.poll_interval_ms = 10;
    s.finality_timeout_ms = 20_000;
    s
}

fn key(v: &Value) -> Pubkey {
    Pubkey::from_str(v.as_str().expect("a base58 address")).unwrap()
}

fn ata(owner: &Pubkey, mint: &Pubkey) -> Pubkey {
    codec::associated_token_address(owner, mint, &codec::TOKEN_PROGRAM_ID)
}

/// Production mode, the remote signer, and Solana over JSON-RPC: provisioning finalizes
/// both ATAs with the fee payer paying, an outside deposit is credited by the scanner,
/// balances are live, a sponsored send to a phone never seen opens its ATA
/// (`created_recipient_ata`) and settles on chain, and no seed is in the data directory.
#[tokio::test]
async fn a_production_server_with_the_remote_signer_settles_on_the_real_solana_rail_over_json_rpc()
{
    use stablecoin_signer::service::{SignerService, spawn_on_loopback};
    if !common::production::anvil_or_skip(&["EVM_REQUIRE_ANVIL", "SOLANA_REQUIRE_ANVIL"]) {
        return;
    }
    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, 6);
    let rpc = RpcServer::start(kit.clone()).await.unwrap();
    let service = spawn_on_loopback(SignerService::new(REMOTE_SEED, TOKEN).unwrap())
        .await
        .unwrap();
    // What the operator computes from the seed to fund the fee payer (outside the server).
    let operator = LocalSigner::from_seed(REMOTE_SEED);
    let sponsor_key = operator
        .public_key(&KeyPurpose::Sponsor, Curve::Ed25519)
        .await
        .unwrap();
    let fee_payer = codec::address_from_public_key(&sponsor_key.bytes).unwrap();
    kit.airdrop(&fee_payer, 10 * SOL);

    let dir = temp_dir("solana-remote-signer");
    let mut config = test_config();
    common::use_remote_signer(&mut config, &service.url, TOKEN, &dir);
    config.rails.tron = false;
    config.rails.solana = true;
    config.rails.solana_node = Some(settings(&rpc.url()));
    common::production::real_polygon(&mut config, REMOTE_SEED).await;
    let _providers = common::production::production(&mut config).await;
    assert!(
        config.rails.solana,
        "production mode keeps the real Solana rail"
    );
    assert!(config.summary().contains("solana (real)"));
    let app = App::build(config).await.expect("app builds");

    // The banner names what the operator must fund: the fee payer's address.
    let banner = app.banner("127.0.0.1:8080".parse().unwrap());
    assert!(
        banner.contains(&format!(
            "solana: sponsor (fee and rent payer; needs SOL) {fee_payer}"
        )),
        "{banner}"
    );
    assert!(!banner.contains("simulated"), "{banner}");
    assert!(!banner.contains(&rpc.url()), "the RPC URL is a secret");
    let s = serve(app).await;

    // The details (`rails`) need the metrics token.
    let ready = s.ready_details().await;
    assert_eq!(ready.json()["solana"], "READY", "{}", ready.text());
    assert_eq!(ready.json()["polygon"], "READY", "{}", ready.text());
    assert_eq!(ready.json()["mode"], "production");
    assert_eq!(ready.json()["rails"]["solana"]["simulated"], false);
    assert_eq!(ready.json()["tron"], "DISABLED", "{}", ready.text());

    let t = s.tenant("Acme", "100").await;
    // Provisioning returns once both ATAs are finalized, rent and fee paid by the
    // service: the customer holds no SOL.
    let provision = |phone: &'static str| s.provision_on(&t.live, "solana", phone);
    let pa = provision(A).await;
    assert_eq!(pa["outcome"], "PROVISIONED", "{pa}");
    let a = key(&pa["address"]);
    for mint in [MAINNET_USDC_MINT, MAINNET_USDT_MINT] {
        assert_eq!(kit.token_amount(&ata(&a, &mint)), Some(0), "{mint} ATA");
    }
    assert_eq!(kit.lamports(&a), 0, "the customer holds no SOL");
    assert!(
        kit.lamports(&fee_payer) < 10 * SOL,
        "the fee payer paid the rent"
    );
    let again = provision(A).await;
    assert_eq!(again["outcome"], "ALREADY_EXISTS", "{again}");
    assert_eq!(again["address"], pa["address"]);

    // 25 USDC arrive from outside: the scanner credits them once, at `finalized`.
    kit.mint_to(&a, &MAINNET_USDC_MINT, 25_000_000).unwrap();
    let mut deposits = 0;
    for _ in 0..30 {
        kit.advance_slots(1);
        let r = s.app.engine().settle_all(100).await;
        assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
        deposits += r.deposits;
        if deposits > 0 {
            break;
        }
    }
    assert_eq!(deposits, 1, "the deposit is credited once");
    kit.advance_slots(5);
    let r = s.app.engine().settle_all(100).await;
    assert_eq!(r.deposits, 0, "and never again");
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
    let ba = balance(A).await;
    assert_eq!(ba["balance_usdc"], "25.000000", "{ba}");
    assert_eq!(ba["balance_usdt"], "0.000000", "{ba}");

    // A sponsored send to a phone never seen: its wallet's USDC ATA is opened by the
    // payment, the fee payer paying fee and rent.
    let lamports_before = kit.lamports(&fee_payer);
    let send_body = |amount: &str| {
        json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
            "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
        .to_string()
    };
    let r = s
        .post(&t.live, "/v1/solana/transfers/send", &send_body("10"))
        .await;
    r.expect(202);
    assert_eq!(r.json()["rail"], "solana", "{}", r.text());
    assert_eq!(r.json()["service_fee"], "0.000000");
    let op_id = r.json()["id"].as_str().unwrap().to_string();
    let loc = r.header("location").unwrap();
    let mut done = Value::Null;
    for _ in 0..30 {
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
    assert_eq!(done["created_recipient_ata"], true, "{done}");
    let signature = done["tx_hash"].as_str().unwrap();
    assert!(
        stablecoin_rails::solana::Signature::from_str(signature).is_ok(),
        "tx_hash is the transaction's signature: {signature}"
    );
    let op = s.app.engine().operation(&t.id, &op_id).await.unwrap();
    let b_wallet = s
        .app
        .engine()
        .wallet(op.to_wallet.as_ref().unwrap())
        .await
        .unwrap();
    let b = Pubkey::from_str(&b_wallet.address("solana").unwrap().0).unwrap();
    assert_eq!(
        kit.token_amount(&ata(&a, &MAINNET_USDC_MINT)),
        Some(15_000_000)
    );
    assert_eq!(
        kit.token_amount(&ata(&b, &MAINNET_USDC_MINT)),
        Some(10_000_000)
    );
    assert_eq!(kit.token_amount(&ata(&b, &MAINNET_USDT_MINT)), None);
    assert_eq!((kit.lamports(&a), kit.lamports(&b)), (0, 0));
    let rent = lamports_before - kit.lamports(&fee_payer);
    assert!(
        rent > codec::LAMPORTS_PER_SIGNATURE,
        "the fee payer paid the new ATA's rent and the fee: {rent}"
    );
    assert_eq!(balance(A).await["balance_usdc"], "15.000000");
    // More than the credited Solana balance: refused before anything moves.
    s.post(
        &t.live,
        "/v1/solana/transfers/send",
        &send_body("15.000001"),
    )
    .await
    .expect_err(422, "INSUFFICIENT_FUNDS");
    // The recipient, provisioned now, gets the same address and its USDT ATA.
    let pb = provision(B).await;
    assert_eq!(key(&pb["address"]), b);
    assert_eq!(kit.token_amount(&ata(&b, &MAINNET_USDT_MINT)), Some(0));
    assert_eq!(balance(B).await["balance_usdc"], "10.000000");

    common::assert_database_and_no_seed(&dir);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Spec 1.5 names the variable `SOLANA_SCAN_ENABLED`: a server whose configuration was
/// loaded from an environment with that name alone (no `STABLECOIN_` prefix) monitors
/// receipts on the real Solana rail (development mode, litesvm over JSON-RPC), so its
/// readiness is not DEGRADED for monitoring; the same environment without it is DEGRADED
/// and says which variable to set.
#[tokio::test]
async fn the_specs_solana_scan_enabled_without_the_prefix_turns_receipt_monitoring_on() {
    use stablecoin_server::config::Config;
    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, 6);
    let rpc = RpcServer::start(kit.clone()).await.unwrap();
    // The development seed of `test_config` is 0x07 repeated: fund its fee payer.
    let sponsor_key = LocalSigner::from_seed([0x07; 32])
        .public_key(&KeyPurpose::Sponsor, Curve::Ed25519)
        .await
        .unwrap();
    kit.airdrop(
        &codec::address_from_public_key(&sponsor_key.bytes).unwrap(),
        10 * SOL,
    );
    let dir = temp_dir("solana-spec-scan-var");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("solana.toml");
    std::fs::write(&file, "[rails.solana_node]\nscan_start_slot = 0\n").unwrap();

    let readiness = |vars: Vec<(&'static str, String)>| {
        let file = file.clone();
        async move {
            let loaded = Config::load(Some(&file), |k| {
                vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
            })
            .expect("the environment loads");
            let mut config = test_config();
            config.metrics_token = Some(Secret::new(common::METRICS_TOKEN));
            config.rails.solana = true;
            config.rails.solana_node = loaded.rails.solana_node;
            let s = serve(App::build(config).await.expect("app builds")).await;
            s.ready_details().await.json()
        }
    };
    let url = ("STABLECOIN_SOLANA_RPC_URL", rpc.url());

    let on = readiness(vec![url.clone(), ("SOLANA_SCAN_ENABLED", "true".into())]).await;
    assert_eq!(on["rails"]["solana"]["simulated"], false, "{on}");
    assert_eq!(
        on["solana"], "INBOUND_READY",
        "monitoring on, sends off: {on}"
    );
    assert!(
        !on["rails"]["solana"]["reasons"]
            .to_string()
            .contains("SOLANA_SCAN_ENABLED"),
        "{on}"
    );

    let off = readiness(vec![url]).await;
    assert_eq!(off["solana"], "DEGRADED", "{off}");
    assert!(
        off["rails"]["solana"]["reasons"]
            .to_string()
            .contains("SOLANA_SCAN_ENABLED is not true"),
        "{off}"
    );
}
