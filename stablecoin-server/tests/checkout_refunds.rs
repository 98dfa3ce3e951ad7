//! Refunds of checkout sessions over real HTTP on loopback, on the simulated chain
//! (issue #50 item 1): an over-paid session refunded to an address, partially and then
//! the rest, each landing on chain from the treasury, with the ledger and the
//! `refund.*` events; a refund above what is refundable refused with nothing moved; a
//! claim link claimed once through its form; an expired claim returning the money.

use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{ChainAddress, Rail, RailId};
use std::sync::Arc;

/// The payer's own address on the simulated Polygon (nobody's in the service).
pub const PAYER: &str = "0x00000000000000000000000000000000000000a1";

pub struct Shop {
    pub s: Server,
    pub t: Tenant,
    /// The server's clock: moved by each round of work past the poll pause of a sent
    /// payment (and past a claim link's expiry), instead of sleeping.
    pub clock: Arc<ShiftedClock>,
}

impl Shop {
    pub async fn open() -> Shop {
        Shop::with(test_config()).await
    }

    pub async fn with(config: stablecoin_server::config::Config) -> Shop {
        let (s, clock) = start_shifted(config).await;
        let t = s.tenant("Acme", "0").await;
        Shop { s, t, clock }
    }

    fn chain(&self) -> &Arc<stablecoin_rails::sim::SimRail> {
        self.s.app.sim_rail(RailId::Evm(137)).unwrap()
    }

    /// A live 25 USDC session on polygon paid `paid` on chain, confirmed and swept.
    pub async fn paid_session(&self, paid: &str) -> (String, String) {
        let r = self
            .s
            .post(
                &self.t.business_live,
                "/api/v1/checkout/sessions",
                &json!({"amount": "25", "currency": "USDC", "networks": ["polygon"],
                    "reference": "order-9"})
                .to_string(),
            )
            .await;
        r.expect(201);
        let j = r.json();
        let id = j["session_id"].as_str().unwrap().to_string();
        let address = j["payment_options"][0]["address"]
            .as_str()
            .unwrap()
            .to_string();
        self.chain()
            .mint(&ChainAddress(address.clone()), Token::Usdc, m(paid))
            .unwrap();
        self.work(8).await;
        let read = self.session(&id).await;
        assert_eq!(read["status"], "paid", "{read}");
        (id, address)
    }

    /// Mines, moves the clock past the poll pause and ticks the checkout, `rounds` times.
    pub async fn work(&self, rounds: usize) {
        for _ in 0..rounds {
            self.chain().mine(1);
            self.clock
                .advance_ms(stablecoin_core::kernel::attempts::POLL_MS + 1);
            let r = self.s.app.state().checkout.tick().await;
            assert!(r.errors.is_empty(), "{r:?}");
        }
    }

    pub async fn session(&self, id: &str) -> Value {
        let r = self
            .s
            .get(
                &self.t.business_live,
                &format!("/api/v1/checkout/sessions/{id}"),
            )
            .await;
        r.expect(200);
        r.json()
    }

    pub async fn refunds(&self, id: &str) -> Value {
        let r = self
            .s
            .get(
                &self.t.business_live,
                &format!("/api/v1/checkout/sessions/{id}/refunds"),
            )
            .await;
        r.expect(200);
        r.json()
    }

    pub async fn refund(&self, id: &str, body: Value, key: &str) -> Resp {
        self.s
            .post_idem(
                &self.t.business_live,
                &format!("/api/v1/checkout/sessions/{id}/refunds"),
                &body.to_string(),
                key,
            )
            .await
    }

    pub async fn read_refund(&self, rf: &str) -> Value {
        let r = self
            .s
            .get(
                &self.t.business_live,
                &format!("/api/v1/checkout/refunds/{rf}"),
            )
            .await;
        r.expect(200);
        r.json()
    }

    /// Works until refund `rf` is final, at most 20 rounds.
    pub async fn until_final(&self, rf: &str) -> Value {
        for _ in 0..20 {
            let v = self.read_refund(rf).await;
            if ["completed", "failed", "expired"].contains(&v["status"].as_str().unwrap()) {
                return v;
            }
            self.work(1).await;
        }
        panic!("refund {rf} never finished: {}", self.read_refund(rf).await);
    }

    pub async fn on_chain(&self, address: &str) -> Micros {
        self.chain()
            .balance(&ChainAddress(address.into()), Token::Usdc)
            .await
            .unwrap()
    }

    pub async fn ledger(&self, account: &str) -> i128 {
        match self.s.app.engine().ports().ledger.balance(account).await {
            Ok(b) => b.posted(),
            Err(_) => 0,
        }
    }

    pub fn refundable_account(&self) -> String {
        format!("checkout_refundable:{}:biz_default:USDC", self.t.id)
    }

    pub async fn events(&self, prefix: &str) -> Vec<Value> {
        self.s
            .app
            .engine()
            .ports()
            .store
            .outbox_after(0, 1000)
            .await
            .unwrap()
            .into_iter()
            .filter(|(_, e)| e.event_type.starts_with(prefix))
            .map(|(_, e)| e.payload)
            .collect()
    }
}

#[tokio::test]
async fn an_overpaid_session_is_refunded_to_an_address_partially_then_the_rest() {
    let shop = Shop::open().await;
    let (id, _) = shop.paid_session("30").await;
    let list = shop.refunds(&id).await;
    assert_eq!(list["refunds"], json!([]));
    assert_eq!(
        list["refundable"],
        json!([{"token": "USDC", "amount": "30.000000",
            "from_refundable": "5.000000", "from_settled": "25.000000"}])
    );
    let treasury = shop.s.treasury(&shop.t).await;
    assert_eq!(treasury, m("25"));
    assert_eq!(shop.ledger(&shop.refundable_account()).await, 5_000_000);

    // A part of the excess, to the payer's address.
    let body = json!({"amount": "3", "token": "USDC", "network": "polygon",
        "address": PAYER, "reason": "one coffee was cold"});
    let r = shop.refund(&id, body.clone(), "rf-1").await;
    r.expect(201);
    let first = r.json();
    let rf1 = first["refund_id"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location").as_deref(),
        Some(format!("/api/v1/checkout/refunds/{rf1}").as_str())
    );
    assert_eq!(first["status"], "pending");
    assert_eq!(first["from_refundable"], "3.000000");
    assert_eq!(first["from_settled"], "0.000000");
    assert!(first.get("claim_url").is_none());
    // The same key and body answer the same refund; nothing more is reserved.
    let again = shop.refund(&id, body, "rf-1").await;
    again.expect(201);
    assert_eq!(again.json()["refund_id"], rf1.as_str());
    assert_eq!(
        shop.refunds(&id).await["refunds"].as_array().unwrap().len(),
        1
    );
    assert_eq!(shop.ledger(&shop.refundable_account()).await, 2_000_000);

    let done = shop.until_final(&rf1).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["tx_hash"].as_str().is_some_and(|h| !h.is_empty()));
    assert_eq!(shop.on_chain(PAYER).await, m("3"));
    assert_eq!(shop.s.treasury(&shop.t).await, m("25"), "excess first");
    assert_eq!(
        shop.refunds(&id).await["refundable"],
        json!([{"token": "USDC", "amount": "27.000000",
            "from_refundable": "2.000000", "from_settled": "25.000000"}])
    );

    // The rest: the remaining excess, then the business's settled funds.
    let r = shop
        .refund(&id, json!({"network": "polygon", "address": PAYER}), "rf-2")
        .await;
    r.expect(201);
    let second = r.json();
    let rf2 = second["refund_id"].as_str().unwrap().to_string();
    assert_eq!(
        (
            second["amount"].as_str(),
            second["from_refundable"].as_str(),
            second["from_settled"].as_str()
        ),
        (Some("27.000000"), Some("2.000000"), Some("25.000000"))
    );
    assert_eq!(shop.s.treasury(&shop.t).await, Micros::ZERO);
    let done = shop.until_final(&rf2).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(shop.on_chain(PAYER).await, m("30"), "all it received, back");
    assert_eq!(shop.ledger(&shop.refundable_account()).await, 0);
    let list = shop.refunds(&id).await;
    assert_eq!(list["refundable"], json!([]));
    assert_eq!(list["refunds"].as_array().unwrap().len(), 2);
    // Nothing is left: one micro-unit more is refused.
    shop.refund(
        &id,
        json!({"amount": "0.000001", "network": "polygon", "address": PAYER}),
        "rf-3",
    )
    .await
    .expect_err(422, "REFUND_EXCEEDS_REFUNDABLE");

    let names: Vec<String> = shop
        .events("refund.")
        .await
        .iter()
        .filter(|e| e["refund_id"] == rf1.as_str())
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        ["refund.created", "refund.submitted", "refund.completed"]
    );
    let completed = shop
        .events("refund.completed")
        .await
        .into_iter()
        .find(|e| e["refund_id"] == rf2.as_str())
        .unwrap();
    assert_eq!(completed["address"], PAYER);
    assert_eq!(completed["amount"], "27.000000");
    assert_eq!(completed["session_id"], id.as_str());
    // The business's checkout-funds statement shows the refunds as refund operations,
    // and balances to the ledger.
    let st = shop
        .s
        .get(
            &shop.t.live,
            "/v1/statements?account=checkout_funds&business=biz_default&token=USDC",
        )
        .await;
    st.expect(200);
    let st = st.json();
    let refunds: Vec<&Value> = st["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["operation_type"] == "refund")
        .collect();
    assert_eq!(refunds.len(), 2, "{st}");
    assert_eq!(refunds[0]["operation"], rf1.as_str());
    assert_eq!(
        refunds[0]["counterparty"],
        format!("checkout_refund:{rf1}").as_str()
    );
    assert_eq!(st["closing_balance"], "0.000000");
    // Each payload is one the webhooks' strict sender parses.
    for e in shop.events("refund.").await {
        stablecoin_webhooks::payments::PaymentsPayload::from_value(&e).unwrap();
    }
}

#[tokio::test]
async fn a_refund_larger_than_refundable_is_refused_and_moves_nothing() {
    let shop = Shop::open().await;
    let (id, session_address) = shop.paid_session("27").await;
    let treasury = shop.s.treasury(&shop.t).await;
    let owed = shop.ledger(&shop.refundable_account()).await;
    let commits = shop.s.commits();
    let r = shop
        .refund(
            &id,
            json!({"amount": "27.000001", "network": "polygon", "address": PAYER}),
            "too-much",
        )
        .await;
    r.expect_err(422, "REFUND_EXCEEDS_REFUNDABLE");
    assert_eq!(r.param().as_deref(), Some("amount"));
    for (body, status, code, param) in [
        (
            json!({"amount": "1", "network": "polygon", "address": "0x12"}),
            400,
            "INVALID_PARAMETER",
            Some("address"),
        ),
        (
            json!({"amount": "1", "network": "polygon", "address": "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7"}),
            400,
            "INVALID_PARAMETER",
            Some("address"),
        ),
        (
            json!({"amount": "1", "network": "polygon", "address": session_address}),
            400,
            "INVALID_PARAMETER",
            Some("address"),
        ),
        (
            json!({"amount": "1", "address": PAYER}),
            400,
            "MISSING_PARAMETER",
            Some("network"),
        ),
        (
            json!({"amount": "1", "network": "atlantis", "address": PAYER}),
            400,
            "UNSUPPORTED_NETWORK",
            Some("networks"),
        ),
        (
            json!({"amount": "-1", "network": "polygon", "address": PAYER}),
            400,
            "INVALID_AMOUNT",
            Some("amount"),
        ),
        (
            json!({"amount": "1", "token": "DAI", "network": "polygon", "address": PAYER}),
            400,
            "UNKNOWN_TOKEN",
            Some("currency"),
        ),
    ] {
        let r = shop.refund(&id, body.clone(), &format!("bad-{body}")).await;
        r.expect_err(status, code);
        assert_eq!(r.param().as_deref(), param, "{body}");
    }
    assert_eq!(shop.s.commits(), commits, "a refused refund writes nothing");
    assert_eq!(shop.s.treasury(&shop.t).await, treasury);
    assert_eq!(shop.ledger(&shop.refundable_account()).await, owed);
    assert_eq!(shop.on_chain(PAYER).await, Micros::ZERO);
    let list = shop.refunds(&id).await;
    assert_eq!(list["refunds"], json!([]));
    assert_eq!(list["refundable"][0]["amount"], "27.000000");
    // Another business's key, or a test key, does not see the session.
    let r = shop
        .s
        .post(
            &shop.t.business_test,
            &format!("/api/v1/checkout/sessions/{id}/refunds"),
            &json!({"network": "polygon", "address": PAYER}).to_string(),
        )
        .await;
    r.expect_err(404, "NOT_FOUND");
    shop.s
        .get(
            &shop.t.business_test,
            "/api/v1/checkout/refunds/rf_01JD0000000000000000000000",
        )
        .await
        .expect_err(404, "NOT_FOUND");
}

#[tokio::test]
async fn a_claim_link_is_claimed_once_and_an_expired_one_returns_the_money() {
    let mut config = test_config();
    config.checkout.refund_claim_secs = 600;
    let shop = Shop::with(config).await;
    let (id, _) = shop.paid_session("30").await;

    // Claim link: no address. Claimed once through the page's form.
    let r = shop
        .refund(
            &id,
            json!({"amount": "4", "reason": "late delivery"}),
            "claim-1",
        )
        .await;
    r.expect(201);
    let v = r.json();
    let rf = v["refund_id"].as_str().unwrap().to_string();
    assert_eq!(v["status"], "awaiting_claim");
    assert_eq!(v["claim_url"], format!("/pay/refunds/{rf}"));
    assert!(v["claim_expires_at"].is_string());
    let page = shop
        .s
        .send(
            reqwest::Method::GET,
            &format!("/pay/refunds/{rf}"),
            None,
            None,
            &[],
        )
        .await;
    page.expect(200);
    assert!(page.text().contains("late delivery"));
    assert!(page.text().contains("4.000000 USDC"));
    let post_form = |rf: &str, body: &str| {
        let (s, rf, body) = (&shop.s, rf.to_string(), body.to_string());
        async move {
            s.client
                .post(format!("{}/pay/refunds/{rf}", s.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .unwrap()
        }
    };
    let form = |body: &str| post_form(&rf, body);
    let bad = form("network=polygon&address=nope").await;
    assert_eq!(bad.status().as_u16(), 400);
    assert!(bad.text().await.unwrap().contains("cannot receive"));
    let wrong_net = form(&format!("network=tron&address={PAYER}")).await;
    assert_eq!(wrong_net.status().as_u16(), 400);
    let ok = shop
        .s
        .client
        .post(format!("{}/pay/refunds/{rf}", shop.s.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("network=polygon&address={PAYER}"))
        .send()
        .await
        .unwrap();
    assert!(
        ok.status().is_success(),
        "followed to the page: {}",
        ok.status()
    );
    let again = form("network=polygon&address=0x00000000000000000000000000000000000000b2").await;
    assert_eq!(again.status().as_u16(), 409, "claimed once");
    let done = shop.until_final(&rf).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["address"], PAYER);
    assert_eq!(shop.on_chain(PAYER).await, m("4"));

    // An unclaimed link expires and its money goes back where it came from.
    let before_owed = shop.ledger(&shop.refundable_account()).await;
    let before_treasury = shop.s.treasury(&shop.t).await;
    let r = shop.refund(&id, json!({}), "claim-2").await;
    r.expect(201);
    let v = r.json();
    let rf2 = v["refund_id"].as_str().unwrap().to_string();
    assert_eq!(
        (
            v["amount"].as_str(),
            v["from_refundable"].as_str(),
            v["from_settled"].as_str()
        ),
        (Some("26.000000"), Some("1.000000"), Some("25.000000"))
    );
    assert_eq!(shop.ledger(&shop.refundable_account()).await, 0);
    assert_eq!(shop.s.treasury(&shop.t).await, Micros::ZERO);
    assert_eq!(shop.refunds(&id).await["refundable"], json!([]));
    shop.work(2).await;
    assert_eq!(shop.read_refund(&rf2).await["status"], "awaiting_claim");
    shop.clock.advance_ms(601_000);
    shop.work(1).await;
    let v = shop.read_refund(&rf2).await;
    assert_eq!(v["status"], "expired", "{v}");
    assert_eq!(shop.ledger(&shop.refundable_account()).await, before_owed);
    assert_eq!(shop.s.treasury(&shop.t).await, before_treasury);
    assert_eq!(
        shop.refunds(&id).await["refundable"][0]["amount"],
        "26.000000",
        "refundable again"
    );
    let late = post_form(&rf2, &format!("network=polygon&address={PAYER}")).await;
    assert_eq!(late.status().as_u16(), 409);
    let page = shop
        .s
        .send(
            reqwest::Method::GET,
            &format!("/pay/refunds/{rf2}"),
            None,
            None,
            &[],
        )
        .await;
    assert!(page.text().contains("expired"));
    let names: Vec<String> = shop
        .events("refund.")
        .await
        .iter()
        .filter(|e| e["refund_id"] == rf2.as_str())
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["refund.created", "refund.expired"]);
    assert_eq!(shop.on_chain(PAYER).await, m("4"), "nothing more was sent");
}

/// A live 25 USDC session of `shop`'s business key expiring in 60 s: its id and
/// address.
async fn open_60s(shop: &Shop) -> (String, ChainAddress) {
    let r = shop
        .s
        .post(
            &shop.t.business_live,
            "/api/v1/checkout/sessions",
            &json!({"amount": "25", "currency": "USDC", "networks": ["polygon"],
                "expires_in_secs": 60})
            .to_string(),
        )
        .await;
    r.expect(201);
    let j = r.json();
    (
        j["session_id"].as_str().unwrap().to_string(),
        ChainAddress(j["payment_options"][0]["address"].as_str().unwrap().into()),
    )
}

/// A payer who pays from their own wallet (funded by the faucet first).
const OWN_WALLET: &str = "0x00000000000000000000000000000000000000c3";

#[tokio::test]
async fn an_opted_in_business_refunds_a_late_payment_automatically_to_the_sender() {
    let mut shop = Shop::open().await;
    let r = shop
        .s
        .post(
            &shop.t.live,
            "/v1/businesses",
            &json!({"name": "Cafe"}).to_string(),
        )
        .await;
    r.expect(201);
    let j = r.json();
    let biz = j["business"]["id"].as_str().unwrap().to_string();
    assert_eq!(j["business"]["auto_refunds"], false, "off by default");
    shop.t.business_live = j["live_key"].as_str().unwrap().to_string();
    let wallet = ChainAddress(OWN_WALLET.into());
    shop.chain().mint(&wallet, Token::Usdc, m("100")).unwrap();
    shop.work(1).await;

    // Not opted in: an over-payment stays refundable, nothing is sent.
    let (a, addr) = open_60s(&shop).await;
    shop.chain()
        .external_transfer(&wallet, &addr, Token::Usdc, m("26"))
        .unwrap();
    shop.work(8).await;
    let list = shop.refunds(&a).await;
    assert_eq!(list["refunds"], json!([]));
    assert_eq!(list["refundable"][0]["from_refundable"], "1.000000");

    // Opted in: a late payment goes back to the wallet that sent it.
    let r = shop
        .s
        .post(
            &shop.t.live,
            &format!("/v1/businesses/{biz}/auto-refunds"),
            &json!({"enabled": true}).to_string(),
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["auto_refunds"], true);
    shop.s
        .post(
            &shop.t.live,
            "/v1/businesses/biz_01JD0000000000000000000000/auto-refunds",
            &json!({"enabled": true}).to_string(),
        )
        .await
        .expect_err(404, "NOT_FOUND");
    let (b, addr) = open_60s(&shop).await;
    shop.chain()
        .external_transfer(&wallet, &addr, Token::Usdc, m("25"))
        .unwrap();
    shop.work(8).await;
    assert_eq!(shop.session(&b).await["status"], "paid");
    assert_eq!(
        shop.refunds(&b).await["refunds"],
        json!([]),
        "exact: nothing"
    );
    shop.clock.advance_ms(120_000);
    shop.chain()
        .external_transfer(&wallet, &addr, Token::Usdc, m("7"))
        .unwrap();
    shop.work(8).await;
    let read = shop.session(&b).await;
    assert_eq!(read["late_amount"], "7.000000", "{read}");
    let list = shop.refunds(&b).await;
    let rf = list["refunds"][0].clone();
    assert_eq!(rf["amount"], "7.000000", "{list}");
    assert_eq!(rf["address"], OWN_WALLET);
    assert_eq!(rf["from_refundable"], "7.000000");
    assert_eq!(rf["reason"], "automatic refund of a late payment");
    let done = shop.until_final(rf["refund_id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed");
    // 100 - 26 - 25 - 7 + 7: the late payment came back; the first over-payment did not.
    assert_eq!(shop.on_chain(OWN_WALLET).await, m("49"));
    assert_eq!(list["refunds"].as_array().unwrap().len(), 1);
    assert_eq!(
        shop.refunds(&b).await["refunds"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_refund_the_chain_keeps_refusing_fails_with_its_reason_and_the_money_goes_back() {
    let shop = Shop::open().await;
    let (id, _) = shop.paid_session("30").await;
    let owed = shop.ledger(&shop.refundable_account()).await;
    let r = shop
        .refund(
            &id,
            json!({"amount": "4", "network": "polygon", "address": PAYER}),
            "doomed",
        )
        .await;
    r.expect(201);
    let rf = r.json()["refund_id"].as_str().unwrap().to_string();
    assert_eq!(
        shop.ledger(&shop.refundable_account()).await,
        owed - 4_000_000
    );
    for _ in 0..5 {
        shop.chain().inject(stablecoin_rails::sim::Fault::Reject);
    }
    let mut v = Value::Null;
    for _ in 0..12 {
        // Past the pause before the next attempt.
        shop.clock
            .advance_ms(stablecoin_core::kernel::attempts::RETRY_MS);
        shop.work(1).await;
        v = shop.read_refund(&rf).await;
        if v["status"] == "failed" {
            break;
        }
    }
    assert_eq!(v["status"], "failed", "{v}");
    let reason = v["failure_reason"].as_str().unwrap();
    assert!(reason.starts_with("5 attempts failed"), "{reason}");
    assert_eq!(shop.on_chain(PAYER).await, Micros::ZERO, "nothing sent");
    assert_eq!(shop.ledger(&shop.refundable_account()).await, owed, "back");
    assert_eq!(
        shop.refunds(&id).await["refundable"][0]["amount"],
        "30.000000"
    );
    let failed = shop
        .events("refund.failed")
        .await
        .into_iter()
        .find(|e| e["refund_id"] == rf.as_str())
        .unwrap();
    assert_eq!(failed["failure_reason"], reason);
}

#[tokio::test]
async fn a_test_key_refund_moves_nothing_and_completes_simulated() {
    let shop = Shop::open().await;
    let key = shop.t.business_test.clone();
    let r = shop
        .s
        .post(
            &key,
            "/api/v1/checkout/sessions",
            &json!({"amount": "25", "currency": "USDC", "networks": ["polygon"]}).to_string(),
        )
        .await;
    r.expect(201);
    let id = r.json()["session_id"].as_str().unwrap().to_string();
    shop.s
        .post(
            &key,
            &format!("/api/v1/checkout/sessions/{id}/simulate-payment"),
            &json!({"amount": "26", "confirmed": true}).to_string(),
        )
        .await
        .expect(200);
    let r = shop
        .s
        .post(
            &key,
            &format!("/api/v1/checkout/sessions/{id}/refunds"),
            &json!({"network": "polygon", "address": PAYER}).to_string(),
        )
        .await;
    r.expect(201);
    let v = r.json();
    assert_eq!(v["amount"], "26.000000");
    let rf = v["refund_id"].as_str().unwrap().to_string();
    shop.work(1).await;
    let done = shop
        .s
        .get(&key, &format!("/api/v1/checkout/refunds/{rf}"))
        .await
        .json();
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["tx_hash"].as_str().unwrap().starts_with("sim_"));
    assert_eq!(shop.on_chain(PAYER).await, Micros::ZERO, "nothing on chain");
    // The live key does not see the test refund.
    shop.s
        .get(
            &shop.t.business_live,
            &format!("/api/v1/checkout/refunds/{rf}"),
        )
        .await
        .expect_err(404, "NOT_FOUND");
}
