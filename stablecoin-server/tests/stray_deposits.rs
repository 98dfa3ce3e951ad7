//! Sandbox addresses and stray deposits (issue #48 item 3) over real HTTP on loopback,
//! on the simulated chains: a test checkout session's and a simulated escrow's address
//! come from the sandbox key branch; a real transfer to one is recorded (never
//! credited), flagged (staff list, metric) and returned by staff on chain, under the
//! two-person rule above the single-approval cap.

use crate::common::webhook_receiver::recording_receiver;
use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::domain::money::Token;
use stablecoin_core::kernel::inbound::address_key;
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{ChainAddress, KeyPurpose, Rail, RailId};
use stablecoin_webhooks::Family;

const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";
const BUYER: &str = "+2250700000001";
const SELLER: &str = "+2250700000002";

fn config() -> stablecoin_server::Config {
    let mut c = test_config();
    c.admin.token = Some(stablecoin_server::config::Secret::new(ADMIN_TOKEN));
    // Returns above 30 tokens need a second staff identity.
    c.admin.topup_single_approval_max = "30".into();
    c
}

async fn staff(s: &Server, bearer: &str, method: Method, path: &str, body: Option<&str>) -> Resp {
    let auth = format!("Bearer {bearer}");
    s.send(method, path, None, body, &[("Authorization", &auth)])
        .await
}

async fn strays(s: &Server, query: &str) -> Value {
    let r = staff(
        s,
        ADMIN_TOKEN,
        Method::GET,
        &format!("/admin/v1/stray-deposits{query}"),
        None,
    )
    .await;
    r.expect(200);
    r.json()
}

fn session_body(amount: &str) -> String {
    json!({"amount": amount, "currency": "USDC", "reference": "order-1",
        "networks": ["polygon"], "expires_in_secs": 600})
    .to_string()
}

async fn session(s: &Server, key: &str) -> (String, ChainAddress) {
    let r = s
        .post(key, "/api/v1/checkout/sessions", &session_body("25"))
        .await;
    r.expect(201);
    let j = r.json();
    (
        j["session_id"].as_str().unwrap().to_string(),
        ChainAddress(j["payment_options"][0]["address"].as_str().unwrap().into()),
    )
}

async fn metric_line(s: &Server, status: &str) -> Option<String> {
    let r = s.metrics_with_token().await;
    r.expect(200);
    let want = format!("stablecoin_stray_deposits{{status=\"{status}\"}} ");
    r.text()
        .lines()
        .find(|l| l.starts_with(&want))
        .map(|l| l[want.len()..].to_string())
}

/// Mines and runs the checkout scanner until the transfers are past the depth.
async fn scan_checkout(s: &Server) {
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    for _ in 0..5 {
        chain.mine(1);
        let r = s.app.state().checkout.tick().await;
        assert!(r.errors.is_empty(), "{r:?}");
    }
}

/// Runs the return worker, mines and moves the server's clock past each poll pause,
/// six rounds.
async fn run_returns(s: &Server, clock: &ShiftedClock, rail: RailId) {
    let chain = s.app.sim_rail(rail).unwrap();
    for _ in 0..6 {
        let (_, errors) = s.app.engine().advance_stray_returns().await;
        assert!(errors.is_empty(), "{errors:?}");
        chain.mine(20);
        clock.advance_ms(3_000);
    }
}

#[tokio::test]
async fn a_test_session_shows_a_sandbox_address_and_a_live_one_keeps_its_own() {
    let s = start_with(config()).await;
    let t = s.tenant("Acme", "0").await;
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    let (test_id, test_addr) = session(&s, &t.business_test).await;
    let sandbox = polygon
        .address_for(&KeyPurpose::CheckoutSession(format!("test/{test_id}")))
        .await
        .unwrap();
    let live_branch = polygon
        .address_for(&KeyPurpose::CheckoutSession(test_id.clone()))
        .await
        .unwrap();
    assert_eq!(
        test_addr, sandbox,
        "a test session derives from checkout/test/<id>"
    );
    assert_ne!(test_addr, live_branch, "never the live branch's address");
    // A live session's address is where it always was: `checkout/<id>`.
    let (live_id, live_addr) = session(&s, &t.business_live).await;
    let expected = polygon
        .address_for(&KeyPurpose::CheckoutSession(live_id))
        .await
        .unwrap();
    assert_eq!(live_addr, expected);
}

#[tokio::test]
async fn a_real_deposit_to_a_test_session_is_recorded_flagged_and_returned_to_its_sender() {
    let mut c = config();
    c.webhooks_allow_loopback_http = true;
    let (s, clock) = start_shifted(c).await;
    let t = s.tenant("Acme", "0").await;
    let (hook, got) = recording_receiver().await;
    let r = s
        .post(
            &t.live,
            "/v1/webhook-endpoints",
            &json!({"family": "wallet", "url": hook, "events": ["sandbox.stray_deposit"]})
                .to_string(),
        )
        .await;
    r.expect(201);
    let secret = r.json()["secret"].as_str().unwrap().to_string();
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    let (id, addr) = session(&s, &t.business_test).await;
    assert_eq!(metric_line(&s, "held").await.as_deref(), Some("0"));
    let tx = polygon.mint(&addr, Token::Usdc, m("7")).unwrap();
    scan_checkout(&s).await;
    // Scanned again: recorded once.
    scan_checkout(&s).await;

    // Never credited to the test session.
    let read = s
        .get(&t.business_test, &format!("/api/v1/checkout/sessions/{id}"))
        .await
        .json();
    assert_eq!(read["status"], "pending", "{read}");
    assert_eq!(read["amount_received"], "0.000000", "{read}");
    assert_eq!(read["amount_pending"], "0.000000", "{read}");

    // Recorded and owed, listed for staff, counted by the metric.
    let list = strays(&s, "").await;
    assert_eq!(list["total"], 1, "{list}");
    let sd = &list["stray_deposits"][0];
    assert_eq!(sd["status"], "held");
    assert_eq!(sd["origin"], "checkout_test_session");
    assert_eq!(sd["origin_id"], id.as_str());
    assert_eq!(sd["tenant_id"], t.id.to_string().as_str());
    assert_eq!(sd["network"], "polygon");
    assert_eq!(sd["address"], addr.0.as_str());
    assert_eq!(sd["amount"], "7.000000");
    assert_eq!(sd["owed"], "7.000000", "the ledger owes it back");
    assert_eq!(sd["tx_hash"], tx.as_str());
    assert_eq!(sd["from"], polygon.faucet_address().0.as_str());
    assert!(sd.get("return").is_none());
    assert_eq!(metric_line(&s, "held").await.as_deref(), Some("1"));
    let sd_id = sd["id"].as_str().unwrap().to_string();

    // The staff console says so on its first page.
    let mut console = crate::common::console::Console::new(&s.base);
    let csrf = console.csrf("/console/login").await;
    let r = console
        .post(
            "/console/login",
            &[("csrf", &csrf), ("staff_secret", ADMIN_TOKEN)],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    let page = console.get("/console").await;
    assert!(page.body.contains("1 stray deposit(s)"), "{}", page.body);

    // The tenant is told, once, signed (wallet family).
    s.app.state().webhooks.round().await.unwrap();
    let received = got.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "one event");
    let (headers, body) = &received[0];
    let sig = headers["x-svc-signature"].to_str().unwrap();
    assert_eq!(Family::Wallet.verify(&secret, body, Some(sig)), Ok(()));
    let e: Value = serde_json::from_slice(body).unwrap();
    let mut fields: Vec<&str> = e.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "address",
            "amount",
            "detected_at",
            "event",
            "from",
            "network",
            "origin",
            "origin_id",
            "status",
            "stray_deposit_id",
            "timestamp",
            "token",
            "tx_hash"
        ]
    );
    assert_eq!(e["event"], "sandbox.stray_deposit");
    assert_eq!(e["stray_deposit_id"], sd_id.as_str());
    assert_eq!(e["origin_id"], id.as_str());
    assert_eq!(e["amount"], "7.000000");
    assert_eq!(e["status"], "held");

    // Bad input is a clear 400 that changes nothing.
    let path = format!("/admin/v1/stray-deposits/{sd_id}/return");
    let r = staff(
        &s,
        ADMIN_TOKEN,
        Method::POST,
        &path,
        Some(r#"{"reason":" "}"#),
    )
    .await;
    r.expect_err(400, "INVALID_PARAMETER");
    assert_eq!(r.param().as_deref(), Some("reason"));
    let r = staff(
        &s,
        ADMIN_TOKEN,
        Method::POST,
        &path,
        Some(r#"{"reason":"mistake","to":"T-not-an-address"}"#),
    )
    .await;
    r.expect_err(400, "INVALID_PARAMETER");
    assert_eq!(r.param().as_deref(), Some("to"));
    staff(
        &s,
        ADMIN_TOKEN,
        Method::POST,
        "/admin/v1/stray-deposits/sd_0000000000000000/return",
        Some(r#"{"reason":"mistake"}"#),
    )
    .await
    .expect_err(404, "NOT_FOUND");
    staff(
        &s,
        "wrong-token",
        Method::GET,
        "/admin/v1/stray-deposits",
        None,
    )
    .await
    .expect_err(401, "ADMIN_TOKEN_REQUIRED");
    assert_eq!(strays(&s, "?status=held").await["total"], 1);

    // Staff return it (below the cap: one identity), to the sender by default.
    let r = staff(
        &s,
        ADMIN_TOKEN,
        Method::POST,
        &path,
        Some(r#"{"reason":"payer used the sandbox page by mistake"}"#),
    )
    .await;
    r.expect(200);
    let v = r.json();
    assert_eq!(v["status"], "returning", "{v}");
    assert_eq!(v["return"]["to"], polygon.faucet_address().0.as_str());
    assert_eq!(v["return"]["approved_by"], "admin-token");
    let faucet_before = polygon
        .balance(&polygon.faucet_address(), Token::Usdc)
        .await
        .unwrap();
    run_returns(&s, &clock, RailId::Evm(137)).await;
    let v = strays(&s, "?status=returned").await;
    assert_eq!(v["total"], 1, "{v}");
    let sd = &v["stray_deposits"][0];
    assert_eq!(sd["owed"], "0.000000", "the liability closed");
    assert_eq!(sd["return"]["attempts"], 1);
    assert!(sd["return"]["tx_hash"].is_string());
    assert_eq!(
        polygon.balance(&addr, Token::Usdc).await.unwrap(),
        m("0"),
        "left the sandbox address"
    );
    assert_eq!(
        polygon
            .balance(&polygon.faucet_address(), Token::Usdc)
            .await
            .unwrap()
            .get()
            - faucet_before.get(),
        7_000_000,
        "back with the sender, whole (the rail sponsors the fee)"
    );
    assert_eq!(metric_line(&s, "held").await.as_deref(), Some("0"));
    assert!(
        !console
            .get("/console")
            .await
            .body
            .contains("stray deposit(s)")
    );
    // Audited under who decided it.
    let audit = staff(&s, ADMIN_TOKEN, Method::GET, "/admin/v1/audit", None)
        .await
        .json();
    let e = &audit["entries"][0];
    assert_eq!(
        (
            e["action"].as_str(),
            e["target"].as_str(),
            e["staff_id"].as_str()
        ),
        (
            Some("stray.return"),
            Some(sd_id.as_str()),
            Some("admin-token")
        )
    );
    // A repeat sends nothing more; another destination is refused.
    let submits = polygon.submit_count();
    staff(
        &s,
        ADMIN_TOKEN,
        Method::POST,
        &path,
        Some(r#"{"reason":"again"}"#),
    )
    .await
    .expect(200);
    run_returns(&s, &clock, RailId::Evm(137)).await;
    assert_eq!(polygon.submit_count(), submits);
    staff(
        &s,
        ADMIN_TOKEN,
        Method::POST,
        &path,
        Some(&json!({"reason": "elsewhere", "to": format!("0x{}", "ab".repeat(20))}).to_string()),
    )
    .await
    .expect_err(409, "INVALID_STATE");
}

#[tokio::test]
async fn a_return_above_the_cap_needs_a_second_staff_identity() {
    let (s, clock) = start_shifted(config()).await;
    let t = s.tenant("Acme", "0").await;
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    let (_, addr) = session(&s, &t.business_test).await;
    polygon.mint(&addr, Token::Usdc, m("40")).unwrap();
    scan_checkout(&s).await;
    let sd_id = strays(&s, "").await["stray_deposits"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/admin/v1/stray-deposits/{sd_id}/return");
    let to = format!("0x{}", "cd".repeat(20));
    let body = json!({"reason": "refund to the payer's own wallet", "to": to}).to_string();
    let r = staff(&s, ADMIN_TOKEN, Method::POST, &path, Some(&body)).await;
    r.expect(200);
    assert_eq!(r.json()["status"], "proposed", "{}", r.text());
    assert_eq!(r.json()["return"]["proposed_by"], "admin-token");
    // Nothing is sent while proposed.
    let submits = polygon.submit_count();
    run_returns(&s, &clock, RailId::Evm(137)).await;
    assert_eq!(polygon.submit_count(), submits);
    // The proposer cannot approve; a second identity must repeat the destination.
    staff(&s, ADMIN_TOKEN, Method::POST, &path, Some(&body))
        .await
        .expect_err(409, "SECOND_APPROVER_REQUIRED");
    let ada = s.app.engine().create_staff("Ada").await.unwrap();
    let other = json!({"reason": "ok", "to": format!("0x{}", "ef".repeat(20))}).to_string();
    staff(&s, &ada.secret, Method::POST, &path, Some(&other))
        .await
        .expect_err(409, "APPROVAL_MISMATCH");
    let r = staff(&s, &ada.secret, Method::POST, &path, Some(&body)).await;
    r.expect(200);
    assert_eq!(r.json()["status"], "returning");
    assert_eq!(r.json()["return"]["approved_by"], ada.account.id.as_str());
    run_returns(&s, &clock, RailId::Evm(137)).await;
    let v = strays(&s, "").await;
    assert_eq!(v["stray_deposits"][0]["status"], "returned", "{v}");
    assert_eq!(
        polygon
            .balance(&ChainAddress(to), Token::Usdc)
            .await
            .unwrap(),
        m("40")
    );
}

#[tokio::test]
async fn a_real_deposit_to_a_simulated_escrow_is_recorded_as_a_stray_deposit() {
    // On SQLite: the stray records, their status index and the ledger of a real store.
    let mut c = config();
    let dir = temp_dir("stray-escrow");
    c.data_dir = dir.clone();
    c.storage = stablecoin_server::config::StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    let (s, clock) = start_shifted(c).await;
    let t = s.tenant("Acme", "0").await;
    s.provision(&t.live, BUYER).await;
    s.provision(&t.live, SELLER).await;
    let body = json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
        "amount": "25", "reference": "sb-1"})
    .to_string();
    let r = s.post(&t.test, "/v1/escrows", &body).await;
    r.expect(201);
    let v = r.json();
    assert_eq!(v["simulated"], true);
    let esc = v["id"].as_str().unwrap().to_string();
    let addr = ChainAddress(v["escrow_address"].as_str().unwrap().into());
    let tron = s.app.sim_rail(RailId::Tron).unwrap();
    assert_eq!(
        addr,
        tron.address_for(&KeyPurpose::EscrowDeal(format!("sandbox/{esc}")))
            .await
            .unwrap(),
        "the sandbox branch"
    );
    // Reserved for the scanner: the address belongs to a sandbox record.
    let owner = s
        .app
        .engine()
        .ports()
        .store
        .get_by_unique(&address_key("tron", &addr.0))
        .await
        .unwrap()
        .expect("reserved");
    assert_eq!(owner.kind, "sandbox_address");

    tron.mint(&addr, Token::Usdt, m("3")).unwrap();
    s.settle_escrows().await;
    s.settle_escrows().await;
    let list = strays(&s, "").await;
    assert_eq!(list["total"], 1, "{list}");
    let sd = &list["stray_deposits"][0];
    assert_eq!(sd["origin"], "escrow_simulation");
    assert_eq!(sd["origin_id"], esc.as_str());
    assert_eq!(sd["network"], "tron");
    assert_eq!(sd["token"], "USDT");
    assert_eq!(sd["amount"], "3.000000");
    assert_eq!(sd["owed"], "3.000000");
    // Still no deal under that id.
    s.get(&t.test, &format!("/v1/escrows/{esc}"))
        .await
        .expect_err(404, "NOT_FOUND");
    // Returned by staff, signed by the sandbox address's key.
    let r = staff(
        &s,
        ADMIN_TOKEN,
        Method::POST,
        &format!(
            "/admin/v1/stray-deposits/{}/return",
            sd["id"].as_str().unwrap()
        ),
        Some(r#"{"reason":"sent to a sandbox escrow by mistake"}"#),
    )
    .await;
    r.expect(200);
    run_returns(&s, &clock, RailId::Tron).await;
    let v = strays(&s, "?status=returned").await;
    assert_eq!(v["total"], 1, "{v}");
    assert_eq!(tron.balance(&addr, Token::Usdt).await.unwrap(), m("0"));
}
