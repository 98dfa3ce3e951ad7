//! Checkout sessions on a real EVM chain: Anvil (chain id 137) with a 6-decimal USDC,
//! configured through `[rails.evm.137]`, over loopback HTTP. Payments are real ERC-20
//! transfers into the session addresses; the server's scanner finds them.
//!
//! Exact (detected, confirmed, paid, with the payments webhooks signed), partial then
//! completed, over-payment, expiry then a late payment, a re-delivered deposit report
//! answering `already_recorded`, and `safe_to_credit=false` crediting nothing.
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set (as `scripts/test` does).

use crate::common;

use crate::common::webhook_receiver::recording_receiver;
use crate::common::{Server, build_shifted, hex_hmac, serve, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::{LocalSigner, ShiftedClock};
use stablecoin_rails::evm::EvmAddress;
use stablecoin_rails::evm::testkit::{World, find_anvil, shared_anvil};
use stablecoin_server::config::Secret;
use stablecoin_webhooks::Family;
use std::sync::Arc;

const SEED: u8 = 0x6c;
const INTAKE: &str = "whsec_scanner-0123456789abcdef-012345678";

struct Live {
    s: Server,
    w: World,
    key: String,
    /// The server's clock: moved past an expiry instead of sleeping through it.
    clock: Arc<ShiftedClock>,
}

impl Live {
    async fn open(&self, amount: &str, expires_in_secs: u64) -> (String, EvmAddress) {
        let r = self
            .s
            .post(
                &self.key,
                "/api/v1/checkout/sessions",
                &json!({"amount": amount, "currency": "USDC", "networks": ["polygon"],
                    "expires_in_secs": expires_in_secs, "reference": "order-anvil"})
                .to_string(),
            )
            .await;
        r.expect(201);
        let j = r.json();
        assert_eq!(j["payment_options"][0]["network"], "polygon");
        (
            j["session_id"].as_str().unwrap().to_string(),
            j["payment_options"][0]["address"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap(),
        )
    }
    async fn read(&self, id: &str) -> Value {
        let r = self
            .s
            .get(&self.key, &format!("/api/v1/checkout/sessions/{id}"))
            .await;
        r.expect(200);
        r.json()
    }
    /// Mines `blocks` (each a scan of the checkout worker).
    async fn blocks(&self, blocks: u64) {
        for _ in 0..blocks {
            self.w.node.mine(1).await;
            let r = self.s.app.state().checkout.tick().await;
            assert!(r.errors.is_empty(), "{r:?}");
        }
    }
    async fn report(&self, body: Value) -> Value {
        let body = body.to_string();
        let sig = hex_hmac(INTAKE, body.as_bytes());
        let r = self
            .s
            .send(
                reqwest::Method::POST,
                "/v1/scanner/deposit-events",
                None,
                Some(&body),
                &[("x-webhook-signature", &sig)],
            )
            .await;
        r.expect(200);
        r.json()
    }
    async fn treasury(&self, t: &common::Tenant) -> u64 {
        self.s.treasury(t).await.get()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_sessions_are_paid_by_real_erc20_transfers_on_anvil() {
    if find_anvil().is_none() {
        assert!(
            std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
            "EVM_REQUIRE_ANVIL is set but no anvil binary was found"
        );
        eprintln!("SKIPPED: no anvil binary");
        return;
    }
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer, |_| {}).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.webhooks_allow_loopback_http = true;
    config.checkout.intake_secret = Some(INTAKE.into());
    config.checkout.min_expiry_secs = 2;
    config.rails.evm_chains = vec![137];
    let mut chain = common::production::evm_chain(&w, &url);
    chain.confirmations = 3;
    // Scan from the chain's current head: the shared Anvil carries other tests' blocks.
    chain.scan_start_block = w.node.eth().block_number().await.unwrap();
    config.rails.evm.insert("137".into(), chain);
    let (app, clock) = build_shifted(config).await;
    let s = serve(app).await;
    let t = s.tenant("Anvil Shop", "0").await;
    let (hook, got) = recording_receiver().await;
    let r = s
        .post(
            &t.live,
            "/v1/webhook-endpoints",
            &json!({"family": "payments", "url": hook, "events": ["payment.confirmed",
                "payment.failed", "wallet.deposit.detected", "wallet.deposit.confirmed"]})
            .to_string(),
        )
        .await;
    r.expect(201);
    let secret = r.json()["secret"].as_str().unwrap().to_string();
    let key = t.business_live.clone();
    let l = Live { s, w, key, clock };

    // Exact: detected below the depth, confirmed at it, paid; credited to the treasury.
    let base = l.treasury(&t).await;
    let (exact, addr) = l.open("25", 600).await;
    let exact_addr = addr;
    let tx = l.w.mint(l.w.usdc, &addr, 25_000_000).await;
    l.blocks(1).await;
    let r = l.read(&exact).await;
    assert_eq!(
        (r["status"].as_str(), r["amount_pending"].as_str()),
        (Some("pending"), Some("25.000000")),
        "{r}"
    );
    assert_eq!(l.treasury(&t).await, base, "detected credits nothing");
    l.blocks(3).await;
    let r = l.read(&exact).await;
    assert_eq!(r["status"], "paid", "{r}");
    assert_eq!(
        r["tx_hash"].as_str().unwrap().to_lowercase(),
        tx.to_lowercase()
    );
    assert_eq!(l.treasury(&t).await, base + 25_000_000);
    let deposit_id = r["deposits"][0]["deposit_id"].as_u64().unwrap();
    // Its payments events, in commit order: detected, confirmed, payment.confirmed.
    let of_exact: Vec<String> =
        l.s.app
            .engine()
            .ports()
            .store
            .outbox_after(0, 1000)
            .await
            .unwrap()
            .into_iter()
            .filter(|(_, e)| {
                e.payload["session_id"] == exact.as_str()
                    || e.payload["data"]["customer_id"] == exact.as_str()
            })
            .map(|(_, e)| e.event_type)
            .collect();
    assert_eq!(
        of_exact,
        [
            "wallet.deposit.detected",
            "wallet.deposit.confirmed",
            "payment.confirmed"
        ]
    );

    // A re-delivered report of the same deposit changes nothing.
    let again = l
        .report(
            json!({"event": "wallet.deposit.confirmed", "data": {"customer_id": exact,
            "deposit_id": deposit_id, "confirmations": 9, "status": "confirmed",
            "safe_to_credit": true}}),
        )
        .await;
    assert_eq!(
        again,
        json!({"status": "success", "message": "already_recorded"})
    );
    assert_eq!(l.treasury(&t).await, base + 25_000_000);

    // Partial, then completed by a second transfer.
    let (partial, addr) = l.open("10", 600).await;
    assert_ne!(addr.to_string(), exact, "a fresh address per session");
    l.w.mint(l.w.usdc, &addr, 4_000_000).await;
    l.blocks(4).await;
    let r = l.read(&partial).await;
    assert_eq!(
        (r["status"].as_str(), r["amount_due"].as_str()),
        (Some("pending"), Some("6.000000"))
    );
    l.w.mint(l.w.usdc, &addr, 6_000_000).await;
    l.blocks(4).await;
    assert_eq!(l.read(&partial).await["status"], "paid");

    // Over-payment: paid, the excess recorded and refundable.
    let (over, addr) = l.open("5", 600).await;
    l.w.mint(l.w.usdc, &addr, 7_500_000).await;
    l.blocks(4).await;
    let r = l.read(&over).await;
    assert_eq!(
        (
            r["status"].as_str(),
            r["excess_amount"].as_str(),
            r["refundable_amount"].as_str()
        ),
        (Some("paid"), Some("2.500000"), Some("2.500000"))
    );
    assert_eq!(l.treasury(&t).await, base + 40_000_000);

    // Expiry with nothing received, then a late payment: recorded, refundable.
    let (late, addr) = l.open("3", 2).await;
    l.clock.advance_ms(2_200);
    l.blocks(1).await;
    assert_eq!(l.read(&late).await["status"], "expired");
    l.w.mint(l.w.usdc, &addr, 3_000_000).await;
    l.blocks(4).await;
    let r = l.read(&late).await;
    assert_eq!(
        (
            r["status"].as_str(),
            r["late"].as_bool(),
            r["late_amount"].as_str()
        ),
        (Some("expired"), Some(true), Some("3.000000"))
    );
    assert_eq!(
        l.treasury(&t).await,
        base + 40_000_000,
        "late money is not revenue"
    );

    // A deposit reported confirmed but not safe to credit credits nothing.
    let (unsafe_, addr) = l.open("8", 600).await;
    let note = l
        .report(
            json!({"event": "wallet.deposit.confirmed", "data": {"customer_id": "c",
            "deposit_id": 77_001, "address": addr.to_string(), "network": "polygon",
            "currency": "USDC", "amount": "8.000000", "tx_hash": "pending_1_0x",
            "hash_pending": true, "confirmations": 1, "status": "confirmed",
            "safe_to_credit": false}}),
        )
        .await;
    assert_eq!(note["message"], "not_safe_to_credit");
    let r = l.read(&unsafe_).await;
    assert_eq!(
        (r["status"].as_str(), r["amount_received"].as_str()),
        (Some("pending"), Some("0.000000"))
    );
    assert_eq!(l.treasury(&t).await, base + 40_000_000);

    // Custody: the credited deposits are swept from the session addresses to the
    // treasury's address by sponsored user operations (no ledger change).
    let treasury =
        l.w.account(&stablecoin_core::ports::KeyPurpose::Treasury)
            .await;
    let mut swept = false;
    for _ in 0..40 {
        l.w.node.mine(1).await;
        l.s.app.state().checkout.tick().await;
        if l.w.usdc_of(&exact_addr).await == 0 {
            swept = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    assert!(swept, "the exact session's address was swept");
    assert!(l.w.usdc_of(&treasury).await >= 25_000_000);
    assert_eq!(
        l.w.node.native_balance(&exact_addr).await,
        0,
        "gas sponsored"
    );
    assert_eq!(l.treasury(&t).await, base + 40_000_000, "custody only");

    // The payments webhooks, each signed; three sessions paid.
    l.s.app.state().webhooks.round().await.unwrap();
    let received = got.lock().unwrap().clone();
    let mut paid = 0;
    for (headers, body) in &received {
        let sig = headers["x-webhook-signature"].to_str().unwrap();
        Family::Payments.verify(&secret, body, Some(sig)).unwrap();
        if headers["x-webhook-event"] == "payment.confirmed" {
            paid += 1;
        }
    }
    assert_eq!(paid, 3);
}
